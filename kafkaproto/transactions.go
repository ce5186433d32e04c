package kafkaproto

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Transactions is the transaction coordinator of a Backend that serves
// transactional producers. A Backend without one, or whose
// TransactionsEnabled says no, gets every transactional request refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a rate-limited WARN.
//
// With one, FindCoordinator names this gateway as every transactional id's
// coordinator (any instance answers for any id: the state is the
// backend's), AddPartitionsToTxn, AddOffsetsToTxn and EndTxn are
// advertised, and a transactional Produce reaches the Sink with
// PartitionProduce.TransactionalID set. Errors choose the Kafka code as for
// Sink; ErrProducerFenced is sent as INVALID_PRODUCER_EPOCH to request
// versions that predate it, as Kafka does.
type Transactions interface {
	// TransactionsEnabled reports whether transactional producers are
	// served now (a reload may change it).
	TransactionsEnabled() bool
	// InitTransaction answers InitProducerId for a transactional id:
	// producerID and epoch are the v3+ fields (-1 when absent).
	InitTransaction(ctx context.Context, id string, timeoutMs int32, producerID int64, epoch int16) (int64, int16, error)
	// AddPartitions adds partitions (every one exists and may be written
	// by the principal) to the producer's open transaction, or begins one.
	AddPartitions(ctx context.Context, p TxnProducer, partitions map[string][]int32) error
	// EndTransaction commits or aborts the producer's open transaction.
	EndTransaction(ctx context.Context, p TxnProducer, commit bool) error
}

// TxnProducer is a transactional producer as its requests name it.
type TxnProducer struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
}

// transactions returns the coordinator if transactional producers are
// served now, else nil.
func (s *Server) transactions() Transactions {
	if s.txns != nil && s.txns.TransactionsEnabled() {
		return s.txns
	}
	return nil
}

// txnViewer returns the Admin view of transactions if they are served and
// the backend has one, else nil.
func (s *Server) txnViewer() TransactionsViewer {
	if t := s.transactions(); t != nil {
		if v, ok := t.(TransactionsViewer); ok {
			return v
		}
	}
	return nil
}

// fencedFor rewrites PRODUCER_FENCED for request versions that predate it
// (the limit is the first version that may carry it).
func fencedFor(err error, version, limit int16) error {
	if version < limit && errors.Is(err, ErrProducerFenced) {
		return withMessage(ErrInvalidProducerEpoch, "%s", errorText(err))
	}
	return err
}

// errorText is err's message as sent to clients.
func errorText(err error) string {
	if m := errorMessage(err); m != nil {
		return *m
	}
	return ""
}

// txnRequestTimeout bounds a transactional request's backend call: long
// enough for a commit's writes on a loaded cluster, shorter than a
// client's request timeout (30 s in Java, librdkafka and franz-go).
const txnRequestTimeout = 25 * time.Second

// logTxn logs, rate-limited, a transactional request's refusal or failure.
func (c *conn) logTxn(msg, id string, err error) {
	if ok, suppressed := c.s.txnLog.allow(time.Now()); ok {
		c.log.Warn(msg, slog.String("transactional_id", id), slog.Any("err", err), slog.Int("suppressed", suppressed))
	}
}
