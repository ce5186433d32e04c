package sender

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

// slowBuilder takes longer to build batches that start with a smaller
// value, so requests drained first finish building last.
type slowBuilder struct{ testBuilder }

func (b *slowBuilder) AppendTo(dst []byte) ([]byte, error) {
	if rows := b.Rows(); len(rows) > 0 {
		time.Sleep(time.Duration(1000-rows[0]%1000) * time.Microsecond)
	}
	return b.testBuilder.AppendTo(dst)
}

// queueOrder models one connection to a tablet server, which appends
// requests in the order they were queued: it records the batch sequences
// each request carries per bucket, in that order, and hands requests to the
// fake one after the other.
type queueOrder struct {
	*fakeTransport
	mu   sync.Mutex
	seqs map[int32][]int32
	last chan struct{} // closed when the request queued last is applied
}

func (q *queueOrder) SendProduceLog(ctx context.Context, serverID int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error) {
	q.mu.Lock()
	for _, b := range req.Buckets {
		if _, seq, _, err := decodeTestBatch(b.Records); err == nil {
			q.seqs[b.Bucket] = append(q.seqs[b.Bucket], seq)
		}
	}
	wait, mine := q.last, make(chan struct{})
	q.last = mine
	q.mu.Unlock()
	inner, err := q.fakeTransport.SendProduceLog(ctx, serverID, req)
	if err != nil {
		close(mine)
		return nil, err
	}
	return fluss.NewPendingWrite(func(ctx context.Context) ([]fluss.BucketResult, error) {
		defer close(mine)
		if wait != nil {
			<-wait
		}
		return inner.Wait(ctx)
	}), nil
}

// Batches of one bucket are built concurrently but must be queued on the
// connection in sequence order; otherwise the server sees a gap
// (OUT_OF_ORDER_SEQUENCE) and the batch is retried after a backoff.
func TestRequestsQueuedInSequenceOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTransport()
		fake.leaders[1] = 1
		fake.latency = 5 * time.Millisecond
		tr := &queueOrder{fakeTransport: fake, seqs: map[int32][]int32{}}
		w, err := newTestWriter(testConfig(func(c *writerConfig) {
			c.BatchSize = 16 + 8*4
			c.BufferMemory = 1 << 20
			c.Linger = time.Millisecond
		}), tr, WithJitterSeed(1))
		require.NoError(t, err)
		tbl, err := w.AddTable(TableSpec{
			ID: 1, Path: fluss.TablePath{Database: "db", Table: "t"}, NumBuckets: 2, SetWriter: testSetWriter,
			NewLogBuilder: func() (LogBuilder, error) { return &slowBuilder{}, nil },
		})
		require.NoError(t, err)
		runErr := make(chan error, 1)
		go func() { runErr <- w.Run(context.Background()) }()

		var handles []Handle
		for i := range 400 {
			h, err := w.Write(context.Background(), tbl, NoPartition, int32(i%2), fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(int64(i))})
			require.NoError(t, err)
			handles = append(handles, h)
		}
		require.NoError(t, w.Flush(context.Background()))
		for _, h := range handles {
			require.NoError(t, h.Err())
		}
		require.NoError(t, w.Close(context.Background()))
		require.NoError(t, <-runErr)

		tr.mu.Lock()
		defer tr.mu.Unlock()
		for b, seqs := range tr.seqs {
			require.NotEmpty(t, seqs)
			for i := 1; i < len(seqs); i++ {
				assert.Equal(t, seqs[i-1]+1, seqs[i], "bucket %d: queued sequences %v", b, seqs)
			}
		}
		assert.Zero(t, w.snd.m.retriesTotal(), "no batch needed a retry")
	})
}
