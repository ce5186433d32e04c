package kafkaproto

// InitProducerId, key 22, versions 0-5.
//
// Idempotent producers (null transactional id) always get a fresh producer
// id with epoch 0 from ProducerIDs, which the gateway derives from the
// backend so ids are unique across instances. The v3+ ProducerID/Epoch
// fields (epoch bump requests) are ignored: a fresh id is as good.
//
// A transactional id goes to Transactions.InitTransaction while the backend
// serves transactions (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4).
// Otherwise it gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): it is
// non-retriable in Java, librdkafka and kgo, and each reports it as an
// authorization problem for the transactional id, which is the clearest
// available message; the alternatives are worse (COORDINATOR_NOT_AVAILABLE
// retries until max.block.ms, UNSUPPORTED_VERSION looks like a client bug).
// An empty transactional id is INVALID_REQUEST, as in Kafka.
//
// When ProducerIDs fails, the answer is COORDINATOR_LOAD_IN_PROGRESS (14),
// unless the error carries a non-retriable Kafka code (then that code). 14
// is the one code all three producers retry for InitProducerId without
// side effects:
//   - Java's transaction manager (InitProducerIdHandler) re-enqueues only
//     NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS
//     and CONCURRENT_TRANSACTIONS; any other code, REQUEST_TIMED_OUT
//     included, is a fatal "unexpected error" for the producer. The first
//     two also send a FindCoordinator for the transaction coordinator,
//     which this server refuses (10_find_coordinator.go), fatally.
//   - franz-go (producer id loading) discards the attempt and retries on
//     every code kerr marks retriable, 14 among them.
//   - librdkafka (idempotence PID state machine) retries any code except
//     its fatal set (authorization, fencing) after 500 ms.
//
// The handler does not log failures above debug: a backend outage fails
// every producer's retries, and the backend logs its own state changes.

import (
	"context"
	"errors"

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
	case req.TransactionalID != nil && s.transactions() != nil:
		return c.initTransaction(req, resp)
	case req.TransactionalID != nil:
		c.refusedTransactional(*req.TransactionalID)
		resp.ErrorCode = ErrTransactionalIDAuthorizationFailed.Code
		return resp
	case s.pids == nil:
		resp.ErrorCode = ErrCoordinatorLoadInProgress.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, s.cfg.DefaultProduceTimeout)
	defer cancel()
	id, err := s.pids.NextProducerID(ctx)
	if err == nil && id < 0 {
		err = errors.New("negative producer id")
	}
	if err != nil {
		resp.ErrorCode = initProducerIDErrorCode(err)
		c.log.Debug("allocate producer id", "err", err, "error_code", resp.ErrorCode)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// initProducerIDErrorCode is the answer to a failed allocation: the
// error's own code when it is one the producer must not retry, else
// COORDINATOR_LOAD_IN_PROGRESS (see the file comment for why no other
// retriable code will do). An unclassified failure is retried too: a
// fatal error would end the producer for what may be a passing fault.
func initProducerIDErrorCode(err error) int16 {
	var ke *Error
	if errors.As(err, &ke) && !ke.Retriable && ke.Code != ErrUnknownServerError.Code {
		return ke.Code
	}
	return ErrCoordinatorLoadInProgress.Code
}

// initTransaction answers InitProducerId for a transactional id.
func (c *conn) initTransaction(req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) *kmsg.InitProducerIDResponse {
	id := *req.TransactionalID
	ctx, cancel := context.WithTimeout(c.ctx, txnRequestTimeout)
	defer cancel()
	pid, epoch, err := c.s.txns.InitTransaction(ctx, id, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
	if err != nil {
		err = fencedFor(err, req.Version, 4)
		resp.ErrorCode = errorCode(err)
		if resp.ErrorCode == ErrUnknownServerError.Code {
			// An unclassified failure is retried (see initProducerIDErrorCode).
			resp.ErrorCode = ErrCoordinatorLoadInProgress.Code
		}
		c.logTxn("init transactional producer refused", id, err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	c.log.Info("transactional producer initialized", "transactional_id", id, "producer_id", pid, "epoch", epoch)
	return resp
}
