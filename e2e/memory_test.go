package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// TestMemoryBoundWithStalledFluss: 50 producers of 1 KB records (lz4,
// acks=all) against a gateway whose Fluss stops answering writes (flussfake
// holds every write of the table: a stall no real server shows on demand).
// The gateway's one memory budget (writer.buffer_memory: the rows for Fluss,
// and the Kafka requests being read and decoded) fills, it stops reading
// sockets, and its peak RSS stays within buffer_memory + 100 MiB (read once
// the stall has lasted at least 15 s and the budget has filled and read
// waits have appeared, however long filling takes on a busy machine, up to
// two minutes). Once the writes are answered every record is acknowledged.
// The gateway runs without the race detector (it multiplies memory) and, as
// in a container with a memory limit of buffer_memory + 100 MiB, with the Go
// memory limit automemlimit would set from it (90 %).
func TestMemoryBoundWithStalledFluss(t *testing.T) {
	const (
		producers = 50
		buffer    = 64 << 20
		bound     = buffer + 100<<20
		stall     = 15 * time.Second // at least; longer until the budget is full
		fillWait  = 90 * time.Second // for the budget to fill, on a busy machine too; below the delivery timeout (2m)
	)
	fc, err := flussfake.NewCluster()
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	path := fluss.TablePath{Database: "db", Table: "stalled"}
	id, err := fc.AddTable(path, fluss.TableDescriptor{
		Schema:      fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}},
		BucketCount: 4,
	})
	require.NoError(t, err)
	hold := fc.HoldTable(id)
	go func() { // arrivals are not needed
		for {
			select {
			case <-hold.Arrived():
			case <-t.Context().Done():
				return
			}
		}
	}()
	t.Cleanup(hold.Release)

	bin, err := gatewaytest.Binary(false)
	require.NoError(t, err)
	cfg := gatewayConfig{
		Bootstrap: fc.Bootstrap(),
		Routes:    "  - {topic: stalled, table: db.stalled, value: {format: raw, column: payload}}\n",
		Buffer:    strconv.Itoa(buffer),
		BatchSize: "2MiB",
	}.config()
	cfg.DeliveryTimeout = "2m"
	// automemlimit in a container limited to the bound: 90 % of it.
	cfg.Env = []string{fmt.Sprintf("GOMEMLIMIT=%d", bound*9/10)}
	g := gatewaytest.StartTest(t, bin, cfg)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var acked, failed, sent atomic.Int64
	var wg sync.WaitGroup
	// An idempotent producer has one request in flight, and nothing is
	// answered: what the gateway holds is each producer's first request.
	// The producers linger (up to franz-go's longest, a minute) until their
	// 2000 buffered records (about 2 MB, spread over the 4 partitions, under
	// the 1 MB batch limit) are all there, so that first request carries
	// them all however slowly the records are made (with a 5 ms linger a
	// busy machine sent small first requests: 21 MiB of the 64 MiB budget
	// in 2 minutes, no read waits).
	clients := make([]*kgo.Client, producers)
	for p := range producers {
		cl := newProducer(t, g.KafkaAddr, kgo.ProducerBatchCompression(kgo.Lz4Compression()),
			kgo.MaxBufferedRecords(2000), kgo.RecordDeliveryTimeout(3*time.Minute),
			kgo.ProducerLinger(time.Minute), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		clients[p] = cl
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			for ctx.Err() == nil {
				v := make([]byte, 1000)
				for i := range v { // compresses about 2:1 with lz4, like JSON
					v[i] = byte('a' + rng.IntN(16))
				}
				sent.Add(1)
				cl.Produce(t.Context(), &kgo.Record{Topic: "stalled", Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						return
					}
					acked.Add(1)
				})
			}
		})
	}

	// The stall: nothing is answered for at least stall and until the budget
	// has filled and the gateway has stopped reading sockets (how long 50
	// producers take to fill it depends on the machine); the kernel keeps
	// the process's peak RSS (VmHWM).
	start := time.Now()
	var inUse, waits float64
	full := func() bool {
		m, err := g.Scrape()
		if err != nil {
			return false
		}
		inUse = m.Sum("fluss_gateway_accumulator_buffer_bytes")
		waits = m.Sum("fluss_gateway_kafka_read_budget_waits_total")
		return time.Since(start) >= stall && inUse > float64(buffer)*0.8 && waits > 0
	}
	if err := waitFor(t.Context(), fillWait, full); err != nil {
		t.Logf("after %v the budget holds %.0f MiB of %d MiB with %.0f read waits; the assertions below say which part failed",
			time.Since(start).Round(time.Second), inUse/(1<<20), buffer>>20, waits)
	}
	stalled := time.Since(start).Round(time.Second)
	hwm := peakRSS(t, g.Pid())
	if resp, err := http.Get(g.AdminURL + "/debug/pprof/heap"); err == nil {
		f, _ := os.Create("/tmp/heap.pb.gz")
		_, _ = io.Copy(f, resp.Body)
		f.Close()
		resp.Body.Close()
	}
	m := g.RequireMetrics(t)
	inUse = m.Sum("fluss_gateway_accumulator_buffer_bytes")
	waits = m.Sum("fluss_gateway_kafka_read_budget_waits_total")
	t.Logf("stalled %v: gateway peak RSS (VmHWM) %.0f MiB, budget in use %.0f MiB of %d MiB (requests' part %.0f MiB), heap in use %.0f MiB, next GC at %.0f MiB, %0.f read waits, %d records sent, %d acked",
		stalled, float64(hwm)/(1<<20), inUse/(1<<20), buffer>>20,
		m.Sum("fluss_gateway_kafka_read_budget_bytes")/(1<<20), m.Sum("go_memstats_heap_inuse_bytes")/(1<<20),
		m.Sum("go_memstats_next_gc_bytes")/(1<<20), waits, sent.Load(), acked.Load())
	assert.Zero(t, acked.Load(), "nothing can be acknowledged while Fluss holds every write")
	assert.Greater(t, inUse, float64(buffer)*0.8, "the budget filled up: the stall was real")
	assert.Positive(t, waits, "the gateway stopped reading sockets")
	assert.LessOrEqual(t, hwm, int64(bound), "peak RSS within buffer_memory + 100 MiB")

	// Answer the writes: everything handed over is acknowledged.
	hold.Release()
	cancel()
	wg.Wait()
	for _, cl := range clients { // no linger for what is left
		wg.Go(func() { _ = cl.Flush(t.Context()) })
	}
	require.NoError(t, waitFor(t.Context(), 3*time.Minute, func() bool { return acked.Load()+failed.Load() == sent.Load() }),
		"records acknowledged after the stall: %d of %d (%d failed)", acked.Load(), sent.Load(), failed.Load())
	wg.Wait() // the flushes
	assert.Zero(t, failed.Load(), "records failed")
	var written int64
	for b := range int32(4) {
		written += fc.LogEndOffset(id, fluss.NoPartition, b)
	}
	assert.Equal(t, acked.Load(), written, "rows in the table vs records acknowledged")
	g.RequireStop(t)
}

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
