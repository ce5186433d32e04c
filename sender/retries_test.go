package sender

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Retries wait in their bucket's state in sequence order (responses may
// come back out of order), and the drain takes them ahead of every batch
// never sent.
func TestRetriesOrderBySequence(t *testing.T) {
	t.Parallel()
	h := newIdleHarness(t, func(c *writerConfig) {
		c.BatchSize = 24 // two rows a batch
		c.BufferMemory = 1 << 12
	}, tableDef{id: 1, buckets: 1, server: 1})
	for i := range 5 {
		h.append(t, 1, 0, int64(i))
	}
	q := h.acc.Queues()[0]
	st := h.snd.state(q)
	var popped []*batch
	for i := range 3 {
		b, _, _ := q.Peek(false)
		require.True(t, q.Pop(b))
		popped = append(popped, &batch{Batch: b, writerID: 1, sequence: int32(i), attempts: 1})
	}
	// Responses come back out of order: 2, then 0, then 1.
	st.retryLater(popped[2])
	st.retryLater(popped[0])
	st.retryLater(popped[1])
	var seqs []int32
	for {
		c, ok := h.snd.head(q, &drainPass{force: true})
		if !ok {
			break
		}
		if c.retry != nil {
			st.unretry(c.retry)
		} else {
			require.True(t, q.Pop(c.b.Batch))
			popped = append(popped, &c.b)
		}
		seqs = append(seqs, c.b.sequence)
	}
	assert.Equal(t, []int32{0, 1, 2, noSequence, noSequence}, seqs)
	h.start()
	for _, b := range popped {
		b.Complete(-1, context.Canceled) // the test took them from the sender
	}
	h.close(t)
}
