package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// loadTable is a log table for (producer, seq) rows.
func loadTable(name string, buckets int) table {
	return table{name: name, buckets: buckets, columns: []fluss.Column{
		col("producer", fluss.String()),
		col("seq", fluss.BigInt()),
	}}
}

func jsonRoute(topic, table string) string {
	return fmt.Sprintf("  - topic: %s\n    table: %s\n", topic, table)
}

type rowID struct {
	producer string
	seq      int64
}

// readIDs reads the (producer, seq) rows of a load table back out of Fluss,
// counting each.
func readIDs(t *testing.T, e *env, table string) map[rowID]int {
	t.Helper()
	got := make(map[rowID]int)
	for _, r := range e.scanLog(t, table) {
		got[rowID{str(t, r.Row, "producer"), num(t, r.Row, "seq")}]++
	}
	return got
}

func loadRecord(topic, producer string, seq int) *kgo.Record {
	return &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"producer": %q, "seq": %d}`, producer, seq)}
}

// TestReloadAddsRoute rewrites the configuration with a new route and sends
// SIGHUP: the new topic is served without a restart; a configuration naming a
// missing table is refused and the routes in force stay.
func TestReloadAddsRoute(t *testing.T) {
	e := newEnv(t)
	first := e.createTable(t, loadTable("first", 1))
	second := e.createTable(t, loadTable("second", 1))
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute("first", first)})

	require.Equal(t, kerr.UnknownTopicOrPartition.Code, metadataError(t, g.KafkaAddr, "second"), "no route for topic second yet")

	g.RequireRewriteRoutes(t, jsonRoute("first", first)+jsonRoute("second", second))
	g.RequireSignal(t, syscall.SIGHUP)
	require.NoError(t, waitFor(t.Context(), 2*time.Minute, func() bool {
		return g.RequireMetrics(t).Sum("fluss_gateway_config_reloads_total", `result="success"`) == 1
	}), "reload not applied; log:\n%s", g.Logs())
	assert.Equal(t, float64(2), g.RequireMetrics(t).Sum("fluss_gateway_routes"))
	require.Equal(t, int16(0), metadataError(t, g.KafkaAddr, "second"))

	cl := newProducer(t, g.KafkaAddr)
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, loadRecord("second", "p", i), loadRecord("first", "p", i))
	}
	produceAll(t, cl, recs...)
	for _, table := range []string{first, second} {
		got := readIDs(t, e, table)
		require.Len(t, got, 20, table)
		for i := range 20 {
			assert.Equal(t, 1, got[rowID{"p", int64(i)}], "%s seq %d", table, i)
		}
	}

	// A route to a table that does not exist is refused as a whole.
	g.RequireRewriteRoutes(t, jsonRoute("first", first)+jsonRoute("second", second)+jsonRoute("third", e.Name+".missing"))
	g.RequireSignal(t, syscall.SIGHUP)
	require.NoError(t, waitFor(t.Context(), 2*time.Minute, func() bool {
		return g.RequireMetrics(t).Sum("fluss_gateway_config_reloads_total", `result="failure"`) == 1
	}), "refused reload not counted; log:\n%s", g.Logs())
	assert.Equal(t, float64(2), g.RequireMetrics(t).Sum("fluss_gateway_routes"))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, metadataError(t, g.KafkaAddr, "third"))
	produceAll(t, cl, loadRecord("second", "q", 0))
	assert.Equal(t, 1, readIDs(t, e, second)[rowID{"q", 0}])

	g.RequireStop(t)
}

// TestSIGTERMDuringLoadLosesNoAckedRecord stops the gateway while a producer
// is writing as fast as it can: the gateway exits cleanly, and every record
// the producer saw acknowledged is in Fluss, once.
func TestSIGTERMDuringLoadLosesNoAckedRecord(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("load", 2))
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute("load", tbl)})
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(2000))
	require.NoError(t, err)

	var (
		mu        sync.Mutex
		acked     = make(map[int64]bool)
		fails     int
		callbacks sync.WaitGroup
	)
	const signalAfter = 5000
	signalled := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	produced := make(chan int)
	go func() {
		n := 0
		for ; ctx.Err() == nil; n++ {
			seq := int64(n)
			callbacks.Add(1)
			cl.Produce(ctx, loadRecord("load", "p", n), func(_ *kgo.Record, err error) {
				defer callbacks.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fails++
					return
				}
				acked[seq] = true
				if len(acked) == signalAfter {
					close(signalled)
				}
			})
		}
		produced <- n
	}()

	select {
	case <-signalled:
	case <-time.After(2 * time.Minute):
		t.Fatalf("fewer than %d records acknowledged in two minutes; log:\n%s", signalAfter, g.Logs())
	}
	g.RequireSignal(t, syscall.SIGTERM)
	g.RequireCleanExit(t)
	// The gateway is gone: stop producing and fail whatever the producer
	// still holds (Close fails buffered records with ErrClientClosed).
	cancel()
	n := <-produced
	cl.Close()
	callbacks.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("produced %d, acknowledged %d, failed %d", n, len(acked), fails)
	require.GreaterOrEqual(t, len(acked), signalAfter)

	got := readIDs(t, e, tbl)
	for seq := range acked {
		require.Equal(t, 1, got[rowID{"p", seq}], "acknowledged record %d read back %d times", seq, got[rowID{"p", seq}])
	}
	for id, c := range got {
		assert.Equal(t, 1, c, "record %d read back %d times", id.seq, c)
	}
}

// TestTwoInstances runs two gateways on different ports in front of the same
// tables with idempotent producers on both at once: no producer id is handed
// out twice, and every record is in Fluss exactly once.
func TestTwoInstances(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("shared", 3))
	routes := jsonRoute("shared", tbl)
	gateways := []*gatewaytest.Process{
		startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: routes}),
		startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: routes}),
	}
	const producersPerGateway, perProducer = 3, 400

	type producer struct {
		name string
		cl   *kgo.Client
	}
	var producers []producer
	for gi, g := range gateways {
		for p := range producersPerGateway {
			producers = append(producers, producer{fmt.Sprintf("g%d-p%d", gi, p), newProducer(t, g.KafkaAddr)})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(producers))
	for i, p := range producers {
		wg.Go(func() {
			recs := make([]*kgo.Record, perProducer)
			for s := range recs {
				recs[s] = loadRecord("shared", p.name, s)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			// In a few rounds, so that both gateways' writes interleave.
			for start := 0; start < perProducer; start += 100 {
				if err := p.cl.ProduceSync(ctx, recs[start:start+100]...).FirstErr(); err != nil {
					errs[i] = fmt.Errorf("%s: %w", p.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	ids := make(map[int64]string)
	for _, p := range producers {
		id, epoch, err := p.cl.ProducerID(t.Context())
		require.NoError(t, err, p.name)
		require.GreaterOrEqual(t, id, int64(0), p.name)
		t.Logf("%s: producer id %d epoch %d", p.name, id, epoch)
		other, dup := ids[id]
		require.False(t, dup, "producer id %d handed out to %s and %s", id, other, p.name)
		ids[id] = p.name
	}

	got := readIDs(t, e, tbl)
	require.Len(t, got, len(producers)*perProducer)
	for _, p := range producers {
		for s := range perProducer {
			assert.Equal(t, 1, got[rowID{p.name, int64(s)}], "%s seq %d", p.name, s)
		}
	}
	for _, g := range gateways {
		m := g.RequireMetrics(t)
		assert.Equal(t, float64(producersPerGateway*perProducer), m.Sum("fluss_gateway_route_records_total", `route="shared"`))
		// The data table's records only: the producer-state commits are
		// records of their own table.
		assert.Equal(t, float64(producersPerGateway*perProducer), m.Sum("fluss_gateway_sender_records_total", fmt.Sprintf(`table="%s"`, tbl)))
	}
	for _, g := range gateways {
		g.RequireStop(t)
	}
}

// TestSmallBufferBackPressure runs producers faster than a tiny memory
// budget drains: the gateway slows the producers down instead of failing
// them, and every record lands once. The budget holds the requests too, so
// batches must be smaller than its requests' part (half of it).
func TestSmallBufferBackPressure(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("pressure", 2))
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute("pressure", tbl),
		Buffer: "512KiB", BatchSize: "16KiB", Linger: "5ms", MaxMessage: "96KiB"})
	const producers, perProducer = 4, 5000
	var wg sync.WaitGroup
	errs := make([]error, producers)
	for p := range producers {
		cl := newProducer(t, g.KafkaAddr, kgo.ProducerBatchMaxBytes(64<<10))
		wg.Go(func() {
			recs := make([]*kgo.Record, perProducer)
			for s := range recs {
				recs[s] = loadRecord("pressure", fmt.Sprintf("p%d", p), s)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			errs[p] = cl.ProduceSync(ctx, recs...).FirstErr()
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	got := readIDs(t, e, tbl)
	require.Len(t, got, producers*perProducer)
	for id, c := range got {
		require.Equal(t, 1, c, "%v", id)
	}
	m := g.RequireMetrics(t)
	assert.Zero(t, m.Sum("fluss_gateway_accumulator_buffer_full_total"))
	assert.Equal(t, float64(512<<10), m.Sum("fluss_gateway_accumulator_buffer_limit_bytes"))
	assert.Equal(t, float64(producers*perProducer), m.Sum("fluss_gateway_sender_records_total", fmt.Sprintf(`table="%s"`, tbl)))
	t.Logf("batches %v, buffer waits visible to a scrape: %v", m.Sum("fluss_gateway_sender_batches_total"), m.Sum("fluss_gateway_accumulator_buffer_waiters"))
	g.RequireStop(t)
}

// TestValidateCommand runs `gateway validate` against the real tables: a
// fitting configuration passes, and a broken one is refused with errors
// that name the route, the table and the column.
func TestValidateCommand(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("checked", 1))
	bin, err := gatewayBinary()
	require.NoError(t, err)
	validate := func(routes string) (string, error) {
		path := filepath.Join(t.TempDir(), "gateway.yaml")
		cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: routes}
		require.NoError(t, os.WriteFile(path, []byte(cfg.yaml(freePort(t), freePort(t))), 0o600))
		out, err := exec.Command(bin, "validate", "-config", path).CombinedOutput()
		return string(out), err
	}

	out, err := validate(jsonRoute("good", tbl))
	require.NoError(t, err, out)
	assert.Contains(t, out, "route good -> "+tbl+": ok")

	out, err = validate(jsonRoute("good", tbl) +
		fmt.Sprintf("  - topic: missing\n    table: %s.nope\n", e.Name) +
		fmt.Sprintf("  - topic: badcol\n    table: %s\n    metadata:\n      timestamp: no_such_column\n", tbl))
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, out, "missing")
	assert.Contains(t, out, e.Name+".nope")
	assert.Contains(t, out, "badcol")
	assert.Contains(t, out, "no_such_column")
	t.Logf("validate output:\n%s", out)
}
