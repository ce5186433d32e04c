package accumulator

import (
	"fmt"
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

// TableSpec describes a table to the accumulator. Exactly one of NewLogBuilder
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
	// called when the accumulator first sees a partition (or again after
	// ForgetPartition), on the write path: it must not block.
	PartitionBuckets func(partitionID int64) int
	// SchemaID and Columns are the Fluss schema the builders write (its id
	// and row width): a row with fewer columns (converted for the schema
	// before a Reschema added some) is padded with nulls. Columns 0: no
	// padding.
	SchemaID int32
	Columns  int
	// NoLinger makes the table's batches ready at once, whatever
	// Config.Linger says: for tables whose writes someone waits on one at
	// a time (the gateway's transaction rows and staged Kafka batches,
	// which are already batches), where linger only adds latency.
	NoLinger bool
}

// Table is a table registered with an Accumulator (Accumulator.AddTable).
type Table struct {
	acc  *Accumulator
	spec TableSpec
	kv   bool

	builders chan pooledBuilder // bounded free list of reset builders
	// schema is what new batches are built for (Reschema replaces it).
	schema atomic.Pointer[tableSchema]

	mu         sync.Mutex
	partitions atomic.Pointer[map[int64]*partitionQueues] // copy on write under mu

	throttledUntil atomic.Int64 // Unix ns: a bucket held back by KV storage pressure

	mem tableMemory // the table's part of the buffer memory
}

// tableSchema is one schema of a table: new batches are built for the
// current one; a batch keeps the one it was built for.
type tableSchema struct {
	id     int32
	width  int
	newLog func() (LogBuilder, error)
	newKv  func() (KvBuilder, error)
}

// pooledBuilder is a reset builder and the schema it builds.
type pooledBuilder struct {
	b BatchBuilder
	s *tableSchema
}

// SchemaID returns the id of the schema new batches are built for.
func (t *Table) SchemaID() int32 { return t.schema.Load().id }

// Reschema makes new batches of the table use spec's schema and builders
// (Fluss added columns to the table: a new schema id). Batches already
// open keep their schema and take no more rows; rows converted for the
// older, narrower schema that still arrive are padded with nulls. spec
// must be of the same table and kind.
func (t *Table) Reschema(spec TableSpec) error {
	if spec.ID != t.spec.ID || (spec.NewKvBuilder != nil) != t.kv || (spec.NewLogBuilder == nil) == (spec.NewKvBuilder == nil) {
		return fmt.Errorf("accumulator: reschema table %s: not the same table and kind", t.spec.Path)
	}
	t.schema.Store(&tableSchema{id: spec.SchemaID, width: spec.Columns, newLog: spec.NewLogBuilder, newKv: spec.NewKvBuilder})
	return nil
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

// ThrottleTo holds the table's producers back until then (sender only: a
// tablet server reported KV storage pressure).
func (t *Table) ThrottleTo(until time.Time) {
	for {
		cur := t.throttledUntil.Load()
		if until.UnixNano() <= cur || t.throttledUntil.CompareAndSwap(cur, until.UnixNano()) {
			return
		}
	}
}

type partitionQueues struct {
	queues []*Queue // one per bucket of the partition
	// sealed: one queue per bucket for sealed batches (AppendSealed),
	// created by the first one.
	sealed atomic.Pointer[[]*Queue]
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

// TargetColumns returns the partial-update column list of a KV table
// (empty: all columns); the sender puts it in each PutKv request.
func (t *Table) TargetColumns() []int32 { return t.spec.TargetColumns }

// ForgetPartition drops the accumulator's bucket layout of a partition: the next
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

// bucketsOf returns the bucket count the accumulator uses for a partition.
func (t *Table) bucketsOf(partitionID int64) int {
	if partitionID != NoPartition && t.spec.PartitionBuckets != nil {
		if n := t.spec.PartitionBuckets(partitionID); n > 0 {
			return n
		}
	}
	return t.spec.NumBuckets
}

func (t *Table) getBuilder() (BatchBuilder, *tableSchema, error) {
	s := t.schema.Load()
	for {
		select {
		case p := <-t.builders:
			if p.s != s {
				continue // built for a schema replaced since
			}
			return p.b, s, nil
		default:
		}
		break
	}
	if t.kv {
		b, err := s.newKv()
		return b, s, err
	}
	b, err := s.newLog()
	return b, s, err
}

// putBuilder keeps b for the table's next batch, unless its buffers hold
// more than a batch's reservation: a kept builder is memory outside the
// budget, and the large ones (a full batch of 1 KB values holds several MiB
// of uncompressed columns) raised the peak under load without saving CPU
// that showed (builders come back at once since full batches are built
// early; 50 producers of 1 KB: peak RSS 163-168 MiB without kept
// builders, 163-185 MiB with four of any size).
func (t *Table) putBuilder(b BatchBuilder, s *tableSchema) {
	if s != t.schema.Load() {
		return
	}
	if hs, ok := b.(heldSizer); ok && hs.HeldBytes() > t.acc.cfg.BatchSize {
		return
	}
	b.Reset()
	select {
	case t.builders <- pooledBuilder{b, s}:
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
	pq := &partitionQueues{queues: make([]*Queue, n)}
	for i := range pq.queues {
		pq.queues[i] = &Queue{acc: t.acc, table: t, partitionID: id, bucket: int32(i), buckets: int32(n)}
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

// sealedQueues returns the partition's sealed queues, one per bucket of
// its merged queues, creating them on first use.
func (t *Table) sealedQueues(partitionID int64) []*Queue {
	pq := t.partition(partitionID)
	if qs := pq.sealed.Load(); qs != nil {
		return *qs
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if qs := pq.sealed.Load(); qs != nil {
		return *qs
	}
	qs := make([]*Queue, len(pq.queues))
	for i, m := range pq.queues {
		qs[i] = &Queue{acc: t.acc, table: t, partitionID: partitionID, bucket: m.bucket, buckets: m.buckets, sealed: true}
	}
	pq.sealed.Store(&qs)
	t.acc.addQueues(qs)
	return qs
}
