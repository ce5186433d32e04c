package accumulator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// BatchBuilder is what the accumulator needs from a Fluss batch encoder
// (fluss.ArrowLogBuilder, fluss.IndexedLogBuilder, fluss.KvBatchBuilder).
type BatchBuilder interface {
	// Len is the number of records appended.
	Len() int
	// EstimatedSize is the batch's size in bytes if built now.
	EstimatedSize() int
	// AppendTo appends the complete batch (header, records, CRC) to dst.
	AppendTo(dst []byte) ([]byte, error)
	// Reset empties the builder for reuse.
	Reset()
}

// rawSizer is implemented by builders whose in-memory size differs from
// their EstimatedSize (an Arrow builder estimates the compressed batch while
// holding uncompressed columns). A batch is also closed to appends once its
// raw size reaches maxRawFactor × BatchSize, so that highly compressible
// data cannot hold many times the buffer budget in builder memory.
type rawSizer interface {
	RawSize() int
}

// maxRawFactor bounds a builder's raw (uncompressed) size relative to the
// batch size; see rawSizer.
const maxRawFactor = 4

// heldSizer is implemented by builders that report the memory their
// buffers hold. A batch's charge to the buffer memory follows it as the
// batch grows (in chargeStep steps, without waiting: the row is in), so
// that the budget counts the uncompressed columns an Arrow batch holds, up
// to maxRawFactor × BatchSize and more with the buffers' growth slack, not
// only the BatchSize it reserved when it opened.
type heldSizer interface {
	HeldBytes() int
}

// chargeStep is how far a batch's held memory may run ahead of its charge.
const chargeStep = 256 << 10

// LogBuilder builds log batches (ARROW, INDEXED or COMPACTED records).
type LogBuilder interface {
	BatchBuilder
	Append(row fluss.Row) error
}

// KvBuilder builds KV batches; a delete is a key without a row.
type KvBuilder interface {
	BatchBuilder
	Upsert(key []byte, row fluss.Row) error
	Delete(key []byte) error
}

// NoSequence is the writer id and batch sequence of a batch sent without
// idempotence (written as -1 in the batch header).
const NoSequence = -1

// Batch is one Fluss batch for one table bucket, shared by the handles of
// its records. See the package doc for who owns it when. It holds records
// and bytes only: the writer id, sequence and attempts a send gives it are
// the sender's.
type Batch struct {
	queue   *Queue
	created time.Time
	builder BatchBuilder
	schema  *tableSchema // what builder builds

	// The caller's stamp of a sealed batch (AppendSealed); NoSequence
	// otherwise. Set before the batch is queued.
	sealedID    int64
	sealedSeq   int32
	sealedFresh bool

	// Under queue.mu while queued.
	full    bool
	records int

	estimated int // the builder's size estimate, taken once the batch is full or popped

	// The encoded batch: under buildLock (the sender's request goroutine,
	// or a prebuild once the batch is full, and complete). A channel of
	// one, not a sync.Mutex: waiting on it is durable blocking for
	// testing/synctest, whose bubbles hold the fake clock while any
	// goroutine waits on a mutex.
	buildLock   chan struct{}
	payload     []byte
	buildFailed error
	// Under buildLock: the stamp the payload carries.
	patchedID  int64
	patchedSeq int32

	reserved atomic.Int64 // bytes of budget held

	state  atomic.Int32 // 0 pending, 1 completing, 2 done
	done   chan struct{}
	offset int64 // valid after done
	err    error // valid after done
}

func newBatch(q *Queue, bld BatchBuilder, s *tableSchema) *Batch {
	return &Batch{
		schema:    s,
		buildLock: make(chan struct{}, 1),
		queue:     q,
		created:   time.Now(),
		builder:   bld,
		sealedID:  NoSequence,
		sealedSeq: NoSequence,
		done:      make(chan struct{}),
	}
}

// Table returns the batch's table.
func (b *Batch) Table() *Table { return b.queue.table }

// PartitionID returns the batch's partition id (NoPartition if none).
func (b *Batch) PartitionID() int64 { return b.queue.partitionID }

// Bucket returns the batch's bucket.
func (b *Batch) Bucket() int32 { return b.queue.bucket }

// Queue returns the queue the batch was appended to.
func (b *Batch) Queue() *Queue { return b.queue }

// Created is when the batch's first record arrived: its delivery timeout
// runs from then.
func (b *Batch) Created() time.Time { return b.created }

// Records returns the number of records; stable once the batch was popped.
func (b *Batch) Records() int { return b.records }

// Estimated returns the size estimate taken when the batch was closed to
// appends (popped or full).
func (b *Batch) Estimated() int { return b.estimated }

// SealedStamp returns the writer id and sequence the caller gave a sealed
// batch (AppendSealed); -1, -1 for a merged batch.
func (b *Batch) SealedStamp() (writerID int64, sequence int32) { return b.sealedID, b.sealedSeq }

// Fresh reports whether the caller sealed the batch as fresh (Seal.Fresh):
// it may share a records entry with other fresh batches on its first send.
func (b *Batch) Fresh() bool { return b.sealedFresh }

// Build returns the batch's bytes with writerID and sequence in the header:
// built once from the builder (the expensive part, Arrow encoding and
// compression), then only re-patched (writer id, sequence, CRC) when they
// differ from the last build. It must be called by the owner of a popped
// batch, outside any lock, by one goroutine at a time. The returned slice
// stays valid until the batch completes or is built again.
func (b *Batch) Build(writerID int64, sequence int32) ([]byte, error) {
	if err := b.encode(); err != nil {
		return nil, err
	}
	t := b.queue.table
	b.lockBuild() // a prebuild that lost the race to encode may still look
	defer b.unlockBuild()
	if b.payload == nil {
		return nil, errCompletedUnbuilt // completed meanwhile: its bytes are gone
	}
	if writerID != b.patchedID || sequence != b.patchedSeq {
		if b.patchedID != NoSequence || b.patchedSeq != NoSequence {
			// Patched before, so maybe handed to a connection that may
			// still be writing it: requests go out without a copy of
			// their batches. Patch a copy (rare: a new writer id).
			b.payload = slices.Clone(b.payload)
		}
		t.spec.SetWriter(b.payload, writerID, sequence)
		b.patchedID, b.patchedSeq = writerID, sequence
	}
	return b.payload, nil
}

// errCompletedUnbuilt is the build of a batch completed before it was built
// (or, for Build, before it was stamped).
var errCompletedUnbuilt = errors.New("batch completed before it was built")

// encode builds the batch once (Arrow encoding and compression), returns
// its builder to the table's free list and charges the batch its built
// size; later calls return at once. The sender calls it through build, a
// prebuild as soon as the batch is full; whichever comes second waits for
// the first.
func (b *Batch) encode() error {
	b.lockBuild()
	defer b.unlockBuild()
	if b.buildFailed != nil {
		return b.buildFailed
	}
	if b.payload != nil {
		return nil
	}
	if b.builder == nil {
		return errCompletedUnbuilt
	}
	t := b.queue.table
	acc := b.queue.acc
	scratch, _ := acc.encodeBufs.Get().(*[]byte)
	if scratch == nil {
		scratch = new([]byte)
	}
	out, err := b.builder.AppendTo(slices.Grow((*scratch)[:0], b.estimated+64))
	t.putBuilder(b.builder, b.schema)
	b.builder = nil
	if cap(out) > cap(*scratch) {
		*scratch = out[:0] // grown by AppendTo
	}
	if err == nil {
		// Kept at its size: a batch waiting for Fluss holds what it is
		// charged, and the scratch buffer (sized for the uncompressed
		// columns) serves the next encoding, which spares the garbage
		// collector a batch-sized buffer per batch.
		out = slices.Clone(out)
	}
	if cap(*scratch) < 2*acc.cfg.BatchSize {
		*scratch = (*scratch)[:0]
		acc.encodeBufs.Put(scratch)
	}
	if err != nil {
		b.buildFailed = fmt.Errorf("build batch for table %s bucket %d: %w", t.spec.Path, b.queue.bucket, err)
		return b.buildFailed
	}
	b.payload = out
	// Account real bytes: return the surplus of the reservation, or take
	// the excess of an oversized batch without waiting.
	b.queue.acc.mem.force(&t.mem, int64(cap(out))-b.reserved.Load())
	b.reserved.Store(int64(cap(out)))
	b.patchedID, b.patchedSeq = NoSequence, NoSequence // builders write -1
	return nil
}

func (b *Batch) lockBuild()   { b.buildLock <- struct{}{} }
func (b *Batch) unlockBuild() { <-b.buildLock }

// Built reports whether the batch has been encoded (waiting for an
// encoding under way): the sender encodes the ones that are not in
// parallel.
func (b *Batch) Built() bool {
	b.lockBuild()
	defer b.unlockBuild()
	return b.payload != nil
}

// Complete finishes the batch exactly once: every handle sees offset (the
// base offset of a log batch, the log end offset of a KV batch, -1 when
// unknown) or err, the batch's memory is returned and it leaves the
// incomplete set. It reports whether this call completed the batch.
func (b *Batch) Complete(offset int64, err error) bool {
	if !b.state.CompareAndSwap(0, 1) {
		return false
	}
	b.offset, b.err = offset, err
	acc := b.queue.acc
	b.lockBuild() // after an encoding under way, whose charge it returns
	if b.builder != nil {
		b.queue.table.putBuilder(b.builder, b.schema)
		b.builder = nil
	}
	// Its handles live on until the Kafka answers are written (a request
	// waits for all its partitions): they must not keep the bytes, which
	// are no longer charged. A connection still writing them has its own
	// reference.
	b.payload = nil
	acc.mem.release(&b.queue.table.mem, b.reserved.Swap(0))
	b.unlockBuild()
	acc.forget(b)
	b.state.Store(2)
	close(b.done)
	return true
}

// Handle is one queued record's future. The zero Handle is invalid. Handles
// are values; copying one is cheap.
type Handle struct {
	b   *Batch
	idx int32
}

// Done is closed when the record's batch has completed.
func (h Handle) Done() <-chan struct{} { return h.b.done }

// Wait blocks until the record is acknowledged or failed, or ctx ends. It
// returns the record's offset: for a log table the record's own log offset,
// for a KV table the bucket's log end offset after its batch; -1 when the
// server did not say (a duplicate resend). Cancelling ctx only stops the
// wait; the record may still be written.
func (h Handle) Wait(ctx context.Context) (int64, error) {
	select {
	case <-h.b.done:
		return h.Offset(), h.b.err
	case <-ctx.Done():
		return -1, fmt.Errorf("wait for record ack: %w", ctx.Err())
	}
}

// Err returns the record's error; valid once Done is closed.
func (h Handle) Err() error { return h.b.err }

// Offset returns the record's offset (see Wait); valid once Done is closed.
func (h Handle) Offset() int64 {
	b := h.b
	if b.err != nil || b.offset < 0 {
		return -1
	}
	if b.queue.table.kv {
		return b.offset
	}
	return b.offset + int64(h.idx)
}

// Batch returns the batch that carries the record. Handles of one batch
// complete together; callers aggregating many handles may wait once per
// batch.
func (h Handle) Batch() *Batch { return h.b }

var (
	_ rawSizer  = (*fluss.ArrowLogBuilder)(nil)
	_ heldSizer = (*fluss.ArrowLogBuilder)(nil)
)
