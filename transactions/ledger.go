package transactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/produce"
)

// txnLedger keeps the transactions of each claim in the transactions table
// (docs/transactions.md, "Transactions"): transaction n of claim c has a
// begin row (c, 2n), written when its first partitions are added, and an
// outcome row (c, 2n+1), written by EndTxn, a timeout or a newer claim.
// Outcomes are written without gaps (one is written only for the first
// transaction without one), so the open transaction is found with the same
// search as the current claim. A row, once written, never changes: an
// outcome read back is the decision every instance applies.
//
// What the rows do not hold yet: the staged records and the apply of a
// commit (the ledger decides, nothing is written to target tables).
type txnLedger struct {
	claims *txnClaims
	rows   txnRows
	now    func() time.Time
}

// errTxnTimedOut marks a transaction aborted for passing its timeout.
var errTxnTimedOut = errors.New("the transaction passed its transaction.timeout.ms")

const (
	outcomeCommit = "commit"
	outcomeAbort  = "abort"
	// The reason column of an outcome row: who decided it.
	reasonEndTxn  = "end_txn"
	reasonTimeout = "timeout"
	reasonFenced  = "fenced_by_new_producer"
)

// encodeTxnPartitions is the reason column of a begin row: the partitions
// that began the transaction, as JSON ({"topic":[0,1]}).
func encodeTxnPartitions(parts map[string][]int32) string {
	if len(parts) == 0 {
		return ""
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return "" // a map of strings to ints always marshals
	}
	return string(b)
}

// beginPartitions adds the partitions a begin row names to into; a row
// without them (or written by an older version) adds none.
func beginPartitions(begin *txnRow, into map[produce.TopicPartition]bool) {
	if begin == nil || begin.reason == "" {
		return
	}
	var parts map[string][]int32
	if json.Unmarshal([]byte(begin.reason), &parts) != nil {
		return
	}
	for topic, ps := range parts {
		for _, p := range ps {
			into[produce.TopicPartition{Topic: topic, Partition: p}] = true
		}
	}
}

func beginKey(claim, n int64) txnKey   { return txnKey{claim: claim, txn: 2 * n} }
func outcomeKey(claim, n int64) txnKey { return txnKey{claim: claim, txn: 2*n + 1} }

// appliedKey marks transaction n's commit as applied to its tables: a new
// claim need not apply it again.
func appliedKey(claim, n int64) txnKey { return txnKey{claim: claim, txn: -2 - n} }

// txnPosition is where a producer's transactions stand.
type txnPosition struct {
	claim *txnRow
	n     int64   // the first transaction without an outcome
	last  *txnRow // transaction n-1's outcome, nil if n == 0
	begin *txnRow // transaction n's begin row, nil if not begun
}

// position checks that p holds the id's current claim and finds its open
// transaction. A producer id the id never had is INVALID_PRODUCER_ID_MAPPING,
// an older epoch PRODUCER_FENCED.
func (l *txnLedger) position(ctx context.Context, p kafkaproto.TxnProducer) (*txnPosition, error) {
	cur, err := l.claims.current(ctx, p.TransactionalID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	switch {
	case cur == nil || cur.producerID != p.ProducerID:
		return nil, fmt.Errorf("%w: transactional id %q does not have producer id %d", kafkaproto.ErrInvalidProducerIDMapping, p.TransactionalID, p.ProducerID)
	case cur.epoch != p.Epoch:
		return nil, fmt.Errorf("%w: transactional id %q is at epoch %d, the producer has %d", kafkaproto.ErrProducerFenced, p.TransactionalID, cur.epoch, p.Epoch)
	}
	return l.positionOf(ctx, cur)
}

// positionOf finds the open transaction of a claim.
func (l *txnLedger) positionOf(ctx context.Context, claim *txnRow) (*txnPosition, error) {
	c := claim.key.claim
	last, lastRow, err := highestRow(ctx, l.rows, claim.id, func(n int64) txnKey { return outcomeKey(c, n) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	pos := &txnPosition{claim: claim, n: last + 1, last: lastRow}
	got, err := l.rows.get(ctx, claim.id, []txnKey{beginKey(c, pos.n)})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	pos.begin = got[0]
	return pos, nil
}

// expired reports whether the open transaction outlived its timeout.
func (l *txnLedger) expired(pos *txnPosition) bool {
	return pos.begin != nil && l.now().UnixMilli() > pos.begin.writtenAtMs+int64(pos.begin.timeoutMs)
}

// begin makes sure the producer's open transaction has begun (AddPartitionsToTxn).
// The begin row names the partitions of the AddPartitionsToTxn that began
// the transaction, so every instance's Admin answers know them.
// A transaction past its timeout is aborted instead, and the producer
// fenced, as Kafka bumps the epoch when it aborts one. stagingEnd gives the
// begin row's staging offset, read before the row is written: every batch
// of the transaction is staged after it.
func (l *txnLedger) begin(ctx context.Context, p kafkaproto.TxnProducer, parts map[string][]int32, stagingEnd func(context.Context) (int64, error)) (*txnPosition, error) {
	pos, err := l.position(ctx, p)
	if err != nil {
		return nil, err
	}
	if l.expired(pos) {
		return nil, l.abortExpired(ctx, pos)
	}
	if pos.begin != nil {
		return pos, nil
	}
	from, err := stagingEnd(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	row := &txnRow{id: p.TransactionalID, key: beginKey(pos.claim.key.claim, pos.n), producerID: p.ProducerID, epoch: p.Epoch,
		timeoutMs: pos.claim.timeoutMs, writtenBy: randomInt63(), writtenAtMs: l.now().UnixMilli(), stagingOffset: from,
		reason: encodeTxnPartitions(parts)}
	if err := l.rows.insert(ctx, row); err != nil {
		return nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	got, err := l.rows.get(ctx, p.TransactionalID, []txnKey{row.key})
	if err != nil || got[0] == nil {
		return nil, fmt.Errorf("%w: begin transaction %d of %q: not readable after its write: %v", kafkaproto.ErrCoordinatorLoadInProgress, pos.n, p.TransactionalID, err)
	}
	pos.begin = got[0] // a racing begin's row stands: same transaction
	return pos, nil
}

// abortExpired writes the abort of an expired transaction and answers the
// producer PRODUCER_FENCED, unless an EndTxn got its commit in first.
func (l *txnLedger) abortExpired(ctx context.Context, pos *txnPosition) error {
	won, err := l.decide(ctx, pos, outcomeAbort, reasonTimeout)
	if err != nil {
		return err
	}
	if won.outcome == outcomeAbort {
		return fmt.Errorf("%w: %w: transaction %d of %q, %d ms, aborted",
			kafkaproto.ErrProducerFenced, errTxnTimedOut, pos.n, pos.claim.id, pos.begin.timeoutMs)
	}
	return nil
}

// decide writes outcome for the open transaction and returns the outcome
// that stands (another instance's may have come first).
func (l *txnLedger) decide(ctx context.Context, pos *txnPosition, outcome, reason string) (*txnRow, error) {
	return l.decideAt(ctx, pos, outcome, reason, 0)
}

// decideAt is decide with the staging end offset of a commit.
func (l *txnLedger) decideAt(ctx context.Context, pos *txnPosition, outcome, reason string, stagingEnd int64) (*txnRow, error) {
	row := &txnRow{id: pos.claim.id, key: outcomeKey(pos.claim.key.claim, pos.n), producerID: pos.claim.producerID, epoch: pos.claim.epoch,
		writtenBy: randomInt63(), writtenAtMs: l.now().UnixMilli(), outcome: outcome, reason: reason, stagingOffset: stagingEnd}
	if err := l.rows.insert(ctx, row); err != nil {
		return nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	got, err := l.rows.get(ctx, pos.claim.id, []txnKey{row.key})
	if err != nil || got[0] == nil {
		return nil, fmt.Errorf("%w: outcome of transaction %d of %q: not readable after its write: %v", kafkaproto.ErrCoordinatorLoadInProgress, pos.n, pos.claim.id, err)
	}
	return got[0], nil
}

// end decides the producer's open transaction (EndTxn) and returns the
// outcome row that stands, with the position it was decided at (its begin
// is nil when the EndTxn repeated an earlier one's outcome). An EndTxn repeated after its transaction was
// decided the same way (a retry whose answer was lost; Flink's committer
// after a restart) gets that outcome again. Errors: PRODUCER_FENCED for a
// commit that lost to an abort (a timeout, a newer claim), INVALID_TXN_STATE
// for an abort that lost to a commit or an EndTxn with no transaction.
//
// A commit's row holds the staging end offset read before it is written:
// every batch of the transaction was staged before EndTxn, so before it.
func (l *txnLedger) end(ctx context.Context, p kafkaproto.TxnProducer, commit bool, stagingEnd func(context.Context) (int64, error)) (*txnRow, *txnPosition, error) {
	pos, err := l.position(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	return l.endAt(ctx, p, pos, commit, stagingEnd)
}

// knownPosition reads, in one lookup, whether transaction n of claim is
// still p's open transaction: the claim is p's and the newest, the
// transaction began and has no outcome. ok is false otherwise (the caller
// looks the position up in full).
func (l *txnLedger) knownPosition(ctx context.Context, p kafkaproto.TxnProducer, claim, n int64) (pos *txnPosition, ok bool, err error) {
	got, err := l.rows.get(ctx, p.TransactionalID, []txnKey{{claim: claim, txn: txnClaimRow}, {claim: claim + 1, txn: txnClaimRow},
		beginKey(claim, n), outcomeKey(claim, n)})
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	c := got[0]
	if c == nil || c.producerID != p.ProducerID || c.epoch != p.Epoch || got[1] != nil || got[2] == nil || got[3] != nil {
		return nil, false, nil
	}
	return &txnPosition{claim: c, n: n, begin: got[2]}, true, nil
}

// endAt is end from a known position.
func (l *txnLedger) endAt(ctx context.Context, p kafkaproto.TxnProducer, pos *txnPosition, commit bool, stagingEnd func(context.Context) (int64, error)) (*txnRow, *txnPosition, error) {
	want := outcomeAbort
	if commit {
		want = outcomeCommit
	}
	var err error
	if pos.begin == nil {
		switch {
		case pos.last != nil && pos.last.outcome == want:
			return pos.last, pos, nil
		case pos.last != nil && commit && pos.last.reason != reasonEndTxn:
			// Aborted by a timeout or a newer producer before this
			// commit was read: Kafka would have bumped the epoch.
			return nil, nil, fmt.Errorf("%w: transaction %d of %q was aborted (%s)", kafkaproto.ErrProducerFenced, pos.n-1, p.TransactionalID, pos.last.reason)
		}
		return nil, nil, fmt.Errorf("%w: %q has no open transaction to %s", kafkaproto.ErrInvalidTxnState, p.TransactionalID, want)
	}
	reason := reasonEndTxn
	if commit && l.expired(pos) {
		want, reason = outcomeAbort, reasonTimeout
	}
	var to int64
	if want == outcomeCommit {
		if to, err = stagingEnd(ctx); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
		}
	}
	won, err := l.decideAt(ctx, pos, want, reason, to)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case commit && won.outcome != outcomeCommit && won.reason == reasonTimeout:
		return nil, nil, fmt.Errorf("%w: %w: transaction %d of %q was aborted", kafkaproto.ErrProducerFenced, errTxnTimedOut, pos.n, p.TransactionalID)
	case commit && won.outcome != outcomeCommit:
		return nil, nil, fmt.Errorf("%w: transaction %d of %q was aborted (%s)", kafkaproto.ErrProducerFenced, pos.n, p.TransactionalID, won.reason)
	case !commit && won.outcome != outcomeAbort:
		return nil, nil, fmt.Errorf("%w: transaction %d of %q was committed", kafkaproto.ErrInvalidTxnState, pos.n, p.TransactionalID)
	}
	return won, pos, nil
}

// settle decides the open transaction of a claim that a newer claim
// replaced (InitProducerId): abort it if it began and has no outcome. It
// returns the outcome that stands (a commit that got in first must still
// be applied), nil if there was no open transaction.
func (l *txnLedger) settle(ctx context.Context, old *txnRow) (*txnRow, error) {
	pos, err := l.positionOf(ctx, old)
	if err != nil || pos.begin == nil {
		return nil, err
	}
	return l.decide(ctx, pos, outcomeAbort, reasonFenced)
}

// committed is a decided commit with what its apply needs.
type committed struct {
	claim, n int64
	begin    *txnRow // its stagingOffset is where the batches start
	outcome  *txnRow // its stagingOffset is where they end
}

// lastCommit returns the claim's last transaction if it was committed and
// not marked applied, nil otherwise.
func (l *txnLedger) lastCommit(ctx context.Context, claim *txnRow) (*committed, error) {
	c := claim.key.claim
	n, row, err := highestRow(ctx, l.rows, claim.id, func(n int64) txnKey { return outcomeKey(c, n) })
	if err != nil || row == nil || row.outcome != outcomeCommit {
		return nil, err
	}
	got, err := l.rows.get(ctx, claim.id, []txnKey{beginKey(c, n), appliedKey(c, n)})
	if err != nil || got[1] != nil {
		return nil, err
	}
	if got[0] == nil {
		return nil, fmt.Errorf("transaction %d of claim %d of %q has an outcome but no begin row", n, c, claim.id)
	}
	return &committed{claim: c, n: n, begin: got[0], outcome: row}, nil
}

// markApplied records that a commit's batches are in their tables.
func (l *txnLedger) markApplied(ctx context.Context, id string, cm *committed) error {
	return l.rows.insert(ctx, &txnRow{id: id, key: appliedKey(cm.claim, cm.n), writtenBy: randomInt63(), writtenAtMs: l.now().UnixMilli()})
}
