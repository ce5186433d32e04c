package kafkaproto

import (
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalRules map the subject of a verified client certificate to the
// name of the connection's principal (User:<name>), as Kafka's
// ssl.principal.mapping.rules: rules are tried in order and the first that
// applies gives the name.
//
//   - DEFAULT applies to every subject and gives it whole, in RFC 2253
//     form ("CN=alice,OU=eng,O=Acme"): Go's [pkix.Name.String].
//   - RULE:pattern/replacement/ applies when the regular expression
//     matches the whole subject and gives the replacement, where $1 … $9
//     are its groups; a trailing L or U lower- or upper-cases the result.
//     A '/' inside pattern or replacement is written \/.
//
// A subject that no rule applies to, or that maps to an empty name or one
// that reads as another principal (ANONYMOUS, *), fails the connection's
// authentication, as Kafka's broker does.
type PrincipalRules struct {
	rules []principalRule
	text  []string // as configured, for error messages
}

type principalRule struct {
	re          *regexp.Regexp // nil: DEFAULT
	replacement string         // Go template ($1 → ${1})
	lower       bool
	upper       bool
}

// ParsePrincipalRules parses rules in Kafka's syntax; none is DEFAULT.
func ParsePrincipalRules(rules []string) (*PrincipalRules, error) {
	if len(rules) == 0 {
		rules = []string{"DEFAULT"}
	}
	p := &PrincipalRules{text: rules}
	for i, text := range rules {
		r, err := parsePrincipalRule(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("principal mapping rule %d %q: %w", i+1, text, err)
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

func parsePrincipalRule(text string) (principalRule, error) {
	if text == "DEFAULT" {
		return principalRule{}, nil
	}
	body, ok := strings.CutPrefix(text, "RULE:")
	if !ok {
		return principalRule{}, errors.New("neither DEFAULT nor RULE:pattern/replacement/[LU]")
	}
	parts := splitUnescaped(body)
	if len(parts) != 3 {
		return principalRule{}, errors.New("want RULE:pattern/replacement/ with an optional L or U after the last '/'")
	}
	r := principalRule{}
	switch parts[2] {
	case "":
	case "L":
		r.lower = true
	case "U":
		r.upper = true
	default:
		return principalRule{}, fmt.Errorf("flag %q after the last '/' is neither L nor U", parts[2])
	}
	re, err := regexp.Compile(`^(?:` + parts[0] + `)$`)
	if err != nil {
		return principalRule{}, fmt.Errorf("pattern: %w", err)
	}
	r.re = re
	// Java's $1 is Go's ${1}: "$1x" would otherwise name group "1x".
	r.replacement = javaGroupRef.ReplaceAllString(strings.ReplaceAll(parts[1], `\/`, "/"), "$${$1}")
	return r, nil
}

var javaGroupRef = regexp.MustCompile(`\$(\d)`)

// splitUnescaped splits s at the '/' not preceded by a backslash; a \/
// stays in the part (the pattern reads it as a '/', the replacement is
// unescaped by the caller).
func splitUnescaped(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// Name maps a subject (RFC 2253 form) to the principal's name.
func (p *PrincipalRules) Name(subject string) (string, error) {
	for _, r := range p.rules {
		if r.re == nil {
			return checkMappedName(subject)
		}
		m := r.re.FindStringSubmatchIndex(subject)
		if m == nil {
			continue
		}
		name := string(r.re.ExpandString(nil, r.replacement, subject, m))
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return checkMappedName(name)
	}
	return "", fmt.Errorf("no principal mapping rule applies to certificate subject %q (rules %q)", subject, p.text)
}

func checkMappedName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("the certificate subject maps to an empty principal name")
	case strings.EqualFold(name, "ANONYMOUS") || name == "*":
		return "", fmt.Errorf("the certificate subject maps to %q, which reads as another principal in an ACL", name)
	}
	return name, nil
}

// certificateName is the principal name of a TLS connection whose client
// presented a verified certificate ("" when it did not: no client
// certificates asked for, or none verified).
func certificateName(st tls.ConnectionState, rules *PrincipalRules) (string, error) {
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return "", nil
	}
	subject := st.PeerCertificates[0].Subject.String()
	if rules == nil { // DEFAULT
		return checkMappedName(subject)
	}
	return rules.Name(subject)
}

// nameCertificate sets the connection's certificate principal once its TLS
// handshake is done (its first request has been read). False when the
// certificate maps to no principal: the connection is closed, logged and
// counted, as a failed authentication.
func (c *conn) nameCertificate() bool {
	c.certChecked = true
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	name, err := certificateName(tc.ConnectionState(), c.s.cfg.PrincipalRules)
	if err != nil {
		c.s.m.protocolError("tls_principal")
		c.warnConn("closing connection: client certificate maps to no principal", err)
		return false
	}
	c.certName = name
	if name != "" {
		c.log.Debug("tls client certificate", "principal", UserPrincipal(name))
	}
	return true
}

// tlsHandshakeFailed reports whether the connection is TLS and its
// handshake did not complete (a client certificate refused, say).
func (c *conn) tlsHandshakeFailed() bool {
	tc, ok := c.nc.(*tls.Conn)
	return ok && !tc.ConnectionState().HandshakeComplete
}
