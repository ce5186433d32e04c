package transactions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// txnSweeper finishes the transactions nobody comes back for
// (docs/transactions.md): a transaction whose producer died with it open is
// aborted once past its timeout, and a commit whose instance died before
// applying it, and whose producer never sends EndTxn or InitProducerId
// again (Flink commits each transactional id once), is applied. Every
// instance runs one: it tails the transactions table's changelog (every
// row is written once, first_row, so the log is the table's history) and
// keeps the transactions still open or committed and not marked applied.
// What it decides goes through the same insert-if-absent rows as everyone
// else, so instances sweeping together, or racing a producer, agree; two
// applies of one commit write once (the exactly-once path).
type txnSweeper struct {
	t     *Coordinator
	fetch func(ctx context.Context, req *fluss.FetchLogRequest) ([]fluss.FetchedBucket, error)
	// interval between sweeps; applyGrace is how long a commit may stay
	// unapplied before the sweeper applies it (the deciding instance
	// applies at once, in about a round trip per partition).
	interval, applyGrace time.Duration
	now                  func() time.Time

	offsets map[int32]int64 // next changelog offset per bucket
	pending map[txnRef]*sweptTxn
}

// txnRef names transaction n of claim of a transactional id.
type txnRef struct {
	id       string
	claim, n int64
}

type sweptTxn struct {
	begin, outcome *txnRow
}

const (
	defaultSweepInterval = 5 * time.Second
	defaultApplyGrace    = 10 * time.Second
)

func newTxnSweeper(t *Coordinator, fetch func(context.Context, *fluss.FetchLogRequest) ([]fluss.FetchedBucket, error)) *txnSweeper {
	return &txnSweeper{t: t, fetch: fetch, interval: defaultSweepInterval, applyGrace: defaultApplyGrace, now: time.Now,
		offsets: map[int32]int64{}, pending: map[txnRef]*sweptTxn{}}
}

// run sweeps at once and then every interval until ctx ends. A failed
// sweep is logged and tried again at the next one.
func (w *txnSweeper) run(ctx context.Context) {
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	failing := false
	for {
		err := w.sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			w.t.log.Warn("transaction sweep failed; retrying at the next one", slog.Any("err", err))
			failing = true
		case err == nil && failing:
			w.t.log.Info("transaction sweep works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sweep reads the changelog's new rows and acts on what is overdue.
func (w *txnSweeper) sweep(ctx context.Context) error {
	t := w.t
	tab, ok := t.ledger.rows.(*txnTable)
	if !ok {
		return nil
	}
	if err := tab.Open(ctx); err != nil {
		return err
	}
	readFrom := w.now().UnixMilli()
	if err := w.read(ctx, tab); err != nil {
		return err
	}
	defer w.publish(readFrom)
	// One transaction that cannot be finished (its topic has no route
	// here, Fluss refuses) does not hold the others back.
	now := w.now().UnixMilli()
	var errs []error
	for ref, st := range w.pending {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var err error
		switch {
		case st.outcome == nil && st.begin != nil && now > st.begin.writtenAtMs+int64(st.begin.timeoutMs):
			err = w.abort(ctx, ref, st)
		case st.outcome != nil && st.outcome.outcome == outcomeCommit && now > st.outcome.writtenAtMs+w.applyGrace.Milliseconds():
			err = w.apply(ctx, ref, st)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("transaction %d of claim %d of %q: %w", ref.n, ref.claim, ref.id, err))
		}
	}
	return errors.Join(errs...)
}

// read applies the changelog rows written since the last read.
func (w *txnSweeper) read(ctx context.Context, tab *txnTable) error {
	schema := &tab.Info.Descriptor.Schema
	format := tab.Info.Descriptor.LogFormat()
	for b := range int32(tab.Info.Descriptor.BucketCount) {
		for {
			off := w.offsets[b]
			got, err := w.fetch(ctx, &fluss.FetchLogRequest{TableID: tab.Info.TableID,
				Buckets: []fluss.FetchBucket{{PartitionID: fluss.NoPartition, Bucket: b, Offset: off}}})
			if err != nil {
				return fmt.Errorf("read the transactions changelog: %w", err)
			}
			if len(got) != 1 || got[0].Err != nil {
				return fmt.Errorf("read the transactions changelog, bucket %d from %d: %v", b, off, got)
			}
			recs, err := fluss.DecodeLogBatchesFormat(got[0].Records, schema, format)
			if err != nil {
				return fmt.Errorf("decode the transactions changelog: %w", err)
			}
			next := off
			for _, r := range recs {
				if r.Offset < off {
					continue
				}
				next = r.Offset + 1
				if r.ChangeType != fluss.ChangeInsert {
					continue
				}
				row, err := txnRowFrom(r.Row)
				if err != nil {
					return err
				}
				w.note(row)
			}
			w.offsets[b] = next
			if next == off {
				break
			}
		}
	}
	return nil
}

// note files one row: a begin or a commit waits, an abort or an applied
// mark ends the wait.
func (w *txnSweeper) note(r *txnRow) {
	switch k := r.key.txn; {
	case k == txnClaimRow || isWriterAgreement(r.id):
	case k >= 0 && k%2 == 0: // begin
		w.entry(txnRef{r.id, r.key.claim, k / 2}).begin = r
	case k >= 0: // outcome
		ref := txnRef{r.id, r.key.claim, k / 2}
		if r.outcome == outcomeAbort {
			delete(w.pending, ref)
			return
		}
		w.entry(ref).outcome = r
	default: // applied mark
		delete(w.pending, txnRef{r.id, r.key.claim, -2 - k})
	}
}

func (w *txnSweeper) entry(ref txnRef) *sweptTxn {
	st := w.pending[ref]
	if st == nil {
		st = &sweptTxn{}
		w.pending[ref] = st
	}
	return st
}

// abort decides an expired open transaction; a commit that got in first
// is kept for applying.
func (w *txnSweeper) abort(ctx context.Context, ref txnRef, st *sweptTxn) error {
	t := w.t
	claim, err := t.claims.claim(ctx, ref.id, ref.claim)
	if err != nil || claim == nil {
		return fmt.Errorf("read its claim: %v", err)
	}
	won, err := t.ledger.decide(ctx, &txnPosition{claim: claim, n: ref.n, begin: st.begin}, outcomeAbort, reasonTimeout)
	if err != nil {
		return err
	}
	if won.outcome == outcomeAbort {
		delete(w.pending, ref)
		if won.reason == reasonTimeout {
			t.m.outcomes.WithLabelValues("timeout").Inc()
		}
		w.t.log.Info("transaction aborted: its producer did not end it within its timeout", slog.String("transactional_id", ref.id),
			slog.Int64("producer_id", claim.producerID), slog.Int("epoch", int(claim.epoch)), slog.Int("timeout_ms", int(st.begin.timeoutMs)))
		return nil
	}
	st.outcome = won
	return nil
}

// apply finishes a commit left unapplied.
func (w *txnSweeper) apply(ctx context.Context, ref txnRef, st *sweptTxn) error {
	t := w.t
	claim, err := t.claims.claim(ctx, ref.id, ref.claim)
	if err != nil || claim == nil {
		return fmt.Errorf("read its claim: %v", err)
	}
	begin := st.begin
	if begin == nil {
		got, err := t.ledger.rows.get(ctx, ref.id, []txnKey{beginKey(ref.claim, ref.n)})
		if err != nil || got[0] == nil {
			return fmt.Errorf("read its begin row: %v", err)
		}
		begin = got[0]
	}
	if err := w.t.applyCommit(ctx, ref.id, claim, &committed{claim: ref.claim, n: ref.n, begin: begin, outcome: st.outcome}); err != nil {
		return err
	}
	delete(w.pending, ref)
	t.m.outcomes.WithLabelValues("commit").Inc()
	w.t.log.Info("committed transaction applied by the sweeper: the instance that decided it did not finish", slog.String("transactional_id", ref.id),
		slog.Int64("producer_id", claim.producerID), slog.Int("epoch", int(claim.epoch)))
	return nil
}

// publish hands the open transactions to ListTransactions and
// DescribeProducers: the changelog was read up to at least readFromMs.
func (w *txnSweeper) publish(readFromMs int64) {
	open := make([]kafkaproto.TxnListing, 0, len(w.pending))
	var running []openTxn
	for ref, st := range w.pending {
		l := kafkaproto.TxnListing{TransactionalID: ref.id, StartMs: -1, ProducerID: -1}
		switch {
		case st.outcome != nil:
			l.State, l.ProducerID = "PrepareCommit", st.outcome.producerID
		case st.begin != nil:
			l.State, l.ProducerID, l.StartMs = "Ongoing", st.begin.producerID, st.begin.writtenAtMs
			running = append(running, openTxn{ref: ref, producerID: st.begin.producerID, epoch: st.begin.epoch,
				startMs: st.begin.writtenAtMs, stagingOffset: st.begin.stagingOffset, begin: st.begin})
		default:
			continue
		}
		open = append(open, l)
	}
	w.t.view.set(open, running, readFromMs)
}

// Sweep runs the coordinator's sweeper until ctx ends: it tails the
// transactions table's changelog (read with fetch), aborts transactions
// past their timeout and applies commits left unapplied.
func (t *Coordinator) Sweep(ctx context.Context, fetch func(context.Context, *fluss.FetchLogRequest) ([]fluss.FetchedBucket, error)) {
	newTxnSweeper(t, fetch).run(ctx)
}
