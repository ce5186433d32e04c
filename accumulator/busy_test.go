package accumulator

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Busy lists the queues that hold batches, each once, and drops a queue
// the sender emptied (Pop or DrainAll) on the next call.
func TestBusyListsQueuesWithBatches(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) { c.Linger = time.Hour })
	require.NoError(t, err)
	tbl := newTestTable(t, a, 1, 8, nil)
	ctx := context.Background()
	assert.Empty(t, a.Busy(nil))

	for _, b := range []int32{5, 2, 5, 7} {
		_, err := a.testAppend(ctx, tbl, NoPartition, b, row(int64(b)))
		require.NoError(t, err)
	}
	qs := a.Queues()
	assert.Equal(t, []*Queue{qs[5], qs[2], qs[7]}, a.Busy(nil), "in the order they became busy, each once")

	head, _, _ := qs[5].Peek(false)
	require.True(t, qs[5].Pop(head))
	qs[7].DrainAll()
	assert.Equal(t, []*Queue{qs[2]}, a.Busy(nil))
	assert.Equal(t, []*Queue{qs[2]}, a.Busy(nil), "stays listed while it holds a batch")

	_, err = a.testAppend(ctx, tbl, NoPartition, 7, row(1))
	require.NoError(t, err)
	assert.Equal(t, []*Queue{qs[2], qs[7]}, a.Busy(nil), "an emptied queue is listed again by its next batch")
}

// Appenders race a sender that pops only what Busy lists. Every batch is
// reached that way, and once the appenders have returned, every queue
// holding a batch is listed. (While an append is under way its queue may
// be missing from one call: the appender lists it and then wakes the
// sender, which looks again.)
func TestBusyNeverMissesAQueueWithBatches(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.Linger = time.Hour
		c.BatchSize = 16 + 8 // one row per batch: every append makes a batch
	})
	require.NoError(t, err)
	const buckets, appenders, rows = 16, 4, 2000
	tbl := newTestTable(t, a, 1, buckets, nil)
	ctx := context.Background()

	var wg sync.WaitGroup
	for w := range appenders {
		wg.Go(func() {
			for i := range rows {
				if _, err := a.testAppend(ctx, tbl, NoPartition, int32((w*7+i)%buckets), row(int64(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	popped := 0
	pop := func(qs []*Queue) {
		for _, q := range qs {
			if b, _, _ := q.Peek(true); b != nil && q.Pop(b) {
				b.Complete(int64(popped), nil)
				popped++
			}
		}
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		pop(a.Busy(nil))
	}
	for {
		var holding []*Queue
		for _, q := range a.Queues() {
			if !q.Empty() {
				holding = append(holding, q)
			}
		}
		busy := a.Busy(nil)
		for _, q := range holding {
			require.Contains(t, busy, q, "queue of bucket %d holds a batch after its appenders returned and is not listed", q.Bucket())
		}
		if len(busy) == 0 {
			break
		}
		pop(busy)
	}
	assert.Equal(t, appenders*rows, popped, "every batch was reached through Busy")
	require.Len(t, a.Queues(), buckets)
}
