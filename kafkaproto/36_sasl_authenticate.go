package kafkaproto

// SaslAuthenticate, key 36, versions 0-2 (advertised only with SASL).
//
// Carries the mechanism's tokens after a v1 SaslHandshake. Bad credentials
// get SASL_AUTHENTICATION_FAILED with a message, then the connection is
// closed (Kafka does the same). session_lifetime_ms (v1+) is the time left
// until the session's expiry (an OAUTHBEARER token's exp), 0 for none
// (PLAIN and SCRAM): the client re-authenticates before it (KIP-368). A
// re-authentication must keep the principal, or it fails and the
// connection is closed.

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxLoggedUserName bounds the user name a failed login logs: the client
// chooses it.
const maxLoggedUserName = 256

func (c *conn) handleSASLAuthenticate(req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, bool) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	sess := c.auth.reauth
	if sess == nil && (c.auth.session == nil || c.auth.raw || c.auth.authenticated) {
		resp.ErrorCode = ErrIllegalSASLState.Code
		msg := "SaslAuthenticate without a preceding v1 SaslHandshake"
		resp.ErrorMessage = &msg
		return resp, true
	}
	if sess == nil {
		sess = c.auth.session
	}
	reply, done, err := sess.step(req.SASLAuthBytes)
	if err == nil && done && c.auth.reauth != nil && sess.user() != c.auth.session.user() {
		err = fmt.Errorf("re-authentication changed the principal from %s to %s", c.principal(), UserPrincipal(sess.user()))
	}
	if err != nil {
		var challenge *saslChallengeError
		if c.authenticationFailed(sess, err); errors.As(err, &challenge) {
			resp.SASLAuthBytes = challenge.reply
			return resp, false
		}
		resp.ErrorCode = ErrSASLAuthenticationFailed.Code
		msg := "authentication failed: " + err.Error()
		resp.ErrorMessage = &msg
		return resp, true
	}
	resp.SASLAuthBytes = reply
	if done {
		c.authenticated(sess)
		if exp := c.auth.expiry; !exp.IsZero() && req.Version >= 1 {
			// At least 1 ms: 0 would mean "no expiry" to the client.
			resp.SessionLifetimeMillis = max(1, time.Until(exp).Milliseconds())
		}
	}
	return resp, false
}

// handleRawSASLToken handles a bare token after a v0 SaslHandshake. It
// returns the raw reply and whether to close the connection.
func (c *conn) handleRawSASLToken(token []byte) ([]byte, bool) {
	reply, done, err := c.auth.session.step(token)
	if err != nil {
		var challenge *saslChallengeError
		if c.authenticationFailed(c.auth.session, err); errors.As(err, &challenge) {
			return challenge.reply, false
		}
		return nil, true
	}
	if done {
		c.authenticated(c.auth.session)
	}
	return reply, false
}

// authenticationFailed counts a failed exchange and logs it, rate-limited
// (clients retry, and anyone can fail), with the mechanism and the name the
// client offered; never the password or the raw token. A failure reported
// with its challenge is not counted again at the exchange's end.
func (c *conn) authenticationFailed(sess saslSession, err error) {
	if _, reported := errors.AsType[*saslReportedError](err); reported {
		return
	}
	c.s.m.authFailures.Inc()
	ok, suppressed := c.s.authLog.allow(time.Now())
	if !ok {
		return
	}
	user := sess.user()
	if len(user) > maxLoggedUserName {
		user = user[:maxLoggedUserName] + "..."
	}
	c.log.Info("sasl authentication failed", slog.String("mechanism", sess.mechanism()),
		slog.String("user", user), slog.String("err", err.Error()), slog.Int("suppressed", suppressed),
		slog.Bool("reauthentication", c.auth.authenticated))
}
