package writer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/fluss"
)

// NoPartition is the partition id of a non-partitioned table (fluss.NoPartition).
const NoPartition int64 = -1

// StickyBucket asks the writer to choose the bucket: it keeps filling
// one bucket's batch, and moves to another random bucket whenever a new batch
// is needed (Fluss's sticky assigner, for log tables without a bucket key).
const StickyBucket int32 = -1

// TableSpec describes a table to the writer. Exactly one of NewLogBuilder
// and NewKvBuilder is set.
type TableSpec struct {
	ID         int64
	Path       fluss.TablePath
	NumBuckets int
	// NewLogBuilder makes an empty log batch builder (log tables).
	NewLogBuilder func() (LogBuilder, error)
	// NewKvBuilder makes an empty KV batch builder (primary-key tables).
	NewKvBuilder func() (KvBuilder, error)
	// SetWriter patches writer id and batch sequence into a built batch and
	// recomputes its CRC. Default: fluss.SetLogBatchWriter for log tables,
	// fluss.SetKvBatchWriter for KV tables.
	SetWriter func(batch []byte, writerID int64, sequence int32)
	// TargetColumns is the partial-update column list of a KV table (empty:
	// all columns).
	TargetColumns []int32
	// PartitionBuckets returns the bucket count of one partition of a
	// partitioned table (Fluss 1.0: counts differ per partition, each fixed
	// when its partition was created); zero or nil means NumBuckets. It is
	// called when the writer first sees a partition (or again after
	// ForgetPartition), on the write path: it must not block.
	PartitionBuckets func(partitionID int64) int
}

// Table is a table registered with a Writer (Writer.AddTable).
type Table struct {
	acc  *accumulator
	spec TableSpec
	kv   bool

	builders chan BatchBuilder // bounded free list of reset builders

	mu         sync.Mutex
	partitions atomic.Pointer[map[int64]*partitionQueues] // copy on write under mu

	throttledUntil atomic.Int64 // Unix ns: a bucket held back by KV storage pressure

	mem tableMemory // the table's part of the buffer memory
}

// Throttle returns how much longer a bucket of the table is held back
// because its tablet server reported KV storage pressure (zero: none).
// Producers writing to the table are slowed by as much. It is asked for
// every Kafka answer: a table never throttled costs one atomic load.
func (t *Table) Throttle() time.Duration {
	until := t.throttledUntil.Load()
	if until == 0 {
		return 0
	}
	return max(time.Until(time.Unix(0, until)), 0)
}

func (t *Table) throttleTo(until time.Time) {
	for {
		cur := t.throttledUntil.Load()
		if until.UnixNano() <= cur || t.throttledUntil.CompareAndSwap(cur, until.UnixNano()) {
			return
		}
	}
}

type partitionQueues struct {
	queues []*bucketQueue // one per bucket of the partition
	// sealed: one queue per bucket for sealed batches (WriteSealed),
	// created by the first one.
	sealed atomic.Pointer[[]*bucketQueue]
	sticky atomic.Int32
}

// ID returns the table id.
func (t *Table) ID() int64 { return t.spec.ID }

// Path returns the table path.
func (t *Table) Path() fluss.TablePath { return t.spec.Path }

// IsKv reports whether the table takes KV batches (a primary-key table).
func (t *Table) IsKv() bool { return t.kv }

// NumBuckets returns the table's bucket count (a partition may have its
// own: TableSpec.PartitionBuckets).
func (t *Table) NumBuckets() int { return t.spec.NumBuckets }

// ForgetPartition drops the writer's bucket layout of a partition: the next
// write to it asks TableSpec.PartitionBuckets again. Batches already queued
// under the old layout are still sent (with the old routing count; a Fluss
// 1.0 server rejects them with INVALID_BUCKET_ROUTING if it was wrong).
func (t *Table) ForgetPartition(partitionID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.partitions.Load()
	if old == nil || (*old)[partitionID] == nil {
		return
	}
	m := make(map[int64]*partitionQueues, len(*old))
	for k, v := range *old {
		if k != partitionID {
			m[k] = v
		}
	}
	t.partitions.Store(&m)
}

// bucketsOf returns the bucket count the writer uses for a partition.
func (t *Table) bucketsOf(partitionID int64) int {
	if partitionID != NoPartition && t.spec.PartitionBuckets != nil {
		if n := t.spec.PartitionBuckets(partitionID); n > 0 {
			return n
		}
	}
	return t.spec.NumBuckets
}

func (t *Table) getBuilder() (BatchBuilder, error) {
	select {
	case b := <-t.builders:
		return b, nil
	default:
	}
	if t.kv {
		return t.spec.NewKvBuilder()
	}
	return t.spec.NewLogBuilder()
}

// putBuilder keeps b for the table's next batch, unless its buffers hold
// more than a batch's reservation: a kept builder is memory outside the
// budget, and the large ones (a full batch of 1 KB values holds several MiB
// of uncompressed columns) raised the peak under load without saving CPU
// that showed (builders come back at once since full batches are built
// early; 50 producers of 1 KB: peak RSS 163-168 MiB without kept
// builders, 163-185 MiB with four of any size).
func (t *Table) putBuilder(b BatchBuilder) {
	if hs, ok := b.(heldSizer); ok && hs.HeldBytes() > t.acc.cfg.BatchSize {
		return
	}
	b.Reset()
	select {
	case t.builders <- b:
	default:
	}
}

func (t *Table) partition(id int64) *partitionQueues {
	if m := t.partitions.Load(); m != nil {
		if pq := (*m)[id]; pq != nil {
			return pq
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.partitions.Load()
	if old != nil {
		if pq := (*old)[id]; pq != nil {
			return pq
		}
	}
	n := t.bucketsOf(id)
	pq := &partitionQueues{queues: make([]*bucketQueue, n)}
	for i := range pq.queues {
		pq.queues[i] = &bucketQueue{acc: t.acc, table: t, partitionID: id, bucket: int32(i), buckets: int32(n)}
	}
	pq.sticky.Store(int32(rand.IntN(n)))
	m := make(map[int64]*partitionQueues, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[id] = pq
	t.partitions.Store(&m)
	t.acc.addQueues(pq.queues)
	return pq
}

// bucketQueue is the batch queue of one (table, partition, bucket).
// Appenders add to its last batch; the sender pops its head.
type bucketQueue struct {
	acc         *accumulator
	table       *Table
	partitionID int64
	bucket      int32
	buckets     int32 // the partition's bucket count: Fluss 1.0's routing bucket count
	// sealed: the queue of caller-stamped batches (WriteSealed), of many
	// writer ids, beside the bucket's merged queue.
	sealed bool

	mu      sync.Mutex
	batches []*Batch // FIFO, head first
	n       atomic.Int32
}

// empty reports, without locking, whether the queue holds no batch.
func (q *bucketQueue) empty() bool { return q.n.Load() == 0 }

// peek returns the head batch, its estimated size in bytes, and the time it
// becomes ready to send: zero (now) if it is full, is not the only batch,
// was sent before (a retry), or force is set (flush, close, or appenders
// waiting for memory); its linger expiry otherwise. It returns nil for an
// empty queue.
func (q *bucketQueue) peek(force bool) (b *Batch, size int, readyAt time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 {
		return nil, 0, time.Time{}
	}
	b = q.batches[0]
	size = b.estimated
	if b.attempts == 0 && !b.full {
		size = b.builder.EstimatedSize()
	}
	if force || b.full || len(q.batches) > 1 || b.attempts > 0 {
		return b, size, time.Time{}
	}
	return b, size, b.created.Add(q.acc.cfg.Linger)
}

// pop removes b if it is the head batch and closes it to appends. It
// reports whether b was removed. After pop the caller (the sender) owns b.
func (q *bucketQueue) pop(b *Batch) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 || q.batches[0] != b {
		return false
	}
	if !b.full {
		b.estimated = b.builder.EstimatedSize()
		b.full = true
	}
	q.batches[0] = nil
	q.batches = q.batches[1:]
	q.n.Add(-1)
	return true
}

// reenqueue puts a popped batch back for a retry: in sequence order among
// the queued retries (responses may come back out of order), ahead of every
// batch never sent.
func (q *bucketQueue) reenqueue(b *Batch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := 0
	for ; i < len(q.batches); i++ {
		x := q.batches[i]
		if x.attempts == 0 || (b.sequence != noSequence && x.writerID == b.writerID && x.sequence > b.sequence) {
			break
		}
	}
	q.batches = append(q.batches, nil)
	copy(q.batches[i+1:], q.batches[i:])
	q.batches[i] = b
	q.n.Add(1)
	q.acc.wake()
}

// drainAll removes every queued batch and returns them; the caller owns
// them (and must complete them).
func (q *bucketQueue) drainAll() []*Batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.batches
	for _, b := range out {
		b.full = true
	}
	q.batches = nil
	q.n.Store(0)
	return out
}

// accumulator queues records into batches per table, partition and bucket,
// within the memory budget. It starts no goroutines.
type accumulator struct {
	cfg     Config
	mem     *memoryBudget
	metrics *accMetrics

	closed   atomic.Bool
	flushing atomic.Int32
	wakeCh   chan struct{} // signalled when the sender should look again

	qmu      sync.Mutex
	queues   atomic.Pointer[[]*bucketQueue] // copy on write under qmu
	tableIDs map[int64]bool                 // under qmu

	incMu      sync.Mutex
	incomplete map[*Batch]struct{}
	idle       chan struct{} // closed when incomplete becomes empty; replaced when it fills

	// prebuilds bounds the batches encoded at once as soon as they are
	// closed to appends (see prebuild); prebuilding counts them for close.
	prebuilds   chan struct{}
	prebuilding sync.WaitGroup
}

// newAccumulator returns an accumulator for a validated cfg with defaults
// applied, its metrics registered with reg.
func newAccumulator(cfg Config, reg prometheus.Registerer) (*accumulator, error) {
	a := &accumulator{
		cfg:        cfg,
		mem:        newMemoryBudget(cfg.BufferMemory, cfg.tableMemoryCap(), cfg.RequestMemory),
		wakeCh:     make(chan struct{}, 1),
		incomplete: make(map[*Batch]struct{}),
		idle:       make(chan struct{}),
		tableIDs:   make(map[int64]bool),
		prebuilds:  make(chan struct{}, runtime.GOMAXPROCS(0)),
	}
	close(a.idle)
	empty := []*bucketQueue{}
	a.queues.Store(&empty)
	m, err := newAccMetrics(reg, a)
	if err != nil {
		return nil, err
	}
	a.metrics = m
	return a, nil
}

// addTable registers a table. A table id can be registered once.
func (a *accumulator) addTable(spec TableSpec) (*Table, error) {
	if spec.NumBuckets <= 0 {
		return nil, fmt.Errorf("writer: table %s: bucket count %d must be positive", spec.Path, spec.NumBuckets)
	}
	if (spec.NewLogBuilder == nil) == (spec.NewKvBuilder == nil) {
		return nil, fmt.Errorf("writer: table %s: set exactly one of NewLogBuilder and NewKvBuilder", spec.Path)
	}
	spec.TargetColumns = append([]int32(nil), spec.TargetColumns...)
	if spec.SetWriter == nil {
		if spec.NewKvBuilder != nil {
			spec.SetWriter = fluss.SetKvBatchWriter
		} else {
			spec.SetWriter = fluss.SetLogBatchWriter
		}
	}
	t := &Table{acc: a, spec: spec, kv: spec.NewKvBuilder != nil, builders: make(chan BatchBuilder, 4)}
	empty := map[int64]*partitionQueues{}
	t.partitions.Store(&empty)
	a.qmu.Lock()
	defer a.qmu.Unlock()
	if a.tableIDs[spec.ID] {
		// Two queues for one bucket would break per-bucket order and
		// sequences.
		return nil, fmt.Errorf("writer: table %s: table id %d is already registered", spec.Path, spec.ID)
	}
	a.tableIDs[spec.ID] = true
	return t, nil
}

func (a *accumulator) addQueues(qs []*bucketQueue) {
	a.qmu.Lock()
	defer a.qmu.Unlock()
	old := *a.queues.Load()
	n := make([]*bucketQueue, 0, len(old)+len(qs))
	n = append(append(n, old...), qs...)
	a.queues.Store(&n)
}

// queueList returns a snapshot of all queues (do not modify).
func (a *accumulator) queueList() []*bucketQueue { return *a.queues.Load() }

// wake signals wakeCh: a batch was created, became full or was re-queued,
// a flush or close began, or an appender waits for memory.
func (a *accumulator) wake() {
	select {
	case a.wakeCh <- struct{}{}:
	default:
	}
}

// forceReady reports whether every batch is ready regardless of linger: a
// flush or close is in progress, or an appender waits for memory.
func (a *accumulator) forceReady() bool {
	return a.flushing.Load() > 0 || a.closed.Load() || a.mem.waiting() > 0
}

// incompleteCount returns the number of batches not yet completed.
func (a *accumulator) incompleteCount() int {
	a.incMu.Lock()
	defer a.incMu.Unlock()
	return len(a.incomplete)
}

// idleCh returns a channel closed once no batch is incomplete (at the time
// of the call it may already be closed).
func (a *accumulator) idleCh() <-chan struct{} {
	a.incMu.Lock()
	defer a.incMu.Unlock()
	return a.idle
}

// record is one row operation on its way into a batch.
type record struct {
	op  fluss.WriteOp
	key []byte
	row fluss.Row
}

// write queues r (already checked against the table's kind). It returns at
// once, unless a new batch needs buffer memory that is not free: then it
// waits up to Config.BufferWaitTimeout (ErrBufferFull) or until ctx ends.
func (a *accumulator) write(ctx context.Context, t *Table, partitionID int64, bucket int32, r record) (Handle, error) {
	if a.closed.Load() {
		return Handle{}, ErrClosed
	}
	sticky := bucket == StickyBucket
	pq := t.partition(partitionID)
	nb := len(pq.queues)
	if !sticky && (bucket < 0 || int(bucket) >= nb) {
		return Handle{}, fmt.Errorf("writer: table %s partition %d has %d buckets, not bucket %d", t.spec.Path, partitionID, nb, bucket)
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
		bld, size, err := a.newBatchBuilder(ctx, t)
		if err != nil {
			return Handle{}, err
		}
		q.mu.Lock()
		if a.closed.Load() {
			q.mu.Unlock()
			a.mem.release(&t.mem, size)
			t.putBuilder(bld)
			return Handle{}, ErrClosed
		}
		if h, ok, err := q.tryAppendLocked(r); ok || err != nil {
			// Someone else opened a batch meanwhile.
			q.mu.Unlock()
			a.mem.release(&t.mem, size)
			t.putBuilder(bld)
			return h, err
		}
		b := &Batch{
			buildLock: make(chan struct{}, 1),
			queue:     q,
			created:   time.Now(),
			builder:   bld,
			writerID:  noSequence,
			sequence:  noSequence,
			done:      make(chan struct{}),
		}
		b.reserved.Store(size)
		h, err := b.addLocked(r, a.cfg.BatchSize)
		if err != nil {
			q.mu.Unlock()
			a.mem.release(&t.mem, size)
			t.putBuilder(bld)
			return Handle{}, err
		}
		// Count the batch, then check closed again: the sender stops once
		// the accumulator is closed and nothing is incomplete, so a batch
		// must be counted before the check that lets it in.
		a.track(b)
		if a.closed.Load() {
			q.mu.Unlock()
			b.complete(-1, ErrClosed) // returns memory and builder, leaves the incomplete set
			a.wake()                  // a sender waiting for this batch looks again
			return Handle{}, ErrClosed
		}
		if b.full {
			a.filled(b) // one record filled it
		}
		q.batches = append(q.batches, b)
		q.n.Add(1)
		q.mu.Unlock()
		a.wake()
		return h, nil
	}
}

// filled is called, under the queue's lock or before the batch is queued,
// once b is full: nothing joins it any more. It takes the size
// estimate the sender plans with (the builder is not read again once a
// build may be running) and starts encoding it.
func (a *accumulator) filled(b *Batch) {
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
func (a *accumulator) prebuild(b *Batch) {
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
func (a *accumulator) newBatchBuilder(ctx context.Context, t *Table) (BatchBuilder, int64, error) {
	size := int64(a.cfg.BatchSize)
	if err := a.mem.acquire(ctx, &t.mem, size, a.cfg.BufferWaitTimeout, a.wake); err != nil {
		if errors.Is(err, ErrBufferFull) {
			a.metrics.bufferFull.Inc()
		}
		return nil, 0, fmt.Errorf("append to table %s: %w", t.spec.Path, err)
	}
	bld, err := t.getBuilder()
	if err != nil {
		a.mem.release(&t.mem, size)
		return nil, 0, fmt.Errorf("append to table %s: new batch builder: %w", t.spec.Path, err)
	}
	return bld, size, nil
}

// tryAppendLocked appends to the last open batch. ok is false when there is
// none (or it is full).
func (q *bucketQueue) tryAppendLocked(r record) (Handle, bool, error) {
	if len(q.batches) == 0 {
		return Handle{}, false, nil
	}
	b := q.batches[len(q.batches)-1]
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

func (a *accumulator) track(b *Batch) {
	a.incMu.Lock()
	if len(a.incomplete) == 0 {
		a.idle = make(chan struct{})
	}
	a.incomplete[b] = struct{}{}
	a.incMu.Unlock()
}

func (a *accumulator) forget(b *Batch) {
	a.incMu.Lock()
	delete(a.incomplete, b)
	if len(a.incomplete) == 0 {
		select {
		case <-a.idle:
		default:
			close(a.idle)
		}
	}
	a.incMu.Unlock()
}

// flush makes every queued batch ready and waits until all batches that
// were incomplete when it was called have completed, or ctx ends.
func (a *accumulator) flush(ctx context.Context) error {
	a.flushing.Add(1)
	defer a.flushing.Add(-1)
	a.incMu.Lock()
	batches := make([]*Batch, 0, len(a.incomplete))
	for b := range a.incomplete {
		batches = append(batches, b)
	}
	a.incMu.Unlock()
	a.wake()
	var failed int
	var first error
	for _, b := range batches {
		select {
		case <-b.done:
			if b.err != nil {
				failed++
				if first == nil {
					first = b.err
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("flush: %w", ctx.Err())
		}
	}
	if failed > 0 {
		return fmt.Errorf("flush: %d of %d batches failed, first: %w", failed, len(batches), first)
	}
	return nil
}

// close stops accepting records (appends fail with ErrClosed, appenders
// waiting for memory too) and makes every queued batch ready. It does not
// wait: the sender drains what is queued, or abort fails what was not
// sent. close is idempotent.
func (a *accumulator) close() {
	if a.closed.Swap(true) {
		return
	}
	a.mem.close()
	a.wake()
}

// abort fails every queued batch (not the ones the sender holds) with err
// and returns how many it failed.
func (a *accumulator) abort(err error) int {
	n := 0
	for _, q := range a.queueList() {
		if q.empty() {
			continue
		}
		for _, b := range q.drainAll() {
			if b.complete(-1, err) {
				n++
			}
		}
	}
	return n
}
