package accumulator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// blockingBuilder blocks its first Append until release is closed, after
// telling entered.
type blockingBuilder struct {
	testBuilder
	entered chan struct{}
	release chan struct{}
}

func (b *blockingBuilder) Append(row fluss.Row) error {
	if b.entered != nil {
		close(b.entered)
		b.entered = nil
		<-b.release
	}
	return b.testBuilder.Append(row)
}

// The sender stops once the accumulator is closed and no batch is
// incomplete. An append that opens a new batch while Close runs must either
// fail with ErrClosed or be counted as incomplete before Close returns;
// otherwise its handle is queued after the sender stopped and never
// completes.
func TestCloseDuringNewBatchIsNotMissed(t *testing.T) {
	t.Parallel()
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 1 << 10
		c.BufferMemory = 1 << 16
		c.Linger = time.Hour
	})
	require.NoError(t, err)
	bb := &blockingBuilder{entered: make(chan struct{}), release: make(chan struct{})}
	entered := bb.entered
	tbl, err := a.AddTable(TableSpec{ID: 1, NumBuckets: 1, SetWriter: testSetWriter,
		NewLogBuilder: func() (LogBuilder, error) { return bb, nil }})
	require.NoError(t, err)

	type result struct {
		h   Handle
		err error
	}
	res := make(chan result, 1)
	go func() {
		h, err := a.testAppend(context.Background(), tbl, NoPartition, 0, row(1))
		res <- result{h, err}
	}()
	<-entered // the appender is inside the new batch, past its closed checks
	a.Close()
	// What a sender sees after Close: done when nothing is incomplete.
	senderDone := a.Closed() && a.Incomplete() == 0
	close(bb.release)
	r := <-res
	if r.err != nil {
		assert.ErrorIs(t, r.err, ErrClosed)
		assert.Zero(t, a.Incomplete())
		assert.Zero(t, a.mem.inUse(), "reservation released")
		select {
		case <-a.idleCh():
		default:
			t.Fatal("accumulator not idle after a refused append")
		}
		return
	}
	assert.False(t, senderDone, "append accepted after Close while the accumulator looked drained: its handle never completes")
}
