package kafkaproto

// Who may do what, and when: the readiness gate (WithReadyCheck) and the
// Backend's optional Authorizer.

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errNotReady is what Produce partitions get while the ready check fails:
// NOT_LEADER_OR_FOLLOWER makes clients refresh metadata and retry. The
// check's own error goes to the log, not to clients.
var errNotReady = &detailedError{code: ErrNotLeaderOrFollower,
	msg: "the gateway is not ready (starting, or its backend is unreachable); retry later"}

// notReady returns the ready check's error, nil when ready or without a
// check. Transitions are logged once each.
func (s *Server) notReady(key int16) error {
	if s.ready == nil {
		return nil
	}
	err := s.ready()
	if was := s.unready.Swap(err != nil); was != (err != nil) {
		if err != nil {
			s.log.Warn("kafka listener not ready: answering retriable errors", "err", err)
		} else {
			s.log.Info("kafka listener ready")
		}
	}
	if err != nil {
		s.m.notReady(key)
	}
	return err
}

// notReadyInitProducerID answers an idempotent InitProducerId while not
// ready with COORDINATOR_LOAD_IN_PROGRESS, the code Java, librdkafka and
// franz-go retry without side effects (see 22_init_producer_id.go).
func notReadyInitProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	resp.ErrorCode = ErrCoordinatorLoadInProgress.Code
	return resp
}

// principal is who the connection acts for: User:<SASL name> once
// authenticated, else User:<name> of its verified client certificate
// (Config.PrincipalRules), else AnonymousPrincipal; SASL wins over the
// certificate, as on Kafka's SASL_SSL listeners.
func (c *conn) principal() string {
	switch {
	case c.s.sasl != nil && c.auth.authenticated && c.auth.session != nil:
		return UserPrincipal(c.auth.session.user())
	case c.certName != "":
		return UserPrincipal(c.certName)
	}
	return AnonymousPrincipal
}

// authorize asks the Authorizer whether the connection's principal may do
// op on topic; a refusal is counted and logged (rate-limited: clients
// retry). Without an Authorizer everything is allowed.
func (c *conn) authorize(op Operation, topic string) bool {
	if c.s.authz == nil {
		return true
	}
	principal := c.principal()
	if c.s.authz.Authorize(principal, op, topic) {
		return true
	}
	c.s.m.authorizationFailure(op)
	if ok, suppressed := c.s.denyLog.allow(time.Now()); ok {
		c.log.Warn("topic authorization failed", slog.String("principal", principal),
			slog.String("operation", op.String()), slog.String("topic", topic), slog.Int("suppressed", suppressed))
	}
	return false
}

// mayDescribe is authorize without the log and count, for filtering an
// all-topics Metadata answer, where refusals are expected.
func (c *conn) mayDescribe(topic string) bool {
	return c.s.authz == nil || c.s.authz.Authorize(c.principal(), OpDescribe, topic)
}
