package accumulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// NoPartition is the partition id of a non-partitioned table (fluss.NoPartition).
const NoPartition int64 = -1

// StickyBucket asks the accumulator to choose the bucket: it keeps filling
// one bucket's batch, and moves to another random bucket whenever a new batch
// is needed (Fluss's sticky assigner, for log tables without a bucket key).
const StickyBucket int32 = -1

// TableSpec describes a table to the accumulator. Exactly one of
// NewLogBuilder and NewKvBuilder is set.
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
}

// Table is a table registered with an Accumulator.
type Table struct {
	acc  *Accumulator
	spec TableSpec
	kv   bool

	builders chan BatchBuilder // bounded free list of reset builders

	mu         sync.Mutex
	partitions atomic.Pointer[map[int64]*partitionQueues] // copy on write under mu
}

type partitionQueues struct {
	queues []*Queue
	sticky atomic.Int32
}

// ID returns the table id.
func (t *Table) ID() int64 { return t.spec.ID }

// Path returns the table path.
func (t *Table) Path() fluss.TablePath { return t.spec.Path }

// IsKv reports whether the table takes KV batches (a primary-key table).
func (t *Table) IsKv() bool { return t.kv }

// NumBuckets returns the bucket count.
func (t *Table) NumBuckets() int { return t.spec.NumBuckets }

// TargetColumns returns the partial-update columns (KV tables).
func (t *Table) TargetColumns() []int32 { return t.spec.TargetColumns }

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

func (t *Table) putBuilder(b BatchBuilder) {
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
	pq := &partitionQueues{queues: make([]*Queue, t.spec.NumBuckets)}
	for i := range pq.queues {
		pq.queues[i] = &Queue{acc: t.acc, table: t, partitionID: id, bucket: int32(i)}
	}
	pq.sticky.Store(int32(rand.IntN(t.spec.NumBuckets)))
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

// Queue is the batch queue of one (table, partition, bucket). Appenders add
// to its last batch; the sender pops its head.
type Queue struct {
	acc         *Accumulator
	table       *Table
	partitionID int64
	bucket      int32

	mu      sync.Mutex
	batches []*Batch // FIFO, head first
	n       atomic.Int32
}

// Table returns the queue's table.
func (q *Queue) Table() *Table { return q.table }

// PartitionID returns the queue's partition id (NoPartition if none).
func (q *Queue) PartitionID() int64 { return q.partitionID }

// Bucket returns the queue's bucket.
func (q *Queue) Bucket() int32 { return q.bucket }

// Empty reports, without locking, whether the queue holds no batch.
func (q *Queue) Empty() bool { return q.n.Load() == 0 }

// Peek returns the head batch, its estimated size in bytes, and the time it
// becomes ready to send: zero (now) if it is full, is not the only batch,
// was sent before (a retry), or force is set (flush, close, or appenders
// waiting for memory); its linger expiry otherwise. It returns nil for an
// empty queue.
func (q *Queue) Peek(force bool) (b *Batch, size int, readyAt time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 {
		return nil, 0, time.Time{}
	}
	b = q.batches[0]
	size = b.estimated
	if b.attempts == 0 {
		size = b.builder.EstimatedSize()
	}
	if force || b.full || len(q.batches) > 1 || b.attempts > 0 {
		return b, size, time.Time{}
	}
	return b, size, b.created.Add(q.acc.cfg.Linger)
}

// Pop removes b if it is the head batch and closes it to appends. It reports
// whether b was removed. After Pop the caller owns b.
func (q *Queue) Pop(b *Batch) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 || q.batches[0] != b {
		return false
	}
	b.full = true
	q.batches[0] = nil
	q.batches = q.batches[1:]
	q.n.Add(-1)
	if b.attempts == 0 {
		b.estimated = b.builder.EstimatedSize()
	}
	return true
}

// Reenqueue puts a popped batch back for a retry: in sequence order among
// the queued retries (responses may come back out of order), ahead of every
// batch never sent.
func (q *Queue) Reenqueue(b *Batch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := 0
	for ; i < len(q.batches); i++ {
		x := q.batches[i]
		if x.attempts == 0 || (b.sequence != NoSequence && x.sequence > b.sequence) {
			break
		}
	}
	q.batches = append(q.batches, nil)
	copy(q.batches[i+1:], q.batches[i:])
	q.batches[i] = b
	q.n.Add(1)
	q.acc.wake()
}

// TakeAll removes every queued batch and returns them; the caller owns
// them (and must complete them).
func (q *Queue) TakeAll() []*Batch { return q.drainAll() }

// drainAll removes every batch (for Abort).
func (q *Queue) drainAll() []*Batch {
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

// Accumulator queues records into batches per table, partition and bucket.
type Accumulator struct {
	cfg     Config
	log     *slog.Logger
	mem     *memoryBudget
	metrics *metrics

	closed   atomic.Bool
	flushing atomic.Int32
	wakeCh   chan struct{}

	qmu      sync.Mutex
	queues   atomic.Pointer[[]*Queue] // copy on write under qmu
	tableIDs map[int64]bool           // under qmu

	incMu      sync.Mutex
	incomplete map[*Batch]struct{}
	idle       chan struct{} // closed when incomplete becomes empty; replaced when it fills
}

// New returns an Accumulator. It starts no goroutines.
func New(cfg Config, opts ...Option) (*Accumulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	a := &Accumulator{
		cfg:        cfg,
		log:        o.logger,
		mem:        newMemoryBudget(cfg.BufferMemory),
		wakeCh:     make(chan struct{}, 1),
		incomplete: make(map[*Batch]struct{}),
		idle:       make(chan struct{}),
		tableIDs:   make(map[int64]bool),
	}
	close(a.idle)
	empty := []*Queue{}
	a.queues.Store(&empty)
	m, err := newMetrics(o.reg, a)
	if err != nil {
		return nil, err
	}
	a.metrics = m
	return a, nil
}

// Config returns the effective configuration.
func (a *Accumulator) Config() Config { return a.cfg }

// AddTable registers a table. The returned Table is passed to the append
// methods. A table id can be registered once.
func (a *Accumulator) AddTable(spec TableSpec) (*Table, error) {
	if spec.NumBuckets <= 0 {
		return nil, fmt.Errorf("accumulator: table %s: bucket count %d must be positive", spec.Path, spec.NumBuckets)
	}
	if (spec.NewLogBuilder == nil) == (spec.NewKvBuilder == nil) {
		return nil, fmt.Errorf("accumulator: table %s: set exactly one of NewLogBuilder and NewKvBuilder", spec.Path)
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
		return nil, fmt.Errorf("accumulator: table %s: table id %d is already registered", spec.Path, spec.ID)
	}
	a.tableIDs[spec.ID] = true
	return t, nil
}

func (a *Accumulator) addQueues(qs []*Queue) {
	a.qmu.Lock()
	defer a.qmu.Unlock()
	old := *a.queues.Load()
	n := make([]*Queue, 0, len(old)+len(qs))
	n = append(append(n, old...), qs...)
	a.queues.Store(&n)
}

// Queues returns a snapshot of all queues (for the sender; do not modify).
func (a *Accumulator) Queues() []*Queue { return *a.queues.Load() }

// Wakeup is signalled when the sender should look again: a batch was
// created, became full or was re-queued, a flush or close began, or an
// appender waits for memory.
func (a *Accumulator) Wakeup() <-chan struct{} { return a.wakeCh }

func (a *Accumulator) wake() {
	select {
	case a.wakeCh <- struct{}{}:
	default:
	}
}

// ForceReady reports whether every batch is ready regardless of linger: a
// flush or close is in progress, or an appender waits for memory.
func (a *Accumulator) ForceReady() bool {
	return a.flushing.Load() > 0 || a.closed.Load() || a.mem.waiting() > 0
}

// Closed reports whether Close was called.
func (a *Accumulator) Closed() bool { return a.closed.Load() }

// BufferedBytes returns the bytes reserved by incomplete batches.
func (a *Accumulator) BufferedBytes() int64 { return a.mem.inUse() }

// Incomplete returns the number of batches not yet completed.
func (a *Accumulator) Incomplete() int {
	a.incMu.Lock()
	defer a.incMu.Unlock()
	return len(a.incomplete)
}

// Idle returns a channel closed once no batch is incomplete (at the time of
// the call it may already be closed).
func (a *Accumulator) Idle() <-chan struct{} {
	a.incMu.Lock()
	defer a.incMu.Unlock()
	return a.idle
}

type op struct {
	kind int // opAppend, opUpsert, opDelete
	key  []byte
	row  fluss.Row
}

const (
	opAppend = iota
	opUpsert
	opDelete
)

// Append queues one row for a log table. bucket is the bucket chosen by the
// caller (from the bucket key) or StickyBucket. It returns at once, unless a
// new batch needs buffer memory that is not free: then it waits up to
// Config.BufferWaitTimeout (ErrBufferFull) or until ctx ends. The row's
// values are copied into the batch before Append returns.
func (a *Accumulator) Append(ctx context.Context, t *Table, partitionID int64, bucket int32, row fluss.Row) (Handle, error) {
	if t.kv {
		return Handle{}, fmt.Errorf("accumulator: append to primary-key table %s: use Upsert", t.spec.Path)
	}
	return a.append(ctx, t, partitionID, bucket, op{kind: opAppend, row: row})
}

// Upsert queues an insert-or-update of key for a KV table (key is the
// encoded primary key). Blocking as Append; key and row are copied.
func (a *Accumulator) Upsert(ctx context.Context, t *Table, partitionID int64, bucket int32, key []byte, row fluss.Row) (Handle, error) {
	if !t.kv {
		return Handle{}, fmt.Errorf("accumulator: upsert to log table %s: use Append", t.spec.Path)
	}
	return a.append(ctx, t, partitionID, bucket, op{kind: opUpsert, key: key, row: row})
}

// Delete queues a delete of key for a KV table. Blocking as Append.
func (a *Accumulator) Delete(ctx context.Context, t *Table, partitionID int64, bucket int32, key []byte) (Handle, error) {
	if !t.kv {
		return Handle{}, fmt.Errorf("accumulator: delete from log table %s: not a primary-key table", t.spec.Path)
	}
	return a.append(ctx, t, partitionID, bucket, op{kind: opDelete, key: key})
}

func (a *Accumulator) append(ctx context.Context, t *Table, partitionID int64, bucket int32, o op) (Handle, error) {
	if a.closed.Load() {
		return Handle{}, ErrClosed
	}
	sticky := bucket == StickyBucket
	if !sticky && (bucket < 0 || int(bucket) >= t.spec.NumBuckets) {
		return Handle{}, fmt.Errorf("accumulator: table %s has %d buckets, not bucket %d", t.spec.Path, t.spec.NumBuckets, bucket)
	}
	pq := t.partition(partitionID)
	if sticky {
		bucket = pq.sticky.Load()
	}
	switched := false
	for {
		q := pq.queues[bucket]
		q.mu.Lock()
		if h, ok, err := q.tryAppendLocked(o); ok || err != nil {
			q.mu.Unlock()
			return h, err
		}
		q.mu.Unlock()
		if sticky && !switched && t.spec.NumBuckets > 1 {
			// The sticky bucket needs a new batch: move on first, so that one
			// batch fills one bucket and the next fills another.
			switched = true
			next := (bucket + 1 + int32(rand.IntN(t.spec.NumBuckets-1))) % int32(t.spec.NumBuckets)
			if pq.sticky.CompareAndSwap(bucket, next) {
				bucket = next
			} else {
				bucket = pq.sticky.Load()
			}
			continue
		}

		// A new batch: reserve its memory and get a builder outside the lock.
		size := int64(a.cfg.BatchSize)
		if err := a.mem.acquire(ctx, size, a.cfg.BufferWaitTimeout, a.wake); err != nil {
			if errors.Is(err, ErrBufferFull) {
				a.metrics.bufferFull.Inc()
			}
			return Handle{}, fmt.Errorf("append to table %s: %w", t.spec.Path, err)
		}
		bld, err := t.getBuilder()
		if err != nil {
			a.mem.release(size)
			return Handle{}, fmt.Errorf("append to table %s: new batch builder: %w", t.spec.Path, err)
		}
		q.mu.Lock()
		if a.closed.Load() {
			q.mu.Unlock()
			a.mem.release(size)
			t.putBuilder(bld)
			return Handle{}, ErrClosed
		}
		if h, ok, err := q.tryAppendLocked(o); ok || err != nil {
			// Someone else opened a batch meanwhile.
			q.mu.Unlock()
			a.mem.release(size)
			t.putBuilder(bld)
			return h, err
		}
		b := &Batch{
			queue:    q,
			created:  time.Now(),
			builder:  bld,
			writerID: NoSequence,
			sequence: NoSequence,
			done:     make(chan struct{}),
		}
		b.reserved.Store(size)
		h, err := b.addLocked(o, a.cfg.BatchSize)
		if err != nil {
			q.mu.Unlock()
			a.mem.release(size)
			t.putBuilder(bld)
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
		q.batches = append(q.batches, b)
		q.n.Add(1)
		q.mu.Unlock()
		a.wake()
		return h, nil
	}
}

// tryAppendLocked appends to the last open batch. ok is false when there is
// none (or it is full).
func (q *Queue) tryAppendLocked(o op) (Handle, bool, error) {
	if len(q.batches) == 0 {
		return Handle{}, false, nil
	}
	b := q.batches[len(q.batches)-1]
	if b.full {
		return Handle{}, false, nil
	}
	wasFull := b.full
	h, err := b.addLocked(o, q.acc.cfg.BatchSize)
	if err != nil {
		return Handle{}, false, err
	}
	if b.full && !wasFull {
		q.acc.wake()
	}
	return h, true, nil
}

func (b *Batch) addLocked(o op, batchSize int) (Handle, error) {
	var err error
	switch o.kind {
	case opAppend:
		err = b.builder.(LogBuilder).Append(o.row)
	case opUpsert:
		err = b.builder.(KvBuilder).Upsert(o.key, o.row)
	case opDelete:
		err = b.builder.(KvBuilder).Delete(o.key)
	}
	if err != nil {
		return Handle{}, fmt.Errorf("append to table %s bucket %d: %w", b.queue.table.spec.Path, b.queue.bucket, err)
	}
	idx := b.records
	b.records++
	if b.builder.EstimatedSize() >= batchSize {
		b.full = true
	} else if rs, ok := b.builder.(RawSizer); ok && rs.RawSize() >= MaxRawFactor*batchSize {
		b.full = true
	}
	return Handle{b: b, idx: int32(idx)}, nil
}

func (a *Accumulator) track(b *Batch) {
	a.incMu.Lock()
	if len(a.incomplete) == 0 {
		a.idle = make(chan struct{})
	}
	a.incomplete[b] = struct{}{}
	a.incMu.Unlock()
}

func (a *Accumulator) forget(b *Batch) {
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

// Flush makes every queued batch ready and waits until all batches that
// were incomplete when Flush was called have completed, or ctx ends. It
// returns an error naming how many of them failed (the first error wrapped);
// each record's own outcome is on its handle.
func (a *Accumulator) Flush(ctx context.Context) error {
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

// Close stops accepting records (appends fail with ErrClosed, appenders
// waiting for memory too) and makes every queued batch ready. It does not
// wait: the sender drains what is queued and the caller waits on Idle, or
// calls Abort to fail what was not sent. Close is idempotent.
func (a *Accumulator) Close() {
	if a.closed.Swap(true) {
		return
	}
	a.mem.close()
	a.wake()
}

// Abort fails every queued batch (not the ones the sender holds) with err
// and returns how many it failed.
func (a *Accumulator) Abort(err error) int {
	n := 0
	for _, q := range a.Queues() {
		if q.Empty() {
			continue
		}
		for _, b := range q.drainAll() {
			if b.Complete(-1, err) {
				n++
			}
		}
	}
	return n
}
