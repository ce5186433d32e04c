package accumulator

import (
	"sync"
	"sync/atomic"
	"time"
)

// Queue is the batch queue of one (table, partition, bucket), or the
// sealed queue beside it. Appenders add to its last batch; the sender
// peeks at its head and pops it. A popped batch never comes back: the
// sender keeps its retries itself.
type Queue struct {
	acc         *Accumulator
	table       *Table
	partitionID int64
	bucket      int32
	buckets     int32 // the partition's bucket count: Fluss 1.0's routing bucket count
	// sealed: the queue of caller-stamped batches (AppendSealed), of many
	// writer ids, beside the bucket's merged queue.
	sealed bool

	mu      sync.Mutex
	batches []*Batch // FIFO, head first
	n       atomic.Int32
	listed  atomic.Bool // in the accumulator's busy list (busyQueues)
}

// Table, PartitionID, Bucket, RoutingBuckets and Sealed say which queue it
// is; they never change.
func (q *Queue) Table() *Table { return q.table }

// PartitionID is the queue's partition (NoPartition if none).
func (q *Queue) PartitionID() int64 { return q.partitionID }

// Bucket is the queue's bucket.
func (q *Queue) Bucket() int32 { return q.bucket }

// RoutingBuckets is the bucket count the rows were bucketed with (Fluss
// 1.0 checks it: INVALID_BUCKET_ROUTING).
func (q *Queue) RoutingBuckets() int32 { return q.buckets }

// Sealed reports whether the queue holds sealed batches (AppendSealed).
func (q *Queue) Sealed() bool { return q.sealed }

// Empty reports, without locking, whether the queue holds no batch.
func (q *Queue) Empty() bool { return q.n.Load() == 0 }

// Peek returns the head batch, its estimated size in bytes, and the time it
// becomes ready to send: zero (now) if it is full, is not the only batch,
// or force is set (flush, close, or appenders waiting for memory: see
// Accumulator.ForceReady); its linger expiry otherwise. It returns nil for
// an empty queue.
func (q *Queue) Peek(force bool) (b *Batch, size int, readyAt time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 {
		return nil, 0, time.Time{}
	}
	b = q.batches[0]
	size = b.estimated
	if !b.full {
		size = b.builder.EstimatedSize()
	}
	if force || b.full || len(q.batches) > 1 || q.table.spec.NoLinger {
		return b, size, time.Time{}
	}
	return b, size, b.created.Add(q.acc.cfg.Linger)
}

// Pop removes b if it is the head batch and closes it to appends. It
// reports whether b was removed. After Pop the caller (the sender) owns b
// until it completes it.
func (q *Queue) Pop(b *Batch) bool {
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

// DrainAll removes every queued batch and returns them; the caller owns
// them (and must complete them).
func (q *Queue) DrainAll() []*Batch {
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
