package kafkaproto

// SaslAuthenticate, key 36, versions 0-2 (advertised only with SASL).
//
// Carries the mechanism's tokens after a v1 SaslHandshake. Bad credentials
// get SASL_AUTHENTICATION_FAILED with a message, then the connection is
// closed (Kafka does the same). session_lifetime_ms is 0: no
// re-authentication (KIP-368).

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxLoggedUserName bounds the user name a failed login logs: the client
// chooses it.
const maxLoggedUserName = 256

func (c *conn) handleSASLAuthenticate(req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, bool) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.auth.session == nil || c.auth.raw || c.auth.authenticated {
		resp.ErrorCode = ErrIllegalSASLState.Code
		msg := "SaslAuthenticate without a preceding v1 SaslHandshake"
		resp.ErrorMessage = &msg
		return resp, true
	}
	reply, done, err := c.auth.session.step(req.SASLAuthBytes)
	if err != nil {
		c.authenticationFailed(err)
		resp.ErrorCode = ErrSASLAuthenticationFailed.Code
		msg := "authentication failed: " + err.Error()
		resp.ErrorMessage = &msg
		return resp, true
	}
	resp.SASLAuthBytes = reply
	if done {
		c.authenticated()
	}
	return resp, false
}

// handleRawSASLToken handles a bare token after a v0 SaslHandshake. It
// returns the raw reply and whether to close the connection.
func (c *conn) handleRawSASLToken(token []byte) ([]byte, bool) {
	reply, done, err := c.auth.session.step(token)
	if err != nil {
		c.authenticationFailed(err)
		return nil, true
	}
	if done {
		c.authenticated()
	}
	return reply, false
}

// authenticationFailed counts a failed exchange and logs it, rate-limited
// (clients retry, and anyone can fail), with the mechanism and the name the
// client offered; never the password or the raw token.
func (c *conn) authenticationFailed(err error) {
	c.s.m.authFailures.Inc()
	ok, suppressed := c.s.authLog.allow(time.Now())
	if !ok {
		return
	}
	user := c.auth.session.user()
	if len(user) > maxLoggedUserName {
		user = user[:maxLoggedUserName] + "..."
	}
	c.log.Info("sasl authentication failed", slog.String("mechanism", c.auth.session.mechanism()),
		slog.String("user", user), slog.String("err", err.Error()), slog.Int("suppressed", suppressed))
}
