package kafkaproto

// SaslAuthenticate, key 36, versions 0-2 (advertised only with SASL).
//
// Carries the mechanism's tokens after a v1 SaslHandshake. Bad credentials
// get SASL_AUTHENTICATION_FAILED with a message, then the connection is
// closed (Kafka does the same). session_lifetime_ms is 0: no
// re-authentication (KIP-368).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
		c.s.m.authFailures.Inc()
		c.log.Info("sasl authentication failed", "user", c.auth.session.user(), "err", err)
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
		c.s.m.authFailures.Inc()
		c.log.Info("sasl authentication failed", "user", c.auth.session.user(), "err", err)
		return nil, true
	}
	if done {
		c.authenticated()
	}
	return reply, false
}
