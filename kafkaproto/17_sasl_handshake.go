package kafkaproto

// SaslHandshake, key 17, versions 0-1 (advertised only with SASL).
//
// v1: the tokens follow in SaslAuthenticate requests. v0 (legacy clients):
// the tokens follow as bare length-prefixed frames with no Kafka header, and
// the server's tokens go back the same way; a failure closes the connection.
// An unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the list.

import "github.com/twmb/franz-go/pkg/kmsg"

func (c *conn) handleSASLHandshake(req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, bool) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.s.sasl.mechanisms
	if c.auth.authenticated || c.auth.session != nil {
		resp.ErrorCode = ErrIllegalSASLState.Code
		return resp, true
	}
	sess, ok := c.s.sasl.start(req.Mechanism)
	if !ok {
		resp.ErrorCode = ErrUnsupportedSASLMechanism.Code
		return resp, false
	}
	c.auth.session = sess
	c.auth.raw = req.Version == 0
	return resp, false
}
