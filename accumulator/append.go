package accumulator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/fluss-kafka/gateway/fluss"
)

// Append queues one row operation and returns its Handle at once: op is
// fluss.WriteAppend for a log table, fluss.WriteUpsert or fluss.WriteDelete
// for a primary-key table; key is the encoded primary key (primary-key
// tables), row the row (unused by a delete). partitionID is NoPartition for
// a non-partitioned table; bucket is the bucket chosen by the caller (from
// the bucket key) or StickyBucket. Append blocks only when a new batch needs
// buffer memory that is not free: then it waits up to
// Config.BufferWaitTimeout (ErrBufferFull) or until ctx ends. Key and row
// are copied into the batch before Append returns.
func (a *Accumulator) Append(ctx context.Context, t *Table, partitionID int64, bucket int32, op fluss.WriteOp, key []byte, row fluss.Row) (Handle, error) {
	switch op {
	case fluss.WriteAppend:
		if t.kv {
			return Handle{}, fmt.Errorf("accumulator: append to primary-key table %s: use upsert or delete", t.spec.Path)
		}
	case fluss.WriteUpsert, fluss.WriteDelete:
		if !t.kv {
			return Handle{}, fmt.Errorf("accumulator: %s on log table %s: not a primary-key table", op, t.spec.Path)
		}
	default:
		return Handle{}, fmt.Errorf("accumulator: table %s: invalid write op %v", t.spec.Path, op)
	}
	return a.append(ctx, t, partitionID, bucket, record{op: op, key: key, row: row})
}

// Op is one row operation of a sealed batch: fluss.WriteAppend with Row for
// a log table, fluss.WriteUpsert (Key, Row) or fluss.WriteDelete (Key) for a
// primary-key table.
type Op struct {
	Kind fluss.WriteOp
	Key  []byte
	Row  fluss.Row
}

// Seal is the stamp a caller gives a sealed batch.
type Seal struct {
	WriterID int64
	Sequence int32
	// Fresh says that no batch under this writer id and sequence can have
	// reached Fluss before (the caller never handed the pair out, and no
	// crashed instance can have). The sender may then send it in one
	// bucket's records entry with other fresh batches: Fluss skips a whole
	// entry when one batch in it is a copy, which a fresh batch cannot be.
	Fresh bool
}

// AppendSealed queues ops as one sealed Fluss batch for (partitionID,
// bucket), stamped with writerID and sequence, and returns the handle of
// its first record at once (the batch's records complete together; Offset
// is the batch's base offset for a log table). Sealed batches carry a stamp
// the caller chose (exactly-once writes derive it from state kept in Fluss,
// so that a batch re-sent after a crash, by any instance, gets the same
// stamp and Fluss drops the copy); they have their own queue per bucket,
// beside the merged one, and nothing else ever joins them. The caller owns
// the sequences: per (writerID, bucket) it must hand batches over in
// sequence order; the sender keeps that order (see its package doc).
// Blocking is as for Append. ops must not be empty.
func (a *Accumulator) AppendSealed(ctx context.Context, t *Table, partitionID int64, bucket int32, seal Seal, ops []Op) (Handle, error) {
	writerID, sequence := seal.WriterID, seal.Sequence
	if len(ops) == 0 {
		return Handle{}, fmt.Errorf("accumulator: table %s: empty sealed batch", t.spec.Path)
	}
	if writerID < 0 || sequence < 0 {
		return Handle{}, fmt.Errorf("accumulator: table %s: sealed batch needs a writer id and sequence, got %d/%d", t.spec.Path, writerID, sequence)
	}
	for _, op := range ops {
		if op.Kind == fluss.WriteAppend && t.kv || op.Kind != fluss.WriteAppend && !t.kv {
			return Handle{}, fmt.Errorf("accumulator: %s on table %s (primary key: %v)", op.Kind, t.spec.Path, t.kv)
		}
	}
	if a.closed.Load() {
		return Handle{}, ErrClosed
	}
	sealed := t.sealedQueues(partitionID)
	if bucket < 0 || int(bucket) >= len(sealed) {
		return Handle{}, fmt.Errorf("accumulator: table %s partition %d has %d buckets, not bucket %d", t.spec.Path, partitionID, len(sealed), bucket)
	}
	q := sealed[bucket]
	bld, schema, err := t.getBuilder()
	if err != nil {
		return Handle{}, fmt.Errorf("append to table %s: new batch builder: %w", t.spec.Path, err)
	}
	b := newBatch(q, bld, schema)
	b.sealedID, b.sealedSeq, b.sealedFresh = writerID, sequence, seal.Fresh
	fail := func(err error) (Handle, error) {
		a.mem.release(&t.mem, b.reserved.Swap(0))
		t.putBuilder(bld, schema)
		return Handle{}, err
	}
	for _, op := range ops {
		if _, err := b.addLocked(record{op: op.Kind, key: op.Key, row: op.Row}, a.cfg.BatchSize); err != nil {
			return fail(err)
		}
	}
	// Charged its size, not the BatchSize a growing batch reserves: a
	// sealed batch is complete when queued (often a few records: one Kafka
	// batch for one bucket), and a producer-partition keeps up to five in
	// flight per target; at BatchSize each they held the table's share of
	// the budget with little data. Beyond BatchSize the rest is taken
	// without waiting, as a growing batch's encoding does.
	if need := int64(b.builder.EstimatedSize()) - b.reserved.Load(); need > 0 {
		wait := min(need, int64(a.cfg.BatchSize))
		if err := a.mem.acquire(ctx, &t.mem, wait, a.cfg.BufferWaitTimeout, a.wake); err != nil {
			if errors.Is(err, ErrBufferFull) {
				a.metrics.bufferFull.Inc()
			}
			return fail(fmt.Errorf("append to table %s: %w", t.spec.Path, err))
		}
		if need > wait {
			a.mem.force(&t.mem, need-wait)
		}
		b.reserved.Add(need)
	}
	b.full = true // sealed: nothing else joins it
	a.filled(b)
	q.mu.Lock()
	a.track(b) // counted before the closed check, as in append
	if a.closed.Load() {
		q.mu.Unlock()
		b.Complete(-1, ErrClosed)
		a.wake()
		return Handle{}, ErrClosed
	}
	q.batches = append(q.batches, b)
	q.n.Add(1)
	a.busy.listed(q)
	q.mu.Unlock()
	a.wake()
	return Handle{b: b, idx: 0}, nil
}

// record is one row operation on its way into a batch.
type record struct {
	op  fluss.WriteOp
	key []byte
	row fluss.Row
}

// append queues r (already checked against the table's kind). It returns at
// once, unless a new batch needs buffer memory that is not free: then it
// waits up to Config.BufferWaitTimeout (ErrBufferFull) or until ctx ends.
func (a *Accumulator) append(ctx context.Context, t *Table, partitionID int64, bucket int32, r record) (Handle, error) {
	if a.closed.Load() {
		return Handle{}, ErrClosed
	}
	sticky := bucket == StickyBucket
	pq := t.partition(partitionID)
	nb := len(pq.queues)
	if !sticky && (bucket < 0 || int(bucket) >= nb) {
		return Handle{}, fmt.Errorf("accumulator: table %s partition %d has %d buckets, not bucket %d", t.spec.Path, partitionID, nb, bucket)
	}
	if sticky {
		bucket = pq.sticky.Load()
	}
	switched := false
	for {
		q := pq.queues[bucket]
		q.mu.Lock()
		if h, ok, err := q.tryAppendLocked(r); ok || err != nil {
			q.mu.Unlock()
			return h, err
		}
		q.mu.Unlock()
		if sticky && !switched && nb > 1 {
			// The sticky bucket needs a new batch: move on first, so that one
			// batch fills one bucket and the next fills another.
			switched = true
			next := (bucket + 1 + int32(rand.IntN(nb-1))) % int32(nb)
			if pq.sticky.CompareAndSwap(bucket, next) {
				bucket = next
			} else {
				bucket = pq.sticky.Load()
			}
			continue
		}

		// A new batch: reserve its memory and get a builder outside the lock.
		bld, schema, size, err := a.newBatchBuilder(ctx, t)
		if err != nil {
			return Handle{}, err
		}
		q.mu.Lock()
		if a.closed.Load() {
			q.mu.Unlock()
			a.mem.release(&t.mem, size)
			t.putBuilder(bld, schema)
			return Handle{}, ErrClosed
		}
		if h, ok, err := q.tryAppendLocked(r); ok || err != nil || schema != t.schema.Load() {
			// Someone else opened a batch meanwhile, or the schema
			// changed: try again with the current one.
			q.mu.Unlock()
			a.mem.release(&t.mem, size)
			t.putBuilder(bld, schema)
			if ok || err != nil {
				return h, err
			}
			continue
		}
		b := newBatch(q, bld, schema)
		b.reserved.Store(size)
		h, err := b.addLocked(r, a.cfg.BatchSize)
		if err != nil {
			q.mu.Unlock()
			a.mem.release(&t.mem, size)
			t.putBuilder(bld, schema)
			return Handle{}, err
		}
		// Count the batch, then check closed again: the sender stops once
		// the accumulator is closed and nothing is incomplete, so a batch
		// must be counted before the check that lets it in.
		a.track(b)
		if a.closed.Load() {
			q.mu.Unlock()
			b.Complete(-1, ErrClosed) // returns memory and builder, leaves the incomplete set
			a.wake()                  // a sender waiting for this batch looks again
			return Handle{}, ErrClosed
		}
		if b.full {
			a.filled(b) // one record filled it
		}
		q.batches = append(q.batches, b)
		q.n.Add(1)
		a.busy.listed(q)
		q.mu.Unlock()
		a.wake()
		return h, nil
	}
}

// filled is called, under the queue's lock or before the batch is queued,
// once b is full: nothing joins it any more. It takes the size
// estimate the sender plans with (the builder is not read again once a
// build may be running) and starts encoding it.
func (a *Accumulator) filled(b *Batch) {
	b.estimated = b.builder.EstimatedSize()
	a.prebuild(b)
}

// prebuild encodes and compresses a full batch at once on a goroutine of
// its own, at most GOMAXPROCS at a time (else the sender builds it when it
// sends it, as for every batch not full). A full batch usually waits for
// its bucket's requests in flight; built early, it waits as its compressed
// bytes (a third or less of the columns at ZSTD), charged that much, and
// its builder goes back to the table's free list instead of a new one
// growing for the next batch. The compression work is the same.
func (a *Accumulator) prebuild(b *Batch) {
	select {
	case a.prebuilds <- struct{}{}:
	default:
		return
	}
	a.prebuilding.Add(1)
	go func() {
		defer a.prebuilding.Done()
		defer func() { <-a.prebuilds }()
		_ = b.encode() // a failure stays on the batch for its send
	}()
}

// newBatchBuilder reserves a new batch's memory (waiting up to
// BufferWaitTimeout) and gets it a builder.
func (a *Accumulator) newBatchBuilder(ctx context.Context, t *Table) (BatchBuilder, *tableSchema, int64, error) {
	size := int64(a.cfg.BatchSize)
	if err := a.mem.acquire(ctx, &t.mem, size, a.cfg.BufferWaitTimeout, a.wake); err != nil {
		if errors.Is(err, ErrBufferFull) {
			a.metrics.bufferFull.Inc()
		}
		return nil, nil, 0, fmt.Errorf("append to table %s: %w", t.spec.Path, err)
	}
	bld, schema, err := t.getBuilder()
	if err != nil {
		a.mem.release(&t.mem, size)
		return nil, nil, 0, fmt.Errorf("append to table %s: new batch builder: %w", t.spec.Path, err)
	}
	return bld, schema, size, nil
}

// tryAppendLocked appends to the last open batch. ok is false when there is
// none (or it is full).
func (q *Queue) tryAppendLocked(r record) (Handle, bool, error) {
	if len(q.batches) == 0 {
		return Handle{}, false, nil
	}
	b := q.batches[len(q.batches)-1]
	if !b.full && b.schema != q.table.schema.Load() {
		// Built for a schema replaced since: closed, so that rows of the
		// new schema go to a batch of it.
		b.full = true
		q.acc.filled(b)
	}
	if b.full {
		return Handle{}, false, nil
	}
	wasFull := b.full
	h, err := b.addLocked(r, q.acc.cfg.BatchSize)
	if err != nil {
		return Handle{}, false, err
	}
	if b.full && !wasFull {
		q.acc.filled(b)
		q.acc.wake()
	}
	return h, true, nil
}

func (b *Batch) addLocked(r record, batchSize int) (Handle, error) {
	if w := b.schema.width; r.row != nil && len(r.row) < w {
		r.row = padRow(r.row, w)
	}
	var err error
	switch r.op {
	case fluss.WriteAppend:
		err = b.builder.(LogBuilder).Append(r.row)
	case fluss.WriteUpsert:
		err = b.builder.(KvBuilder).Upsert(r.key, r.row)
	case fluss.WriteDelete:
		err = b.builder.(KvBuilder).Delete(r.key)
	default:
		err = fmt.Errorf("invalid write op %v", r.op)
	}
	if err != nil {
		return Handle{}, fmt.Errorf("append to table %s bucket %d: %w", b.queue.table.spec.Path, b.queue.bucket, err)
	}
	idx := b.records
	b.records++
	if hs, ok := b.builder.(heldSizer); ok {
		if held, charged := int64(hs.HeldBytes()), b.reserved.Load(); held > charged+chargeStep {
			b.queue.acc.mem.force(&b.queue.table.mem, held-charged)
			b.reserved.Store(held)
		}
	}
	if b.builder.EstimatedSize() >= batchSize {
		b.full = true
	} else if rs, ok := b.builder.(rawSizer); ok && rs.RawSize() >= maxRawFactor*batchSize {
		b.full = true
	}
	return Handle{b: b, idx: int32(idx)}, nil
}

// padRow returns row widened to width columns with nulls: a row converted
// for the schema before columns were added (Table.Reschema).
func padRow(row fluss.Row, width int) fluss.Row {
	out := make(fluss.Row, width)
	copy(out, row)
	for i := len(row); i < width; i++ {
		out[i] = fluss.Datum{Null: true}
	}
	return out
}
