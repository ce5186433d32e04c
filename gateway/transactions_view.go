package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// The Admin view of transactions (kafkaproto.TransactionsViewer):
// DescribeTransactions reads an id's rows; ListTransactions answers from
// this instance's sweeper, which follows the whole transactions table
// (so every instance lists every open transaction, as each broker of a
// Kafka cluster lists its coordinator's).

// DescribeTransactions implements kafkaproto.TransactionsViewer. The
// partitions are those added on this instance, when the transaction's
// AddPartitionsToTxn came here.
func (s *bridge) DescribeTransactions(ctx context.Context, ids []string) []kafkaproto.TxnDescription {
	out := make([]kafkaproto.TxnDescription, len(ids))
	for i, id := range ids {
		out[i] = s.describeTransaction(ctx, id)
	}
	return out
}

func (s *bridge) describeTransaction(ctx context.Context, id string) kafkaproto.TxnDescription {
	t := s.txn
	d := kafkaproto.TxnDescription{TransactionalID: id, ProducerID: -1, Epoch: -1, StartMs: -1}
	claim, err := t.claims.current(ctx, id)
	switch {
	case err != nil:
		d.Err = fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
		return d
	case claim == nil:
		d.Err = kafkaproto.ErrTransactionalIDNotFound
		return d
	}
	d.ProducerID, d.Epoch, d.TimeoutMs = claim.producerID, claim.epoch, claim.timeoutMs
	pos, err := t.ledger.positionOf(ctx, claim)
	if err != nil {
		d.Err = err
		return d
	}
	switch {
	case pos.begin != nil:
		d.State, d.StartMs = "Ongoing", pos.begin.writtenAtMs
		t.mu.Lock()
		if sess := t.added[id]; sess != nil && sess.producer.ProducerID == claim.producerID && sess.producer.Epoch == claim.epoch {
			d.Partitions = map[string][]int32{}
			for tp := range sess.parts {
				d.Partitions[tp.topic] = append(d.Partitions[tp.topic], tp.partition)
			}
		}
		t.mu.Unlock()
	case pos.last == nil:
		d.State = "Empty"
	case pos.last.outcome == outcomeCommit:
		d.State = "CompleteCommit"
		if cm, err := t.ledger.lastCommit(ctx, claim); err == nil && cm != nil {
			d.State = "PrepareCommit" // decided, not yet applied to the tables
		}
	default:
		d.State = "CompleteAbort"
	}
	return d
}

// ListTransactions implements kafkaproto.TransactionsViewer: the open
// transactions (Ongoing) and the commits not yet applied (PrepareCommit)
// this instance's sweeper knows of, as of its last sweep.
func (s *bridge) ListTransactions(context.Context) ([]kafkaproto.TxnListing, error) {
	v := s.txn.view
	if v == nil {
		return nil, errors.New("the transaction sweeper has not run yet")
	}
	return v.list()
}

// txnView is the sweeper's list of open transactions, refreshed after
// each sweep.
type txnView struct {
	mu    sync.Mutex
	ready bool
	open  []kafkaproto.TxnListing
}

func (v *txnView) set(open []kafkaproto.TxnListing) {
	slices.SortFunc(open, func(a, b kafkaproto.TxnListing) int {
		if a.TransactionalID < b.TransactionalID {
			return -1
		}
		if a.TransactionalID > b.TransactionalID {
			return 1
		}
		return 0
	})
	v.mu.Lock()
	v.open, v.ready = open, true
	v.mu.Unlock()
}

func (v *txnView) list() ([]kafkaproto.TxnListing, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready {
		return nil, fmt.Errorf("%w: the transaction sweeper has not read the transactions table yet", kafkaproto.ErrCoordinatorLoadInProgress)
	}
	return slices.Clone(v.open), nil
}

var _ kafkaproto.TransactionsViewer = (*bridge)(nil)
