package accumulator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/batchtest"
)

// testBuilder and testSetWriter are the toy batch format both halves'
// tests share.
type testBuilder = batchtest.Builder

var testSetWriter = batchtest.SetWriter

// newTestAccumulator returns an accumulator (no sender) configured as
// DefaultConfig changed by set.
func newTestAccumulator(set func(*Config)) (*Accumulator, error) {
	cfg := DefaultConfig()
	if set != nil {
		set(&cfg)
	}
	return New(cfg, WithRegisterer(prometheus.NewRegistry()))
}

// testAppend queues one log row, as Append with fluss.WriteAppend.
func (a *Accumulator) testAppend(ctx context.Context, t *Table, partitionID int64, bucket int32, row fluss.Row) (Handle, error) {
	return a.append(ctx, t, partitionID, bucket, record{op: fluss.WriteAppend, row: row})
}

func newTestTable(t *testing.T, a *Accumulator, id int64, buckets int, builds *int) *Table {
	t.Helper()
	var mu sync.Mutex
	tbl, err := a.AddTable(TableSpec{
		ID:         id,
		Path:       fluss.TablePath{Database: "db", Table: "t"},
		NumBuckets: buckets,
		NewLogBuilder: func() (LogBuilder, error) {
			return &testBuilder{Builds: builds, Mu: &mu}, nil
		},
		SetWriter: testSetWriter,
	})
	require.NoError(t, err)
	return tbl
}

func row(v int64) fluss.Row { return fluss.Row{fluss.IntDatum(v)} }

func TestAppendFillsBatchesInOrder(t *testing.T) {
	t.Parallel()
	// 16-byte header + 8 per row: a 48-byte batch holds 4 rows.
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 48
		c.BufferMemory = 1 << 10
		c.Linger = time.Hour
	})
	require.NoError(t, err)
	tbl := newTestTable(t, a, 1, 2, nil)
	ctx := context.Background()
	var hs []Handle
	for i := range 10 {
		h, err := a.testAppend(ctx, tbl, NoPartition, 1, row(int64(i)))
		require.NoError(t, err)
		hs = append(hs, h)
	}
	require.Len(t, a.Queues(), 2)
	q := a.Queues()[1]
	assert.True(t, a.Queues()[0].Empty())
	assert.Equal(t, 3, a.Incomplete())
	assert.Equal(t, int64(3*48), a.mem.inUse())

	// The head is full, so it is ready now.
	head, _, readyAt := q.Peek(false)
	require.NotNil(t, head)
	assert.True(t, readyAt.IsZero())
	assert.Same(t, hs[0].Batch(), head)
	require.True(t, q.Pop(head))
	assert.Equal(t, 4, head.records)
	data, err := head.Build(NoSequence, NoSequence)
	require.NoError(t, err)
	assert.Equal(t, 48, len(data))
	assert.Equal(t, uint32(4), binary.BigEndian.Uint32(data[12:]))
	assert.Equal(t, int64(3*48), a.mem.inUse(), "built size equals the reservation")

	require.True(t, head.Complete(100, nil))
	assert.False(t, head.Complete(7, errors.New("late")), "a batch completes once")
	for i := range 4 {
		off, err := hs[i].Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(100+i), off)
	}
	assert.Equal(t, int64(2*48), a.mem.inUse())
	assert.Equal(t, 2, a.Incomplete())

	// The last batch (2 rows) is not full: it waits for linger.
	require.True(t, q.Pop(hs[4].Batch()))
	last := hs[8].Batch()
	_, _, readyAt = q.Peek(false)
	assert.Equal(t, last.created.Add(time.Hour), readyAt)
	_, _, readyAt = q.Peek(true)
	assert.True(t, readyAt.IsZero(), "force makes it ready")
}

func TestBuildOncePatchOnRestamp(t *testing.T) {
	t.Parallel()
	builds := 0
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 1 << 10
		c.BufferMemory = 1 << 12
	})
	require.NoError(t, err)
	tbl := newTestTable(t, a, 1, 1, &builds)
	_, err = a.testAppend(context.Background(), tbl, NoPartition, 0, row(7))
	require.NoError(t, err)
	q := a.Queues()[0]
	b, _, _ := q.Peek(true)
	require.True(t, q.Pop(b))

	data, err := b.Build(42, 3)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), binary.BigEndian.Uint64(data))
	assert.Equal(t, uint32(3), binary.BigEndian.Uint32(data[8:]))
	assert.Equal(t, int64(len(data)), a.mem.inUse(), "reservation shrinks to the built size")

	first := data
	data, err = b.Build(42, 2)
	require.NoError(t, err)
	assert.Equal(t, uint32(2), binary.BigEndian.Uint32(data[8:]))
	assert.Equal(t, 1, builds, "a retry re-patches, never rebuilds")
	assert.Equal(t, uint64(7), binary.BigEndian.Uint64(data[16:]))
	// Requests go out without copying their batches: the bytes handed out
	// for the first send stay as they were, the re-patch is on a copy.
	assert.Equal(t, uint32(3), binary.BigEndian.Uint32(first[8:]), "bytes already handed to a connection are not changed")
	assert.NotSame(t, &first[0], &data[0])
	again, err := b.Build(42, 2)
	require.NoError(t, err)
	assert.Same(t, &data[0], &again[0], "the same stamp reuses the bytes")
}

func TestStickyBucketMovesOnNewBatch(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 32
		c.BufferMemory = 1 << 12
		c.Linger = time.Hour
	})
	require.NoError(t, err)
	tbl := newTestTable(t, a, 1, 4, nil)
	ctx := context.Background()
	var buckets []int32
	for i := range 12 {
		h, err := a.testAppend(ctx, tbl, NoPartition, StickyBucket, row(int64(i)))
		require.NoError(t, err)
		buckets = append(buckets, h.Batch().Bucket())
	}
	// 32-byte batches hold 2 rows; each pair shares a bucket, the next pair
	// moves to another bucket.
	for i := 0; i < len(buckets); i += 2 {
		assert.Equal(t, buckets[i], buckets[i+1], "rows %d and %d share a batch", i, i+1)
		if i > 0 {
			assert.NotEqual(t, buckets[i-1], buckets[i], "a new batch moves the sticky bucket")
		}
	}
}

func TestBufferFullBlocksThenErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, err := newTestAccumulator(func(c *Config) {
			c.BatchSize = 32
			c.BufferMemory = 64
			c.BufferWaitTimeout = time.Second
			c.Linger = time.Hour
			c.MaxTableShare = 1 // the whole buffer, one table
		})
		require.NoError(t, err)
		tbl := newTestTable(t, a, 1, 2, nil)
		ctx := context.Background()
		h0, err := a.testAppend(ctx, tbl, NoPartition, 0, row(1))
		require.NoError(t, err)
		_, err = a.testAppend(ctx, tbl, NoPartition, 1, row(2))
		require.NoError(t, err)
		assert.False(t, a.ForceReady())

		// Third batch: blocks until memory is freed.
		type result struct {
			h   Handle
			err error
		}
		got := make(chan result, 1)
		go func() {
			h, err := a.testAppend(ctx, tbl, NoPartition, 0, row(3))
			if err == nil {
				// same bucket as h0, but h0's batch is not full: must join it
			}
			got <- result{h, err}
		}()
		synctest.Wait()
		// Joining an open batch needs no memory: the append above succeeded.
		r := <-got
		require.NoError(t, r.err)
		assert.Same(t, h0.Batch(), r.h.Batch())

		// Fill bucket 0's batch, so that the next row needs a new one.
		q0 := a.Queues()[0]
		b0, _, _ := q0.Peek(false)
		require.True(t, q0.Pop(b0))
		go func() {
			h, err := a.testAppend(ctx, tbl, NoPartition, 0, row(4))
			got <- result{h, err}
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("append must wait for memory")
		default:
		}
		assert.True(t, a.ForceReady(), "a memory waiter makes everything ready")
		start := time.Now()
		require.True(t, b0.Complete(0, nil))
		r = <-got
		require.NoError(t, r.err)
		assert.Equal(t, start, time.Now(), "woken by the release, not by a timer")

		// Now the budget is used by two batches again; the next new batch
		// times out after BufferWaitTimeout.
		q1 := a.Queues()[1]
		b1, _, _ := q1.Peek(false)
		require.True(t, q1.Pop(b1))
		start = time.Now()
		_, err = a.testAppend(ctx, tbl, NoPartition, 1, row(5))
		require.ErrorIs(t, err, ErrBufferFull)
		assert.Equal(t, time.Second, time.Since(start))

		// A cancelled context ends the wait with its error.
		cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		_, err = a.testAppend(cctx, tbl, NoPartition, 1, row(6))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, ErrBufferFull)

		// Close fails a waiter with ErrClosed.
		go func() {
			h, err := a.testAppend(ctx, tbl, NoPartition, 1, row(7))
			got <- result{h, err}
		}()
		synctest.Wait()
		a.Close()
		r = <-got
		require.ErrorIs(t, r.err, ErrClosed)
		_, err = a.testAppend(ctx, tbl, NoPartition, 0, row(8))
		require.ErrorIs(t, err, ErrClosed)

		// Abort fails what is queued; memory comes back.
		assert.Equal(t, 1, a.Abort(ErrClosed))
		require.True(t, b1.Complete(0, nil))
		assert.Equal(t, int64(0), a.mem.inUse())
		assert.Equal(t, 0, a.Incomplete())
		select {
		case <-a.idleCh():
		default:
			t.Fatal("idle must be closed when nothing is incomplete")
		}
	})
}

func TestFlushWaitsForIncompleteBatches(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a, err := newTestAccumulator(func(c *Config) {
			c.BatchSize = 1 << 10
			c.BufferMemory = 1 << 12
			c.Linger = time.Hour
		})
		require.NoError(t, err)
		tbl := newTestTable(t, a, 1, 2, nil)
		ctx := context.Background()
		h, err := a.testAppend(ctx, tbl, NoPartition, 0, row(1))
		require.NoError(t, err)
		_, err = a.testAppend(ctx, tbl, NoPartition, 1, row(2))
		require.NoError(t, err)
		<-a.wakeCh // drain the wake-up of the appends

		flushed := make(chan error, 1)
		go func() { flushed <- a.Flush(ctx) }()
		synctest.Wait()
		assert.True(t, a.ForceReady())
		select {
		case <-a.wakeCh:
		default:
			t.Fatal("flush must wake the sender")
		}
		require.True(t, h.Batch().Complete(5, nil))
		synctest.Wait()
		select {
		case <-flushed:
			t.Fatal("flush returned before every batch completed")
		default:
		}
		q1 := a.Queues()[1]
		b1, _, _ := q1.Peek(true)
		require.True(t, q1.Pop(b1))
		boom := errors.New("boom")
		require.True(t, b1.Complete(-1, boom))
		err = <-flushed
		require.ErrorIs(t, err, boom)
		assert.False(t, a.ForceReady())
	})
}

func TestAddTableRejects(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(nil)
	require.NoError(t, err)
	logB := func() (LogBuilder, error) { return &testBuilder{}, nil }
	kvB := func() (KvBuilder, error) { return nil, errors.New("unused") }
	_, err = a.AddTable(TableSpec{ID: 1, NumBuckets: 1, NewLogBuilder: logB})
	require.NoError(t, err)
	tests := []struct {
		name string
		spec TableSpec
	}{
		{name: "no buckets", spec: TableSpec{ID: 2, NewLogBuilder: logB}},
		{name: "no builder", spec: TableSpec{ID: 3, NumBuckets: 1}},
		{name: "both builders", spec: TableSpec{ID: 4, NumBuckets: 1, NewLogBuilder: logB, NewKvBuilder: kvB}},
		{name: "duplicate id", spec: TableSpec{ID: 1, NumBuckets: 1, NewLogBuilder: logB}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.AddTable(tc.spec)
			assert.Error(t, err)
		})
	}
}

// rawBuilder reports a raw size 10× its estimate (very compressible data).
type rawBuilder struct{ testBuilder }

func (b *rawBuilder) RawSize() int { return 10 * b.EstimatedSize() }

func TestRawSizeClosesBatch(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 160
		c.BufferMemory = 1 << 12
		c.Linger = time.Hour
	})
	require.NoError(t, err)
	tbl, err := a.AddTable(TableSpec{ID: 1, NumBuckets: 1,
		NewLogBuilder: func() (LogBuilder, error) { return &rawBuilder{}, nil }, SetWriter: testSetWriter})
	require.NoError(t, err)
	var hs []Handle
	for i := range 10 {
		h, err := a.testAppend(context.Background(), tbl, NoPartition, 0, row(int64(i)))
		require.NoError(t, err)
		hs = append(hs, h)
	}
	// Estimated 16+8n reaches 160 at n=18, but raw 10×(16+8n) reaches
	// 4×160 at n=6: batches of 6 rows.
	assert.Equal(t, 6, hs[0].Batch().records)
	assert.NotSame(t, hs[0].Batch(), hs[6].Batch())
}

// TestFullBatchIsBuiltWhileItWaits: a batch is encoded as soon as it is
// full, before any sender takes it, and from then on it is charged its
// built size, not the reservation it opened with; the send only stamps it.
func TestFullBatchIsBuiltWhileItWaits(t *testing.T) {
	t.Parallel()
	builds := 0
	// 16-byte header + 8 per row: a 48-byte batch holds 4 rows.
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 48
		c.BufferMemory = 1 << 12
		c.Linger = time.Hour
	})
	require.NoError(t, err)
	tbl := newTestTable(t, a, 1, 1, &builds)
	for i := range 5 { // the fifth row opens a second batch
		_, err := a.testAppend(context.Background(), tbl, NoPartition, 0, row(int64(i)))
		require.NoError(t, err)
	}
	q := a.Queues()[0]
	q.mu.Lock()
	full, open := q.batches[0], q.batches[1]
	q.mu.Unlock()
	require.True(t, full.full)
	require.Eventually(t, full.Built, time.Minute, time.Millisecond, "encoded without a sender")
	assert.False(t, open.Built(), "a batch still open to appends is not")
	assert.Equal(t, int64(16+4*8), full.reserved.Load(), "charged its built size")
	assert.Equal(t, int64(16+4*8)+open.reserved.Load(), a.mem.inUse())

	b, _, _ := q.Peek(false)
	require.Same(t, full, b)
	require.True(t, q.Pop(b))
	data, err := b.Build(9, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(9), binary.BigEndian.Uint64(data))
	assert.Equal(t, 1, builds, "the send stamped the built batch, it did not build again")
	a.prebuilding.Wait()

	require.True(t, b.Complete(7, nil))
	assert.Nil(t, b.payload, "a completed batch lets its bytes go, though its handles live on")
	assert.Equal(t, open.reserved.Load(), a.mem.inUse())
}

func TestNoLingerTableIsReadyAtOnce(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) { c.Linger = time.Hour })
	require.NoError(t, err)
	var mu sync.Mutex
	spec := func(id int64, noLinger bool) TableSpec {
		return TableSpec{ID: id, Path: fluss.TablePath{Database: "db", Table: fmt.Sprint("t", id)}, NumBuckets: 1,
			NewLogBuilder: func() (LogBuilder, error) { return &testBuilder{Mu: &mu}, nil },
			SetWriter:     testSetWriter, NoLinger: noLinger}
	}
	lingering, err := a.AddTable(spec(1, false))
	require.NoError(t, err)
	eager, err := a.AddTable(spec(2, true))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = a.testAppend(ctx, lingering, NoPartition, 0, row(1))
	require.NoError(t, err)
	_, err = a.testAppend(ctx, eager, NoPartition, 0, row(2))
	require.NoError(t, err)
	for _, q := range a.Queues() {
		b, _, readyAt := q.Peek(false)
		require.NotNil(t, b)
		if q.Table() == eager {
			assert.True(t, readyAt.IsZero(), "a NoLinger table's non-full batch is ready now")
		} else {
			assert.Equal(t, b.created.Add(time.Hour), readyAt, "other tables keep the accumulator's linger")
		}
	}
}

// widthBuilder is the toy format for one schema: it refuses a row that is
// not exactly its width, as Fluss's builders do, and keeps what it got.
type widthBuilder struct {
	*testBuilder
	width int
	rows  []fluss.Row
}

func (b *widthBuilder) Append(r fluss.Row) error {
	if len(r) != b.width {
		return fmt.Errorf("row of %d columns for a schema of %d", len(r), b.width)
	}
	b.rows = append(b.rows, r)
	return b.testBuilder.Append(r[:1])
}

// After Reschema (columns added, a new schema id), the open batch takes no
// more rows, new batches are built for the new schema, rows converted for
// the old one are padded with nulls, and builders of the old schema are
// not reused.
func TestReschemaStartsBatchesOfTheNewSchema(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) { c.Linger = time.Hour })
	require.NoError(t, err)
	var mu sync.Mutex
	spec := func(schemaID int32, width int) TableSpec {
		return TableSpec{ID: 1, Path: fluss.TablePath{Database: "db", Table: "t"}, NumBuckets: 1, SchemaID: schemaID, Columns: width,
			NewLogBuilder: func() (LogBuilder, error) {
				return &widthBuilder{testBuilder: &testBuilder{Mu: &mu}, width: width}, nil
			},
			SetWriter: testSetWriter}
	}
	tbl, err := a.AddTable(spec(1, 1))
	require.NoError(t, err)
	ctx := context.Background()
	h1, err := a.testAppend(ctx, tbl, NoPartition, 0, row(1))
	require.NoError(t, err)
	old := h1.Batch()

	require.NoError(t, tbl.Reschema(spec(2, 2)))
	assert.Equal(t, int32(2), tbl.SchemaID())
	h2, err := a.testAppend(ctx, tbl, NoPartition, 0, row(2)) // converted for schema 1
	require.NoError(t, err)
	h3, err := a.testAppend(ctx, tbl, NoPartition, 0, fluss.Row{fluss.IntDatum(3), fluss.IntDatum(30)})
	require.NoError(t, err)
	assert.NotSame(t, old, h2.Batch(), "the open batch of schema 1 took no more rows")
	assert.Same(t, h2.Batch(), h3.Batch())
	assert.Same(t, h2.Batch().schema, tbl.schema.Load())
	got := h2.Batch().builder.(*widthBuilder).rows
	require.Len(t, got, 2)
	assert.True(t, got[0][1].Null, "the short row is padded with null")
	assert.Equal(t, int64(30), got[1][1].I)
	q := a.Queues()[0]
	b, _, readyAt := q.Peek(false)
	assert.Same(t, old, b)
	assert.True(t, readyAt.IsZero(), "the closed batch is ready")

	// The old batch's builder comes back after its send: not reused.
	require.True(t, q.Pop(old))
	_, err = old.Build(NoSequence, NoSequence)
	require.NoError(t, err)
	require.True(t, old.Complete(0, nil))
	bld, s, err := tbl.getBuilder()
	require.NoError(t, err)
	assert.Equal(t, 2, bld.(*widthBuilder).width)
	assert.Same(t, tbl.schema.Load(), s)

	assert.Error(t, tbl.Reschema(TableSpec{ID: 2, NewLogBuilder: spec(3, 3).NewLogBuilder}), "another table")
}
