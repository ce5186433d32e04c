package kafkaproto_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// oddSASLNames are user names an operator (or an attacker with an account)
// may try, and whether configuration accepts them.
var oddSASLNames = []struct {
	name string
	ok   bool
}{
	{"alice", true},
	{"User:alice", false}, // would read as alice's principal
	{"User:x", false},
	{"a:b", false},
	{"", false},
	{"ANONYMOUS", false}, // the principal of connections without SASL
	{"anonymous", false},
	{"*", false}, // the ACL wildcard
	{"a,b", true},
	{"a=b", true},
	{"ünï", true},
	{"日本", true},
	{"a\x00b", false}, // NUL separates PLAIN's fields
	{"a\nb", false},
	{"\xff", false}, // not UTF-8
}

// TestSASLUserNameConfiguration: names that would read as another principal
// are refused when the configuration is validated, with the reason.
func TestSASLUserNameConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range oddSASLNames {
		cfg := kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Users: []kafkaproto.SASLUser{{Name: tc.name, Password: "pw"}}}}
		err := cfg.Validate()
		if tc.ok {
			assert.NoError(t, err, "%q", tc.name)
			continue
		}
		require.Error(t, err, "%q", tc.name)
		assert.Contains(t, err.Error(), "sasl user", "%q", tc.name)
	}
}

// TestSASLPrincipalIsUserPlusName: over PLAIN and SCRAM every accepted odd
// name acts as "User:" + the name byte for byte: it may produce to the one
// topic its principal is granted, is refused the other, and Metadata shows
// it only its own topic. A name that cannot be configured cannot log in,
// not even with another user's password.
func TestSASLPrincipalIsUserPlusName(t *testing.T) {
	t.Parallel()
	var users []kafkaproto.SASLUser
	for _, tc := range oddSASLNames {
		if tc.ok {
			users = append(users, kafkaproto.SASLUser{Name: tc.name, Password: "pw-" + tc.name})
		}
	}
	env := kafkatest.StartServer(t, kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Users: users}})
	// Each principal may use "events"; nobody may use "other".
	env.ACL.Set(func(p string, _ kafkaproto.Operation, topic string) bool {
		return topic == kafkatest.Topic && slices.ContainsFunc(users, func(u kafkaproto.SASLUser) bool {
			return p == kafkaproto.UserPrincipal(u.Name)
		})
	})
	mechanisms := []struct {
		name string
		mech func(user, pass string) sasl.Mechanism
	}{
		{"PLAIN", func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() }},
		{"SCRAM-SHA-256", func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha256Mechanism() }},
		{"SCRAM-SHA-512", func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha512Mechanism() }},
	}
	produced := 0
	t.Run("logins", func(t *testing.T) { // parallel logins end before the checks below
		for _, m := range mechanisms {
			for _, tc := range oddSASLNames {
				if tc.name == "" || strings.ContainsRune(tc.name, 0) {
					continue // no client offers these
				}
				t.Run(m.name+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					pass := "pw-" + tc.name
					if !tc.ok {
						pass = "pw-alice" // another user's password does not help
					}
					cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.SASL(m.mech(tc.name, pass)),
						loginLimit(tc.ok), kgo.RequestRetries(0))
					require.NoError(t, err)
					defer cl.Close()
					ctx := kafkatest.Context(t)
					err = cl.ProduceSync(ctx, &kgo.Record{Topic: kafkatest.Topic, Value: []byte(tc.name)}).FirstErr()
					if !tc.ok {
						require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
						return
					}
					require.NoError(t, err)
					err = cl.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte(tc.name)}).FirstErr()
					require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)

					resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
					require.NoError(t, err)
					var topics []string
					for _, tp := range resp.Topics {
						topics = append(topics, *tp.Topic)
					}
					assert.Equal(t, []string{kafkatest.Topic}, topics, "Metadata shows what the principal may describe")
				})
				if tc.ok {
					produced++
				}
			}
		}
	})
	for _, ch := range env.ACL.Checks() {
		assert.True(t, strings.HasPrefix(ch.Principal, kafkaproto.UserPrincipalPrefix), "principal %q", ch.Principal)
		assert.NotEqual(t, kafkaproto.AnonymousPrincipal, ch.Principal)
		assert.False(t, strings.HasPrefix(ch.Principal, "User:User:"), "principal %q", ch.Principal)
	}
	assert.Equal(t, produced, env.Sink.TotalRecords())
	for _, u := range users {
		assert.True(t, slices.ContainsFunc(env.ACL.Checks(), func(ch kafkatest.ACLCheck) bool {
			return ch.Principal == "User:"+u.Name && ch.Allowed
		}), "no check allowed User:%s", u.Name)
	}
}

// TestFailedLoginLogsOfferedUser: a failed login is logged, on every
// mechanism, with the name the client offered and never the password.
func TestFailedLoginLogsOfferedUser(t *testing.T) {
	t.Parallel()
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig(), kafkaproto.WithLogger(slog.New(logs)))
	for _, tc := range []struct {
		mechanism string
		mech      sasl.Mechanism
	}{
		{"PLAIN", plain.Auth{User: "mallory-plain", Pass: "hunter2-plain"}.AsMechanism()},
		{"SCRAM-SHA-256", scram.Auth{User: "mallory-256", Pass: "hunter2-256"}.AsSha256Mechanism()},
		{"SCRAM-SHA-512", scram.Auth{User: "alice", Pass: "hunter2-512"}.AsSha512Mechanism()},
	} {
		// The log is rate-limited to a line a second: fail again until
		// this mechanism's failure gets its line.
		ctx := kafkatest.Context(t)
		for !slices.ContainsFunc(logs.withMsg("sasl authentication failed"), func(l map[string]string) bool {
			return l["mechanism"] == tc.mechanism
		}) {
			require.NoError(t, ctx.Err(), "no log line for a failed %s login", tc.mechanism)
			cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.SASL(tc.mech), loginLimit(false), kgo.RequestRetries(0))
			require.NoError(t, err)
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: kafkatest.Topic, Value: []byte("x")}).FirstErr()
			cl.Close()
			require.ErrorIs(t, err, kerr.SaslAuthenticationFailed, tc.mechanism)
			select { // a failed login is now quick: poll, do not spin
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	want := map[string]string{"PLAIN": "mallory-plain", "SCRAM-SHA-256": "mallory-256", "SCRAM-SHA-512": "alice"}
	for _, l := range logs.withMsg("sasl authentication failed") {
		assert.Equal(t, want[l["mechanism"]], l["user"], "%v", l)
		for _, v := range l {
			assert.NotContains(t, v, "hunter2", "a password was logged: %v", l)
		}
	}
}
