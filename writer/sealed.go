package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// Sealed batches carry a writer id and batch sequence chosen by the caller
// (exactly-once writes: the caller derives them from state it keeps in
// Fluss, so that a batch re-sent after a crash, by any instance, gets the
// same stamp and Fluss drops the copy). They have their own queue per
// bucket, beside the merged one: no other row is ever added to them, and
// the sender keeps their order and in-flight state per (writer id,
// bucket) instead of under its own writer id.

// Op is one row operation of a sealed batch: fluss.WriteAppend with Row for
// a log table, fluss.WriteUpsert (Key, Row) or fluss.WriteDelete (Key) for a
// primary-key table.
type Op struct {
	Kind fluss.WriteOp
	Key  []byte
	Row  fluss.Row
}

// ErrSequenceRejected wraps the Fluss answer OUT_OF_ORDER_SEQUENCE to a
// sealed batch whose predecessors of the same writer and bucket were all
// resolved: the server does not hold the sequence before it (its writer
// state is gone, or the caller's sequences are wrong). Nothing was written.
var ErrSequenceRejected = errors.New("writer: sealed batch sequence rejected")

// WriteSealed queues ops as one sealed Fluss batch for (partitionID,
// bucket), stamped with writerID and sequence, and returns the handle of
// its first record at once (the batch's records complete together; Offset
// is the batch's base offset for a log table). The caller owns the
// sequences: per (writerID, bucket) it must hand batches over in sequence
// order; the writer sends them in that order, at most
// Config.MaxInflightPerBucket at a time, alone in their bucket's slot of
// a request, and resends a retry with the same stamp. Fluss's answer to a
// duplicate (success with the original batch's offsets) is a success.
// An OUT_OF_ORDER_SEQUENCE answer at the head of the writer's batches
// (ErrSequenceRejected) and an unknown outcome (ErrDeliveryTimeout, retries
// exhausted) fail the batch and nothing else: the writer's own writer id
// is never reset for them. Blocking is as for Write. ops must not be empty.
func (w *Writer) WriteSealed(ctx context.Context, t *Table, partitionID int64, bucket int32, writerID int64, sequence int32, ops []Op) (Handle, error) {
	if len(ops) == 0 {
		return Handle{}, fmt.Errorf("writer: table %s: empty sealed batch", t.spec.Path)
	}
	if writerID < 0 || sequence < 0 {
		return Handle{}, fmt.Errorf("writer: table %s: sealed batch needs a writer id and sequence, got %d/%d", t.spec.Path, writerID, sequence)
	}
	for _, op := range ops {
		if op.Kind == fluss.WriteAppend && t.kv || op.Kind != fluss.WriteAppend && !t.kv {
			return Handle{}, fmt.Errorf("writer: %s on table %s (primary key: %v)", op.Kind, t.spec.Path, t.kv)
		}
	}
	return w.acc.writeSealed(ctx, t, partitionID, bucket, writerID, sequence, ops)
}

func (a *accumulator) writeSealed(ctx context.Context, t *Table, partitionID int64, bucket int32, writerID int64, sequence int32, ops []Op) (Handle, error) {
	if a.closed.Load() {
		return Handle{}, ErrClosed
	}
	sealed := t.sealedQueues(partitionID)
	if bucket < 0 || int(bucket) >= len(sealed) {
		return Handle{}, fmt.Errorf("writer: table %s partition %d has %d buckets, not bucket %d", t.spec.Path, partitionID, len(sealed), bucket)
	}
	q := sealed[bucket]
	bld, size, err := a.newBatchBuilder(ctx, t)
	if err != nil {
		return Handle{}, err
	}
	b := &Batch{buildLock: make(chan struct{}, 1), queue: q, created: time.Now(), builder: bld, writerID: writerID, sequence: sequence, done: make(chan struct{})}
	b.reserved.Store(size)
	for _, op := range ops {
		if _, err := b.addLocked(record{op: op.Kind, key: op.Key, row: op.Row}, a.cfg.BatchSize); err != nil {
			a.mem.release(&t.mem, b.reserved.Swap(0))
			t.putBuilder(bld)
			return Handle{}, err
		}
	}
	b.full = true // sealed: nothing else joins it
	a.filled(b)
	q.mu.Lock()
	a.track(b) // counted before the closed check, as in write
	if a.closed.Load() {
		q.mu.Unlock()
		b.complete(-1, ErrClosed)
		a.wake()
		return Handle{}, ErrClosed
	}
	q.batches = append(q.batches, b)
	q.n.Add(1)
	q.mu.Unlock()
	a.wake()
	return Handle{b: b, idx: 0}, nil
}

// sealedQueues returns the partition's sealed queues, one per bucket of
// its merged queues, creating them on first use.
func (t *Table) sealedQueues(partitionID int64) []*bucketQueue {
	pq := t.partition(partitionID)
	if qs := pq.sealed.Load(); qs != nil {
		return *qs
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if qs := pq.sealed.Load(); qs != nil {
		return *qs
	}
	qs := make([]*bucketQueue, len(pq.queues))
	for i, m := range pq.queues {
		qs[i] = &bucketQueue{acc: t.acc, table: t, partitionID: partitionID, bucket: m.bucket, buckets: m.buckets, sealed: true}
	}
	pq.sealed.Store(&qs)
	t.acc.addQueues(qs)
	return qs
}

// sealedKey is one (writer id, bucket) of sealed batches.
type sealedKey struct {
	q        *bucketQueue
	writerID int64
}

// sealedState holds the sealed batches of one (writer id, bucket) drained
// and not completed, in sequence order.
type sealedState struct {
	inflight []*Batch
}

func (s *sender) sealedOf(b *Batch) *sealedState {
	k := sealedKey{b.queue, b.writerID}
	ss := s.sealed[k]
	if ss == nil {
		ss = &sealedState{}
		s.sealed[k] = ss
	}
	return ss
}

// sealedReady reports whether the sealed head batch b may be sent now: a
// retry only as its writer's first unresolved batch, a fresh batch within
// the in-flight cap.
func (s *sender) sealedReady(b *Batch) bool {
	ss := s.sealed[sealedKey{b.queue, b.writerID}]
	if b.attempts > 0 {
		return ss != nil && len(ss.inflight) > 0 && ss.inflight[0] == b
	}
	return ss == nil || len(ss.inflight) < s.cfg.MaxInflightPerBucket
}

// forgetSealed removes b from its writer's in-flight list.
func (s *sender) forgetSealed(b *Batch) {
	k := sealedKey{b.queue, b.writerID}
	ss := s.sealed[k]
	if ss == nil {
		return
	}
	for j, x := range ss.inflight {
		if x == b {
			ss.inflight = append(ss.inflight[:j], ss.inflight[j+1:]...)
			break
		}
	}
	if len(ss.inflight) == 0 {
		delete(s.sealed, k) // bounded by the batches in flight
	}
}

// handleSealed decides a sealed batch's outcome. Unlike merged batches it
// never touches the sender's writer id or other batches' sequences: the
// caller owns them.
func (s *sender) handleSealed(b *Batch, offset int64, err error, now time.Time, tm *tableMetrics) {
	st := s.state(b.queue)
	code := errCode(err)
	if err == nil || code == codeDuplicateSequence || (code == codeOutOfOrderSequence && writtenBefore(err, b)) {
		if err != nil {
			offset = -1 // a copy of a batch written before
		}
		s.succeed(b, st, offset, tm)
		return
	}
	tm.errorCode(code)
	retriable := fluss.IsRetriable(err)
	if code == codeOutOfOrderSequence {
		// Expected while an earlier batch of the writer is unresolved (it
		// failed retriably and is resent first); final at the head.
		ss := s.sealed[sealedKey{b.queue, b.writerID}]
		retriable = ss != nil && len(ss.inflight) > 0 && ss.inflight[0] != b
		if !retriable {
			err = fmt.Errorf("%w: writer %d sequence %d: %w", ErrSequenceRejected, b.writerID, b.sequence, err)
		}
	}
	exhausted := retriable && b.attempts > s.cfg.Retries
	if retriable && !exhausted && now.Before(b.created.Add(s.cfg.DeliveryTimeout)) {
		st.backoffUntil = now.Add(s.backoff(st.retryAttempts))
		st.retryAttempts++
		tm.retries.Inc()
		s.log.Debug("retrying sealed batch", slog.String("table", b.Table().Path().String()),
			slog.Int("bucket", int(b.Bucket())), slog.Int64("writer_id", b.writerID),
			slog.Int("sequence", int(b.sequence)), slog.Int("attempt", b.attempts), slog.Any("err", err))
		b.queue.reenqueue(b)
		return
	}
	switch {
	case exhausted:
		err = fmt.Errorf("no retry left after %d attempts (retries %d): %w", b.attempts, s.cfg.Retries, err)
	case retriable:
		err = fmt.Errorf("%w after %d attempts: %w", ErrDeliveryTimeout, b.attempts, err)
	}
	s.finish(b, st, -1, err)
}
