package accumulator

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// A table at its share waits for its own releases; another table's
// requests are granted meanwhile, in arrival order among themselves.
func TestMemoryBudgetTableShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemoryBudget(100, 50, 0)
		var a, b tableMemory
		ctx := context.Background()
		require.NoError(t, m.acquire(ctx, &a, 25, time.Minute, nil))
		require.NoError(t, m.acquire(ctx, &a, 25, time.Minute, nil))

		granted := make(chan string, 4)
		go func() {
			if m.acquire(ctx, &a, 25, time.Minute, nil) == nil {
				granted <- "a"
			}
		}()
		synctest.Wait()
		assert.Equal(t, 1, m.waiting(), "table a is at its share")

		// b is not behind a's waiter.
		require.NoError(t, m.acquire(ctx, &b, 25, time.Minute, nil))
		require.NoError(t, m.acquire(ctx, &b, 25, time.Minute, nil))
		assert.Equal(t, int64(100), m.inUse())
		go func() {
			if m.acquire(ctx, &b, 25, time.Minute, nil) == nil {
				granted <- "b"
			}
		}()
		synctest.Wait()
		assert.Equal(t, 2, m.waiting())

		// b's release goes to b's waiter: a's, ahead of it, is at its share.
		m.release(&b, 25)
		synctest.Wait()
		assert.Equal(t, "b", <-granted)
		assert.Equal(t, 1, m.waiting())
		// a's release lets a's own waiter in.
		m.release(&a, 25)
		synctest.Wait()
		assert.Equal(t, "a", <-granted)
		assert.Equal(t, int64(50), m.tableInUse(&a))
		assert.Equal(t, int64(50), m.tableInUse(&b))
		assert.Zero(t, m.waiting())

		// A request larger than a table's share can never be met.
		err := m.acquire(ctx, &b, 60, time.Minute, nil)
		require.ErrorIs(t, err, ErrRecordTooLarge)
	})
}

// Two waiters of the same capped table keep their order even when the
// later one is smaller.
func TestMemoryBudgetOrderWithinTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemoryBudget(100, 50, 0)
		var a tableMemory
		ctx := context.Background()
		require.NoError(t, m.acquire(ctx, &a, 45, time.Minute, nil))
		var mu sync.Mutex
		var order []int64
		for _, n := range []int64{20, 5} {
			go func() {
				if m.acquire(ctx, &a, n, time.Minute, nil) == nil {
					mu.Lock()
					order = append(order, n)
					mu.Unlock()
				}
			}()
			synctest.Wait()
		}
		assert.Empty(t, order, "the 5-byte request waits behind the 20-byte one of its table")
		m.release(&a, 15) // room for the 20, not for both
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int64{20}, order)
		mu.Unlock()
		m.release(&a, 5)
		synctest.Wait()
		assert.Equal(t, []int64{20, 5}, order)
	})
}

// The requests' part: capped at its size, forced bytes over it do not
// hold the tables back, the tables' waiters go first, and requests wait
// while the tables use the whole budget (the gateway stops reading).
func TestMemoryBudgetRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemoryBudget(100, 100, 40)
		r := &RequestMemory{m: m, wake: func() {}}
		var a tableMemory
		ctx := context.Background()

		require.True(t, r.TryAcquire(40))
		assert.False(t, r.TryAcquire(1), "at the requests' cap")
		err := r.Acquire(ctx, 41)
		require.ErrorIs(t, err, ErrRecordTooLarge)
		// Decoded batches are forced in, far over the cap: the tables
		// still get the budget less the requests' cap.
		r.Force(50)
		assert.Equal(t, int64(90), m.tableInUse(&m.requests))
		require.NoError(t, m.acquire(ctx, &a, 60, time.Minute, nil))
		assert.Equal(t, int64(150), m.inUse())
		r.Release(90)
		m.release(&a, 60)

		// Tables use it all (Fluss stalled): a request waits.
		require.NoError(t, m.acquire(ctx, &a, 100, time.Minute, nil))
		var got []string
		var mu sync.Mutex
		note := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
		go func() {
			if r.Acquire(ctx, 10) == nil {
				note("request")
			}
		}()
		synctest.Wait()
		go func() {
			if m.acquire(ctx, &a, 20, time.Minute, nil) == nil {
				note("table")
			}
		}()
		synctest.Wait()
		assert.Empty(t, got)
		assert.False(t, r.TryAcquire(1), "a table's waiter goes first")
		// 20 free: the table's waiter arrived later but goes first; the
		// request waits for the next release.
		m.release(&a, 20)
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []string{"table"}, got)
		mu.Unlock()
		m.release(&a, 10)
		synctest.Wait()
		assert.Equal(t, []string{"table", "request"}, got)
		assert.Equal(t, int64(10), m.tableInUse(&m.requests))

		// A closed budget fails waiting and later requests.
		go func() {
			if err := r.Acquire(ctx, 30); err != nil {
				note("closed")
			}
		}()
		synctest.Wait()
		m.close()
		synctest.Wait()
		assert.Equal(t, []string{"table", "request", "closed"}, got)
		require.ErrorIs(t, r.Acquire(ctx, 1), ErrClosed)
	})
}

// heldBuilder is a test builder whose buffers hold perRow bytes a row, as
// an Arrow builder's uncompressed columns outgrow the compressed estimate.
type heldBuilder struct {
	testBuilder
	perRow int
}

func (b *heldBuilder) HeldBytes() int { return b.perRow * b.Len() }

// A batch's charge follows the memory its builder holds, in chargeStep
// steps, beyond the BatchSize reserved when it opened; building it charges
// only its bytes.
func TestBatchChargeFollowsHeldMemory(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 1 << 20
		c.BufferMemory = 64 << 20
		c.Linger = time.Hour
	})
	require.NoError(t, err)
	tbl, err := a.AddTable(TableSpec{
		ID: 1, Path: fluss.TablePath{Database: "db", Table: "t"}, NumBuckets: 1,
		NewLogBuilder: func() (LogBuilder, error) { return &heldBuilder{perRow: 300 << 10}, nil },
		SetWriter:     testSetWriter,
	})
	require.NoError(t, err)
	ctx := context.Background()
	var h Handle
	for i := range 4 { // 1.2 MiB held: within a step of the 1 MiB reserved
		h, err = a.testAppend(ctx, tbl, NoPartition, 0, row(int64(i)))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1<<20), a.mem.inUse())
	_, err = a.testAppend(ctx, tbl, NoPartition, 0, row(4))
	require.NoError(t, err)
	assert.Equal(t, int64(5*300<<10), a.mem.inUse(), "1.5 MiB held, charged")
	assert.Equal(t, int64(5*300<<10), a.mem.tableInUse(&tbl.mem))

	b := h.Batch()
	q := a.Queues()[0]
	got, _, _ := q.Peek(true)
	require.Same(t, b, got)
	require.True(t, q.Pop(b))
	data, err := b.Build(NoSequence, NoSequence)
	require.NoError(t, err)
	assert.Equal(t, int64(cap(data)), a.mem.inUse(), "built: its bytes only")
	b.Complete(0, nil)
	assert.Zero(t, a.mem.inUse())
}

// TestLargeBuildersAreNotKept: a builder holding more than a batch's
// reservation goes to the collector, not to the table's free list, which
// is memory outside the budget; a small one is kept for the next batch.
func TestLargeBuildersAreNotKept(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 1 << 20
		c.BufferMemory = 64 << 20
	})
	require.NoError(t, err)
	tbl, err := a.AddTable(TableSpec{
		ID: 1, Path: fluss.TablePath{Database: "db", Table: "t"}, NumBuckets: 1,
		NewLogBuilder: func() (LogBuilder, error) { return &heldBuilder{perRow: 300 << 10}, nil },
		SetWriter:     testSetWriter,
	})
	require.NoError(t, err)
	fill := func(rows int) BatchBuilder {
		b := &heldBuilder{perRow: 300 << 10}
		for i := range rows {
			require.NoError(t, b.Append(row(int64(i))))
		}
		return b
	}
	cur := tbl.schema.Load()
	tbl.putBuilder(fill(4), cur) // 1.2 MiB held
	assert.Empty(t, tbl.builders, "a builder holding more than BatchSize is dropped")
	small := fill(3) // 0.9 MiB
	tbl.putBuilder(small, cur)
	require.Len(t, tbl.builders, 1)
	got, _, err := tbl.getBuilder()
	require.NoError(t, err)
	assert.Same(t, small, got)
	assert.Zero(t, got.Len(), "kept reset")
}

// A sealed batch is charged its size, not a whole BatchSize: many small
// exactly-once batches waiting for Fluss fit the budget (at BatchSize each,
// the fifth of these would wait for memory and fail at BufferWaitTimeout).
func TestSealedBatchChargedItsSize(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 1 << 20
		c.BufferMemory = 4 << 20
		c.BufferWaitTimeout = 10 * time.Millisecond
	})
	require.NoError(t, err)
	tbl := newTestTable(t, a, 1, 1, nil)
	for w := range int64(40) {
		_, err := a.AppendSealed(context.Background(), tbl, NoPartition, 0, Seal{WriterID: w, Sequence: 0},
			[]Op{{Kind: fluss.WriteAppend, Row: row(w)}, {Kind: fluss.WriteAppend, Row: row(w + 1)}})
		require.NoError(t, err, "sealed batch %d", w)
	}
	assert.Equal(t, int64(40*(16+2*8)), a.BufferedBytes(), "each charged the toy format's 32 bytes")
}
