package flusstest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// SASLUser is a user that the SASL/PLAIN listener of a cluster accepts.
// Name may hold [A-Za-z0-9_-], Password [A-Za-z0-9_.@%+-]: the script
// writes them into a JAAS line of server.yaml and its state file unquoted.
type SASLUser struct {
	Name     string
	Password string
}

// SASLUsers makes a started cluster open a second listener, named SASL, on
// the coordinator and every tablet server: security protocol sasl, mechanism
// PLAIN, accepting exactly users (at least one). [Cluster.SASLBootstrap]
// returns the coordinator's SASL address; a client bootstrapped there learns
// the tablet servers' SASL addresses from metadata. The plaintext listener
// ([Cluster.Bootstrap]) stays and carries the servers' internal traffic.
func SASLUsers(users ...SASLUser) Option {
	return func(o *options) {
		o.sasl = true
		o.saslUsers = append([]SASLUser(nil), users...)
	}
}

// SASLBootstrap returns the coordinator's SASL/PLAIN address,
// "127.0.0.1:PORT", or "" when the cluster was started without [SASLUsers].
func (c *Cluster) SASLBootstrap() string { return c.saslBootstrap }

var (
	saslNameRE     = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	saslPasswordRE = regexp.MustCompile(`^[A-Za-z0-9_.@%+-]+$`)
)

// saslArg renders users as the script's --sasl value,
// "NAME:PASSWORD[,NAME:PASSWORD]...".
func saslArg(users []SASLUser) (string, error) {
	if len(users) == 0 {
		return "", errors.New("SASLUsers needs at least one user")
	}
	parts := make([]string, 0, len(users))
	seen := make(map[string]bool, len(users))
	for _, u := range users {
		if !saslNameRE.MatchString(u.Name) {
			return "", fmt.Errorf("sasl user name %q: want [A-Za-z0-9_-]+", u.Name)
		}
		if !saslPasswordRE.MatchString(u.Password) {
			return "", fmt.Errorf("password of sasl user %q: want [A-Za-z0-9_.@%%+-]+", u.Name)
		}
		if seen[u.Name] {
			return "", fmt.Errorf("sasl user %q given twice", u.Name)
		}
		seen[u.Name] = true
		parts = append(parts, u.Name+":"+u.Password)
	}
	return strings.Join(parts, ","), nil
}
