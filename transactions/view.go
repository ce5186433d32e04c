package transactions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/produce"
)

// The Admin view of transactions (kafkaproto.TransactionsViewer):
// DescribeTransactions reads an id's rows; ListTransactions answers from
// this instance's sweeper, which follows the whole transactions table
// (so every instance lists every open transaction, as each broker of a
// Kafka cluster lists its coordinator's).

// DescribeTransactions implements kafkaproto.TransactionsViewer. The
// partitions are those added on this instance, when the transaction's
// AddPartitionsToTxn came here.
func (t *Coordinator) DescribeTransactions(ctx context.Context, ids []string) []kafkaproto.TxnDescription {
	out := make([]kafkaproto.TxnDescription, len(ids))
	for i, id := range ids {
		out[i] = t.describeTransaction(ctx, id)
	}
	return out
}

func (t *Coordinator) describeTransaction(ctx context.Context, id string) kafkaproto.TxnDescription {
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
		parts := t.partitionsOf(txnRef{id, claim.key.claim, pos.n}, claim.producerID, claim.epoch, pos.begin)
		d.Partitions = map[string][]int32{}
		for tp := range parts {
			d.Partitions[tp.Topic] = append(d.Partitions[tp.Topic], tp.Partition)
		}
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
func (t *Coordinator) ListTransactions(context.Context) ([]kafkaproto.TxnListing, error) {
	if t.view == nil {
		return nil, errors.New("the transaction sweeper has not run yet")
	}
	list, err := t.view.list()
	if err != nil {
		return nil, err
	}
	_, readFromMs, err := t.view.ongoing()
	if err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(list))
	for _, l := range list {
		listed[l.TransactionalID] = true
	}
	for _, o := range t.begunHereSince(readFromMs, nil) {
		if !listed[o.ref.id] {
			list = append(list, kafkaproto.TxnListing{TransactionalID: o.ref.id, ProducerID: o.producerID, State: "Ongoing", StartMs: o.startMs})
		}
	}
	return list, nil
}

// begunHereSince returns the transactions begun on this instance that the
// sweep which began reading at readFromMs may not have seen (the begin
// row is then only in the session), except those in seen. A session the
// sweep did not list and that began well before it has ended, on another
// instance; the margin covers clocks and the write's time.
func (t *Coordinator) begunHereSince(readFromMs int64, seen map[txnRef]bool) []openTxn {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []openTxn
	for id, sess := range t.added {
		ref := txnRef{id, sess.claim, sess.n}
		if sess.begun && !seen[ref] && sess.beganAtMs >= readFromMs-sessionMarginMs {
			out = append(out, openTxn{ref: ref, producerID: sess.producer.ProducerID, epoch: sess.producer.Epoch,
				startMs: sess.beganAtMs, stagingOffset: sess.stagingOffset})
		}
	}
	return out
}

// partitionsOf is what an open transaction is known to write: the
// partitions its begin row names (those of its first AddPartitionsToTxn,
// known to every instance) and those its AddPartitionsToTxn requests
// added on this instance. Partitions added later on another instance are
// not known here (docs/transactions.md, "Admin APIs").
func (t *Coordinator) partitionsOf(ref txnRef, producerID int64, epoch int16, begin *txnRow) map[produce.TopicPartition]bool {
	parts := map[produce.TopicPartition]bool{}
	beginPartitions(begin, parts)
	t.mu.Lock()
	defer t.mu.Unlock()
	if sess := t.added[ref.id]; sess != nil && sess.begun && sess.claim == ref.claim && sess.n == ref.n &&
		sess.producer.ProducerID == producerID && sess.producer.Epoch == epoch {
		for tp := range sess.parts {
			parts[tp] = true
		}
	}
	return parts
}

// DescribeProducers implements kafkaproto.TransactionsViewer: the open
// transactions of the sweeper's last sweep, and those begun here since,
// on the partitions they are known to write (partitionsOf).
func (t *Coordinator) DescribeProducers(_ context.Context, topic string, partitions []int32) (map[int32][]kafkaproto.ProducerState, error) {
	if t.view == nil {
		return nil, fmt.Errorf("%w: the transaction sweeper has not run yet", kafkaproto.ErrNotLeaderOrFollower)
	}
	open, readFromMs, err := t.view.ongoing()
	if err != nil {
		return nil, err
	}
	seen := make(map[txnRef]bool, len(open))
	for _, o := range open {
		seen[o.ref] = true
	}
	open = append(open, t.begunHereSince(readFromMs, seen)...)
	asked := make(map[int32]bool, len(partitions))
	for _, p := range partitions {
		asked[p] = true
	}
	out := make(map[int32][]kafkaproto.ProducerState, len(partitions))
	for _, o := range open {
		for tp := range t.partitionsOf(o.ref, o.producerID, o.epoch, o.begin) {
			if tp.Topic == topic && asked[tp.Partition] {
				out[tp.Partition] = append(out[tp.Partition], kafkaproto.ProducerState{ProducerID: o.producerID, Epoch: o.epoch,
					LastTimestampMs: o.startMs, TxnStartOffset: o.stagingOffset})
			}
		}
	}
	for _, ps := range out {
		slices.SortFunc(ps, func(a, b kafkaproto.ProducerState) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	}
	return out, nil
}

// sessionMarginMs: a session begun this long before a sweep began reading
// may still be missing from it.
const sessionMarginMs = 2000

// txnView is the sweeper's list of open transactions, refreshed after
// each sweep.
type txnView struct {
	mu      sync.Mutex
	ready   bool
	open    []kafkaproto.TxnListing
	running []openTxn // the Ongoing ones of open
	// readFromMs: the sweep read every row written before it.
	readFromMs int64
}

// openTxn is an open transaction as the sweeper last saw it.
type openTxn struct {
	ref           txnRef
	producerID    int64
	epoch         int16
	startMs       int64
	stagingOffset int64
	begin         *txnRow // nil when only this instance's session knows it
}

func (v *txnView) set(open []kafkaproto.TxnListing, running []openTxn, readFromMs int64) {
	slices.SortFunc(open, func(a, b kafkaproto.TxnListing) int { return cmp.Compare(a.TransactionalID, b.TransactionalID) })
	v.mu.Lock()
	v.open, v.running, v.readFromMs, v.ready = open, running, readFromMs, true
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

// ended drops a transaction this instance just ended from the view, which
// the next sweep would do: Admin answers here see the end at once. A
// commit not yet applied is listed again by that sweep.
func (v *txnView) ended(ref txnRef) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.running = slices.DeleteFunc(v.running, func(o openTxn) bool { return o.ref == ref })
	v.open = slices.DeleteFunc(v.open, func(l kafkaproto.TxnListing) bool {
		return l.TransactionalID == ref.id && l.State == "Ongoing" && !slices.ContainsFunc(v.running, func(o openTxn) bool { return o.ref.id == ref.id })
	})
}

// ongoing returns the Ongoing transactions and when the sweep that saw
// them began reading.
func (v *txnView) ongoing() ([]openTxn, int64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready {
		return nil, 0, fmt.Errorf("%w: the transaction sweeper has not read the transactions table yet", kafkaproto.ErrNotLeaderOrFollower)
	}
	return slices.Clone(v.running), v.readFromMs, nil
}

var _ kafkaproto.TransactionsViewer = (*Coordinator)(nil)
