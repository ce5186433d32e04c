package kafkaproto

// OAUTHBEARER (RFC 7628, Kafka's KIP-255): the client's only message is
// gs2-header %x01 "auth=Bearer " token %x01 *(key "=" value %x01) %x01.
// A valid token authenticates at once (an empty reply). A refused one gets
// the error JSON as a challenge (§3.2.2), the client answers %x01, and only
// then does the exchange fail, as Kafka's OAuthBearerSaslServer does: so
// clients show SASL_AUTHENTICATION_FAILED with the reason. Extensions are
// parsed and ignored (no validator for them), as Kafka's default.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// oauthErrorChallenge is the server's error message for a refused token.
const oauthErrorChallenge = `{"status":"invalid_token"}`

// saslChallengeError fails an exchange whose mechanism first sends reply
// to the client; the exchange ends at the client's next message with a
// saslReportedError.
type saslChallengeError struct {
	reply []byte
	err   error
}

func (e *saslChallengeError) Error() string { return e.err.Error() }
func (e *saslChallengeError) Unwrap() error { return e.err }

// saslReportedError is a failure already counted and logged when its
// challenge was sent.
type saslReportedError struct{ err error }

func (e *saslReportedError) Error() string { return e.err.Error() }
func (e *saslReportedError) Unwrap() error { return e.err }

type oauthSession struct {
	ctx    context.Context
	tokens TokenValidator

	name    string
	expires time.Time
	failed  error // the token was refused; the next message ends the exchange
}

func (o *oauthSession) user() string      { return o.name }
func (o *oauthSession) mechanism() string { return MechanismOAuthBearer }
func (o *oauthSession) expiry() time.Time { return o.expires }

func (o *oauthSession) step(msg []byte) ([]byte, bool, error) {
	if o.failed != nil {
		if !bytes.Equal(msg, []byte{1}) {
			return nil, false, &saslReportedError{fmt.Errorf("%w (and the client did not acknowledge the error with %%x01)", o.failed)}
		}
		return nil, false, &saslReportedError{o.failed}
	}
	authz, token, err := parseOAuthBearer(msg)
	if err != nil {
		return nil, false, err
	}
	if err := o.validate(authz, token); err != nil {
		o.failed = err
		return nil, false, &saslChallengeError{reply: []byte(oauthErrorChallenge), err: err}
	}
	return []byte{}, true, nil
}

func (o *oauthSession) validate(authz, token string) error {
	t, err := o.tokens.ValidateToken(o.ctx, token)
	if err != nil {
		return fmt.Errorf("invalid token: %w", err)
	}
	// The validator's name is checked here too: no validator may make a
	// principal that reads as another one.
	if err := CheckSASLUserName(t.Principal); err != nil {
		return fmt.Errorf("invalid token: principal %q: %w", t.Principal, err)
	}
	o.name = t.Principal
	if authz != "" && authz != t.Principal {
		return fmt.Errorf("authorization id %q is not the token's principal %q", authz, t.Principal)
	}
	o.expires = t.Expiry
	return nil
}

// parseOAuthBearer returns the authorization id and the bearer token of
// a client-first message.
func parseOAuthBearer(msg []byte) (authz, token string, err error) {
	s := string(msg)
	if len(s) < 3 || (s[0] != 'n' && s[0] != 'y') || s[1] != ',' {
		return "", "", errors.New("malformed OAUTHBEARER message (channel binding is not supported)")
	}
	end := strings.IndexByte(s[2:], ',')
	if end < 0 {
		return "", "", errors.New("malformed OAUTHBEARER gs2 header")
	}
	if a := s[2 : 2+end]; a != "" {
		var ok bool
		if authz, ok = strings.CutPrefix(a, "a="); !ok {
			return "", "", errors.New("malformed OAUTHBEARER gs2 header")
		}
	}
	rest := s[2+end+1:]
	if len(rest) < 2 || rest[0] != 1 || !strings.HasSuffix(rest, "\x01\x01") {
		return "", "", errors.New("malformed OAUTHBEARER message: key-value pairs must be enclosed in %x01")
	}
	found := false
	for kv := range strings.SplitSeq(rest[1:len(rest)-2], "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", "", errors.New("malformed OAUTHBEARER key-value pair")
		}
		if k != "auth" {
			continue // an extension
		}
		scheme, tok, ok := strings.Cut(v, " ")
		tok = strings.TrimLeft(tok, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || found {
			return "", "", errors.New(`malformed OAUTHBEARER message: one "auth=Bearer <token>" is required`)
		}
		token, found = tok, true
	}
	if !found {
		return "", "", errors.New(`malformed OAUTHBEARER message: "auth=Bearer <token>" is missing`)
	}
	return authz, token, nil
}
