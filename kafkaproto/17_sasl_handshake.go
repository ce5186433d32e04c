package kafkaproto

// SaslHandshake, key 17, versions 0-1 (advertised only with SASL).
//
// v1: the tokens follow in SaslAuthenticate requests. v0 (legacy clients):
// the tokens follow as bare length-prefixed frames with no Kafka header, and
// the server's tokens go back the same way; a failure closes the connection.
// An unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the list.
//
// On an authenticated connection a v1 handshake starts a re-authentication
// (KIP-368) with the same mechanism; the connection keeps its principal
// until it succeeds. Anything else there gets ILLEGAL_SASL_STATE and the
// connection is closed.

import "github.com/twmb/franz-go/pkg/kmsg"

func (c *conn) handleSASLHandshake(req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, bool) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.s.sasl.mechanisms
	if c.auth.authenticated {
		return c.startReauthentication(req, resp)
	}
	if c.auth.session != nil {
		resp.ErrorCode = ErrIllegalSASLState.Code
		return resp, true
	}
	sess, ok := c.s.sasl.start(c.ctx, req.Mechanism)
	if !ok {
		resp.ErrorCode = ErrUnsupportedSASLMechanism.Code
		return resp, false
	}
	c.auth.session = sess
	c.auth.raw = req.Version == 0
	return resp, false
}

// startReauthentication begins a KIP-368 re-authentication. Kafka requires
// the mechanism of the first authentication, and v1 (the tokens must come
// in SaslAuthenticate requests to be told from other requests).
func (c *conn) startReauthentication(req *kmsg.SASLHandshakeRequest, resp *kmsg.SASLHandshakeResponse) (*kmsg.SASLHandshakeResponse, bool) {
	if c.auth.session == nil || c.auth.reauth != nil || req.Version == 0 || req.Mechanism != c.auth.session.mechanism() {
		c.log.Info("closing connection: refused sasl re-authentication", "mechanism", req.Mechanism,
			"handshake_version", req.Version, "principal", c.principal())
		resp.ErrorCode = ErrIllegalSASLState.Code
		return resp, true
	}
	sess, ok := c.s.sasl.start(c.ctx, req.Mechanism)
	if !ok { // the mechanism was offered when the connection authenticated
		resp.ErrorCode = ErrUnsupportedSASLMechanism.Code
		return resp, true
	}
	c.auth.reauth = sess
	return resp, false
}
