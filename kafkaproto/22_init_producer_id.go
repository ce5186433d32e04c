package kafkaproto

// InitProducerId, key 22, versions 0-5.
//
// Idempotent producers (null transactional id) always get a fresh producer
// id with epoch 0 from ProducerIDs, which the gateway derives from the
// backend so ids are unique across instances. The v3+ ProducerID/Epoch
// fields (epoch bump requests) are ignored: a fresh id is as good.
//
// A transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): it is
// non-retriable in Java, librdkafka and kgo, and each reports it as an
// authorization problem for the transactional id, which is the clearest
// available message; the alternatives are worse (COORDINATOR_NOT_AVAILABLE
// retries until max.block.ms, UNSUPPORTED_VERSION looks like a client bug).
// An empty transactional id is INVALID_REQUEST, as in Kafka.
//
// A ProducerIDs failure answers REQUEST_TIMED_OUT (retriable everywhere, and
// not a coordinator error that would send the client to FindCoordinator).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *conn) handleInitProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	s := c.s
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = ErrInvalidRequest.Code
		return resp
	case req.TransactionalID != nil:
		c.log.Info("refused transactional producer", "transactional_id", *req.TransactionalID)
		resp.ErrorCode = ErrTransactionalIDAuthorizationFailed.Code
		return resp
	case s.pids == nil:
		resp.ErrorCode = ErrRequestTimedOut.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, s.cfg.DefaultProduceTimeout)
	defer cancel()
	id, err := s.pids.NextProducerID(ctx)
	if err != nil || id < 0 {
		c.log.Warn("allocate producer id", "err", err, "producer_id", id)
		resp.ErrorCode = ErrRequestTimedOut.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
