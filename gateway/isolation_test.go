package gateway

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
	"github.com/fluss-kafka/gateway/internal/metrictest"
)

// One table's Fluss writes are held (a stalled table) while several
// producers keep writing to it; a producer of another table on the same
// gateway and tablet server gets every record acknowledged before the hold
// ends. The held table's producers wait: nothing of theirs is acknowledged
// until the hold ends, then all of it. Without per-table shares the held
// table fills the buffer and the other producer cannot finish until then.
func TestStalledTableDoesNotStopOtherTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl, err := flussfake.NewCluster()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	desc := fluss.TableDescriptor{Schema: fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}}, BucketCount: 2}
	heldID, err := cl.AddTable(fluss.TablePath{Database: "db", Table: "held"}, desc)
	require.NoError(t, err)
	freeID, err := cl.AddTable(fluss.TablePath{Database: "db", Table: "free"}, desc)
	require.NoError(t, err)
	hold := cl.HoldTable(heldID)
	go func() {
		for {
			select {
			case <-hold.Arrived():
			case <-ctx.Done():
				return
			}
		}
	}()
	defer hold.Release()
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: '127.0.0.1:0'}
fluss: {bootstrap: ['%s'], request_timeout: 2m}
writer: {buffer_memory: 8MiB, batch_size: 256KiB, linger: 5ms, delivery_timeout: 2m}
routes:
  - {topic: held, table: db.held, value: {format: raw, column: payload}}
  - {topic: free, table: db.free, value: {format: raw, column: payload}}
`, cl.Bootstrap())))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)
	addr := g.kafkaListeners[0].Addr().String()
	// Random bytes: the writer charges a batch waiting for Fluss its
	// compressed size once it is built, and zeros would compress to nothing.
	value := make([]byte, 1000)
	_, _ = crand.Read(value)
	producer := func(linger time.Duration, buffered int) *kgo.Client {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(linger),
			kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.MaxBufferedRecords(buffered))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}

	began := time.Now()
	// The held table's producers: as fast as they may.
	var heldSent, heldAcked, heldFailed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		// Requests of about 1 MiB, however fast the loop runs (-race): 8 of
		// them would fill the requests' part.
		c := producer(time.Second, 10000)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done(): // the test failed: do not spin on a closed client
					return
				default:
				}
				heldSent.Add(1)
				c.Produce(ctx, &kgo.Record{Topic: "held", Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						heldFailed.Add(1)
						return
					}
					heldAcked.Add(1)
				})
			}
		})
	}
	// Let them take what the held table may: its share of the writer's
	// memory (4 MiB; batches open within it, so it fills to within about a
	// batch of 256 KiB), or its share of the requests' memory, past which
	// the gateway refuses its batches as busy (which of the two comes first
	// depends on how large the waiting batches are once compressed).
	busy := func() float64 {
		return metrictest.Value(t, g.reg, "fluss_gateway_route_table_busy_batches_total", "route", "held")
	}
	require.Eventually(t, func() bool { return g.acc.BufferedBytes() >= 4<<20-512<<10 || busy() > 0 }, time.Minute, 10*time.Millisecond)

	// The other table's producer: every record acknowledged meanwhile.
	t.Logf("held table's share filled after %v", time.Since(began))
	began = time.Now()
	free := producer(time.Millisecond, 1000)
	const n = 20000
	var freeErr atomic.Value
	var acked sync.WaitGroup
	for range n {
		acked.Add(1)
		free.Produce(ctx, &kgo.Record{Topic: "free", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				freeErr.CompareAndSwap(nil, err)
			}
			acked.Done()
		})
	}
	acked.Wait()
	t.Logf("other table: %d records in %v", n, time.Since(began))
	assert.Nil(t, freeErr.Load(), "the other table's records")
	assert.Zero(t, heldAcked.Load(), "nothing of the held table is acknowledged during the hold")
	assert.EqualValues(t, n, cl.LogEndOffset(freeID, fluss.NoPartition, 0)+cl.LogEndOffset(freeID, fluss.NoPartition, 1))

	// The hold ends: the held table's producers get everything acknowledged.
	close(stop)
	hold.Release() // before the wait: a producer with a full buffer waits in Produce
	wg.Wait()
	t.Logf("held table during the hold: %d records handed to the producers, %d batches refused as busy",
		heldSent.Load(), int(metrictest.Value(t, g.reg, "fluss_gateway_route_table_busy_batches_total", "route", "held")))
	require.Eventually(t, func() bool { return heldAcked.Load()+heldFailed.Load() == heldSent.Load() }, time.Minute, 10*time.Millisecond,
		"held table after the hold: %d acknowledged, %d failed of %d", heldAcked.Load(), heldFailed.Load(), heldSent.Load())
	assert.Zero(t, heldFailed.Load())
	assert.EqualValues(t, heldAcked.Load(), cl.LogEndOffset(heldID, fluss.NoPartition, 0)+cl.LogEndOffset(heldID, fluss.NoPartition, 1))
}
