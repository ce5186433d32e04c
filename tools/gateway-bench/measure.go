package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/sender"
)

// runResult is what one run measured.
type runResult struct {
	spec      runSpec
	round     int // 1 for the first write into the run's fresh tables
	records   int
	secs      float64
	wireBytes int64
	requests  int64
	p50, p99  time.Duration
	maxLat    time.Duration
	gwCPU     time.Duration
	gwRSS     int64
	benchCPU  time.Duration      // this process (producers) during the gateway run
	flussCPU  time.Duration      // the -fluss-pids processes during the gateway run
	heapInuse float64            // go_memstats_heap_inuse_bytes after the run
	readyz    [2]int             // /readyz samples during the run, and how many were not 200
	gwMetrics map[string]float64 // counter deltas over the run (gatewayCounters)
	errSeries []string           // the sender error series (cumulative) when the run had errors
	idle      *idleStat          // -idle: the gateway while the producers stayed connected and idle

	blRecords int
	blSecs    float64
	blCPU     time.Duration // the bench process while the baseline ran

	java *javaResult // -java-writer
}

// idleStat is the gateway after its producers sat connected and idle.
type idleStat struct {
	after              time.Duration
	conns, goroutines  float64
	rss                int64
	heapInuse, stackIn float64 // bytes
}

func (r *runResult) rate() float64   { return float64(r.records) / r.secs }
func (r *runResult) blRate() float64 { return float64(r.blRecords) / r.blSecs }

// cpuPerMillion is CPU seconds per million records.
func cpuPerMillion(d time.Duration, records int) float64 {
	return d.Seconds() / float64(records) * 1e6
}

// gatewayCounters are the gateway metrics whose change over a run is shown.
var gatewayCounters = []string{
	"fluss_gateway_sender_batches_total",
	"fluss_gateway_sender_batch_bytes_total",
	"fluss_gateway_sender_request_duration_seconds_count",
	"fluss_gateway_sender_retries_total",
	"fluss_gateway_sender_errors_total",
	"fluss_gateway_accumulator_buffer_full_total",
	"fluss_gateway_route_table_busy_batches_total",
	"fluss_gateway_sender_shared_entry_batches_total",
	"fluss_gateway_exactly_once_commit_duration_seconds_count",
	"fluss_gateway_exactly_once_committed_batches_total",
}

// wireCounter counts the bytes of Produce requests the producers wrote.
type wireCounter struct {
	bytes, requests atomic.Int64
}

func (w *wireCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	if key == 0 { // Produce
		w.bytes.Add(int64(n))
		w.requests.Add(1)
	}
}

// measure runs one planned run through the gateway, verifies the tables,
// then runs the baselines (Go writer, Java writer when jw is set) and
// verifies their tables.
//
// Round k writes the same records again into the same tables, whose end
// offsets then hold k times as many (log workloads only).
func measure(ctx context.Context, o *options, c *fluss.Client, g *gatewaytest.Process, jw *javaWriter, pr *plannedRun, round int) (*runResult, error) {
	gen := newGenerator(o.payloadLen, 0)
	if pr.workload == workloadUpsert {
		gen.keySpace = int64(max(1, o.records/2)) // every other record updates an earlier key
	}
	r := &runResult{spec: pr.runSpec, round: round}
	want := expected(pr, gen, o.records)
	for i := range want {
		want[i] *= int64(round)
	}
	if err := produceThroughGateway(ctx, o, g, pr, gen, r); err != nil {
		return nil, err
	}
	vctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := verify(vctx, c, pr.gwTables, want); err != nil {
		return r, fmt.Errorf("gateway path: %w", err)
	}
	if o.baseline {
		if err := writeBaseline(ctx, o, c, pr, gen, r); err != nil {
			return r, fmt.Errorf("baseline: %w", err)
		}
		if err := verify(vctx, c, pr.blTables, want); err != nil {
			return r, fmt.Errorf("baseline: %w", err)
		}
	}
	if jw != nil && len(pr.jvTables) > 0 {
		names := make([]string, len(pr.jvTables))
		for i, t := range pr.jvTables {
			names[i] = t.Path.String()
		}
		var err error
		if r.java, err = jw.write(ctx, o, names, o.records); err != nil {
			return r, err
		}
		if err := verify(vctx, c, pr.jvTables, want); err != nil {
			return r, fmt.Errorf("java writer: %w", err)
		}
	}
	return r, nil
}

// expected is each table's log end offset after records 0..n-1, record k
// going to table k mod tables.
func expected(pr *plannedRun, gen *generator, n int) []int64 {
	ids := make([][]int64, len(pr.gwTables))
	for k := range int64(n) {
		t := k % int64(len(ids))
		ids[t] = append(ids[t], gen.id(k))
	}
	out := make([]int64, len(ids))
	for i := range ids {
		out[i] = pr.workload.expectedOffsets(ids[i])
	}
	return out
}

// produceThroughGateway produces the records with o.producers franz-go
// clients, record k by producer k mod producers to topic k mod topics, and
// times it from the first Produce to the last promise.
func produceThroughGateway(ctx context.Context, o *options, g *gatewaytest.Process, pr *plannedRun, gen *generator, r *runResult) error {
	codec, err := kafkaCodec(pr.codec)
	if err != nil {
		return err
	}
	before, err := readProcStat(g.Pid())
	if err != nil {
		return err
	}
	selfBefore, err := readProcStat(os.Getpid())
	if err != nil {
		return err
	}
	flussBefore := sumCPU(o.flussPIDs)
	mBefore, err := g.Scrape()
	if err != nil {
		return fmt.Errorf("gateway metrics: %w", err)
	}
	rss := sampleRSS(g.Pid(), 100*time.Millisecond)
	ready := sampleReadiness(g.AdminURL, 500*time.Millisecond)
	fr, prodErr := produceFranz(ctx, franzRun{
		seed:      g.KafkaAddr,
		producers: o.producers,
		opts:      tunedOpts(o, codec),
		topics:    pr.topics,
		records:   o.records,
		rate:      o.rate,
		record:    franzRecordFunc(pr.workload, gen),
		idle: func() {
			if o.idle > 0 {
				r.idle = measureIdle(ctx, g, o.idle)
			}
		},
	})
	after, err := readProcStat(g.Pid())
	r.gwRSS = rss.Stop()
	r.readyz[0], r.readyz[1] = ready.Stop()
	if err != nil {
		return err
	}
	r.secs = fr.secs
	r.flussCPU = sumCPU(o.flussPIDs) - flussBefore
	selfAfter, err := readProcStat(os.Getpid())
	if err != nil {
		return err
	}
	r.benchCPU = selfAfter.cpu - selfBefore.cpu
	mAfter, err := g.Scrape()
	if err != nil {
		return fmt.Errorf("gateway metrics: %w", err)
	}
	r.heapInuse = mAfter.Sum("go_memstats_heap_inuse_bytes")
	if mAfter.Sum("fluss_gateway_sender_errors_total") > mBefore.Sum("fluss_gateway_sender_errors_total") {
		r.errSeries = mAfter.Series("fluss_gateway_sender_errors_total")
	}
	r.gwMetrics = make(map[string]float64, len(gatewayCounters))
	for _, name := range gatewayCounters {
		r.gwMetrics[name] = mAfter.Sum(name) - mBefore.Sum(name)
	}
	if err := g.Alive(); err != nil {
		return err
	}
	r.gwCPU = after.cpu - before.cpu
	r.records = fr.acked
	r.wireBytes, r.requests = fr.wireBytes, fr.requests
	r.p50, r.p99, r.maxLat = fr.p50, fr.p99, fr.maxLat
	return prodErr
}

// franzRecordFunc makes record k of workload w for a franz-go producer.
func franzRecordFunc(w workload, gen *generator) func(k int64) (value, key []byte, err error) {
	return func(k int64) ([]byte, []byte, error) {
		value, err := gen.kafkaValue(w, make([]byte, 0, 256), k)
		if err != nil || !w.keyed() {
			return value, nil, err
		}
		return value, gen.key(make([]byte, 0, 20), k), nil
	}
}

// tunedOpts are the producer options the bench has always used ("tuned"):
// franz-go's defaults with acks=all, the codec, -kafka-linger,
// -max-buffered (bounds the latency queue) and a 2-minute delivery timeout.
func tunedOpts(o *options, codec kgo.CompressionCodec) []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is franz-go's default
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(o.kafkaLinger),
		kgo.MaxBufferedRecords(o.maxBuffered),
		kgo.RecordDeliveryTimeout(2 * time.Minute),
	}
}

// defaultOpts are franz-go's defaults but for the codec (its default is
// snappy) and acks=all, which is already its default.
func defaultOpts(codec kgo.CompressionCodec) []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
	}
}

// franzRun is one timed produce with franz-go clients.
type franzRun struct {
	seed      string
	producers int
	opts      []kgo.Opt
	topics    []string
	records   int
	rate      float64 // total records/s offered; 0: as fast as possible
	record    func(k int64) (value, key []byte, err error)
	first     int64   // the records are first..first+records-1 (record k is paced as k-first)
	sent      []int64 // if not nil: the wall-clock µs at which record first+i went to its client
	idle      func()  // if not nil: called once every record is acked, before the clients close
}

// franzResult is what produceFranz measured.
type franzResult struct {
	acked            int
	secs             float64
	wireBytes        int64
	requests         int64
	p50, p99, maxLat time.Duration
}

// produceFranz produces records first..first+records-1, the k-th by
// producer k mod producers to topic k mod topics, and times it from the first Produce to
// the last promise. Latency is from Produce to the promise.
func produceFranz(ctx context.Context, fr franzRun) (franzResult, error) {
	var res franzResult
	wire := &wireCounter{}
	clients := make([]*kgo.Client, fr.producers)
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	for i := range clients {
		opts := append([]kgo.Opt{
			kgo.SeedBrokers(fr.seed),
			kgo.ClientID(fmt.Sprintf("gateway-bench-%d", i)),
			kgo.WithHooks(wire),
		}, fr.opts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return res, fmt.Errorf("kafka client: %w", err)
		}
		clients[i] = cl
	}

	lat := make([]time.Duration, fr.records)
	var (
		failed   atomic.Int64
		errMu    sync.Mutex
		firstErr error
	)
	start := time.Now()
	var wg sync.WaitGroup
	for p, cl := range clients {
		wg.Go(func() {
			for k := int64(p); k < int64(fr.records); k += int64(fr.producers) {
				if fr.rate > 0 && k%64 < int64(fr.producers) {
					// Pace: record k is due at start + k/rate.
					if d := time.Until(start.Add(time.Duration(float64(k) / fr.rate * float64(time.Second)))); d > 0 {
						time.Sleep(d)
					}
				}
				value, key, err := fr.record(fr.first + k)
				if err != nil {
					errMu.Lock()
					firstErr = errors.Join(firstErr, fmt.Errorf("record %d: %w", k, err))
					errMu.Unlock()
					break
				}
				rec := &kgo.Record{Topic: fr.topics[k%int64(len(fr.topics))], Value: value, Key: key}
				t0 := time.Now()
				if fr.sent != nil {
					fr.sent[k] = t0.UnixMicro()
				}
				cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
					lat[k] = time.Since(t0)
					if err != nil {
						failed.Add(1)
						errMu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						errMu.Unlock()
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				errMu.Lock()
				firstErr = errors.Join(firstErr, fmt.Errorf("flush: %w", err))
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	res.secs = time.Since(start).Seconds()
	if fr.idle != nil {
		fr.idle()
	}
	res.acked = fr.records - int(failed.Load())
	res.wireBytes, res.requests = wire.bytes.Load(), wire.requests.Load()
	slices.Sort(lat)
	res.p50, res.p99, res.maxLat = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	if firstErr != nil {
		return res, fmt.Errorf("%d of %d records failed; first error: %w", failed.Load(), fr.records, firstErr)
	}
	return res, nil
}

// writeBaseline writes the same rows straight through the writer, with the
// gateway's writer settings, one goroutine per producer, and times it from
// the first append to Flush.
func writeBaseline(ctx context.Context, o *options, c *fluss.Client, pr *plannedRun, gen *generator, r *runResult) error {
	cfg := accumulator.DefaultConfig()
	cfg.BatchSize, cfg.Linger, cfg.BufferMemory = o.batchSize, o.linger, int64(o.bufferMemory)
	acc, err := accumulator.New(cfg)
	if err != nil {
		return err
	}
	snd, err := sender.New(sender.DefaultConfig(), acc, c, sender.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	tables := make([]*accumulator.Table, len(pr.blTables))
	var keyEnc *fluss.KeyEncoder
	for i, info := range pr.blTables {
		spec, err := baselineSpec(info)
		if err != nil {
			return err
		}
		if tables[i], err = acc.AddTable(spec); err != nil {
			return err
		}
		if info.Descriptor.HasPrimaryKey() {
			pk, _ := fluss.KeyColumns(&info.Descriptor)
			if keyEnc, err = fluss.NewKeyEncoder(&info.Descriptor.Schema, pk, ""); err != nil {
				return err
			}
		}
	}
	sctx, stopSender := context.WithCancel(ctx)
	defer stopSender()
	runErr := make(chan error, 1)
	go func() { runErr <- snd.Run(sctx) }()

	before, err := readProcStat(os.Getpid())
	if err != nil {
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, o.producers)
	for p := range o.producers {
		wg.Go(func() {
			row := make(fluss.Row, 6)
			var buf, key []byte
			for k := int64(p); k < int64(o.records); k += int64(o.producers) {
				t := tables[k%int64(len(tables))]
				row, buf = gen.row(pr.workload, row[:cap(row)], buf, k)
				var err error
				if keyEnc != nil {
					if key, err = keyEnc.Encode(key[:0], row); err != nil {
						errs <- err
						return
					}
					_, err = acc.Append(ctx, t, accumulator.NoPartition, fluss.BucketForKey(key, t.NumBuckets()), fluss.WriteUpsert, key, row)
				} else {
					_, err = acc.Append(ctx, t, accumulator.NoPartition, accumulator.StickyBucket, fluss.WriteAppend, nil, row)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	flushErr := acc.Flush(ctx)
	r.blSecs = time.Since(start).Seconds()
	after, err := readProcStat(os.Getpid())
	if err != nil {
		return err
	}
	r.blCPU = after.cpu - before.cpu
	r.blRecords = o.records
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := snd.Close(cctx); err != nil {
		return fmt.Errorf("close writer: %w", err)
	}
	stopSender()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("writer: %w", err)
	}
	return flushErr
}

// baselineSpec builds the writer's table as the gateway's tableSpec
// does for these tables (ARROW log tables with a shared compressor, KV
// tables with the table's value format).
func baselineSpec(info *fluss.TableInfo) (accumulator.TableSpec, error) {
	d := &info.Descriptor
	schema := &d.Schema
	spec := accumulator.TableSpec{ID: info.TableID, Path: info.Path, NumBuckets: d.BucketCount}
	if d.HasPrimaryKey() {
		format := d.KvFormat()
		spec.NewKvBuilder = func() (accumulator.KvBuilder, error) {
			return fluss.NewKvBatchBuilder(schema, info.SchemaID, format)
		}
		return spec, nil
	}
	if f := d.LogFormat(); f != fluss.LogFormatArrow {
		return spec, fmt.Errorf("table %s: baseline expects ARROW, got %s", info.Path, f)
	}
	codec := d.ArrowCompression()
	comp, err := fluss.NewArrowCompressor(codec, 3)
	if err != nil {
		return spec, err
	}
	spec.NewLogBuilder = func() (accumulator.LogBuilder, error) {
		return fluss.NewArrowLogBuilder(schema, info.SchemaID, codec, 3, fluss.WithArrowCompressor(comp))
	}
	return spec, nil
}

// label is the run's spec, with its round after the first.
func (r *runResult) label() string {
	if r.round > 1 {
		return fmt.Sprintf("%s#%d", r.spec, r.round)
	}
	return r.spec.String()
}

func printResult(r *runResult) {
	mb := float64(r.wireBytes) / 1e6 / r.secs
	base, ratio := "-", "-"
	if r.blRecords > 0 {
		base = fmt.Sprintf("%.0f", r.blRate())
		ratio = fmt.Sprintf("%.2f", r.rate()/r.blRate())
	}
	fmt.Printf("%-16s %8d %7.2f %10.0f %7.2f %8.1f %8.1f %9.2f %8.0f %10s %6s\n",
		r.label(), r.records, r.secs, r.rate(), mb, ms(r.p50), ms(r.p99),
		cpuPerMillion(r.gwCPU, r.records), float64(r.gwRSS)/(1<<20), base, ratio)
	if i := r.idle; i != nil {
		fmt.Printf("  idle %s after the run, producers connected: %.0f connections, %.0f goroutines, RSS %.0f MiB, heap in use %.0f MiB, stacks %.0f MiB (the whole heap and stacks: %.1f KiB per connection)\n",
			i.after, i.conns, i.goroutines, float64(i.rss)/(1<<20), i.heapInuse/(1<<20), i.stackIn/(1<<20), (i.heapInuse+i.stackIn)/max(i.conns, 1)/1024)
	}
}

// measureIdle waits d with the producers connected and idle, then reads
// the gateway's connections, goroutines and memory (nil if it cannot).
func measureIdle(ctx context.Context, g *gatewaytest.Process, d time.Duration) *idleStat {
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return nil
	}
	m, err := g.Scrape()
	if err != nil {
		return nil
	}
	st, err := readProcStat(g.Pid())
	if err != nil {
		return nil
	}
	return &idleStat{after: d, conns: m.Sum("fluss_gateway_kafka_open_connections"), goroutines: m.Sum("go_goroutines"),
		rss: st.rss, heapInuse: m.Sum("go_memstats_heap_inuse_bytes"), stackIn: m.Sum("go_memstats_stack_inuse_bytes")}
}

// sumCPU is the CPU time of the processes (those that cannot be read count 0).
func sumCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if st, err := readProcStat(pid); err == nil {
			sum += st.cpu
		}
	}
	return sum
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func printSummary(results []*runResult, idle, final procStat, warnings int, firstWarning, logPath string) {
	fmt.Println()
	fmt.Println("per run: Kafka wire bytes per record, Produce requests, max latency; CPU in cores (CPU seconds / wall seconds)")
	fmt.Println("of the gateway, of the producers (this process) and of the -fluss-pids during the gateway run;")
	fmt.Println("baseline CPU in s per million rows (this process, including row generation):")
	for _, r := range results {
		bl := "-"
		if r.blRecords > 0 {
			bl = fmt.Sprintf("%.2f s/M in %.2fs", cpuPerMillion(r.blCPU, r.blRecords), r.blSecs)
		}
		fluss := "-"
		if r.flussCPU > 0 {
			fluss = fmt.Sprintf("%.3f", r.flussCPU.Seconds()/r.secs)
		}
		fmt.Printf("  %-16s %6.1f B/rec %5d req  max %6.0f ms  heap in use %4.0f MiB  cores: gateway %.2f producers %.2f fluss %s  baseline %s  /readyz not 200 in %d of %d\n",
			r.label(), float64(r.wireBytes)/float64(r.records), r.requests, ms(r.maxLat), r.heapInuse/(1<<20),
			r.gwCPU.Seconds()/r.secs, r.benchCPU.Seconds()/r.secs, fluss, bl, r.readyz[1], r.readyz[0])
		m := r.gwMetrics
		batches := m["fluss_gateway_sender_batches_total"]
		fmt.Printf("  %-16s Fluss: %.0f batches of %.0f KiB avg in %.0f requests, %.0f retries, %.0f errors, %.0f buffer-full\n",
			"", batches, m["fluss_gateway_sender_batch_bytes_total"]/max(batches, 1)/1024,
			m["fluss_gateway_sender_request_duration_seconds_count"], m["fluss_gateway_sender_retries_total"],
			m["fluss_gateway_sender_errors_total"], m["fluss_gateway_accumulator_buffer_full_total"])
		if commits := m["fluss_gateway_exactly_once_commit_duration_seconds_count"]; commits > 0 || m["fluss_gateway_route_table_busy_batches_total"] > 0 {
			fmt.Printf("  %-16s exactly once: %.0f state commits for %.0f batches, %.0f batches in shared records entries; %.0f table-busy refusals\n",
				"", commits, m["fluss_gateway_exactly_once_committed_batches_total"], m["fluss_gateway_sender_shared_entry_batches_total"],
				m["fluss_gateway_route_table_busy_batches_total"])
		}
		for _, l := range r.errSeries {
			fmt.Printf("  %-16s %s (cumulative)\n", "", l)
		}
		if j := r.java; j != nil {
			printJavaComparison(r, j)
		}
	}
	fmt.Printf("gateway process: RSS %.0f MiB idle after start, %.0f MiB at the end; CPU %.1fs over all runs\n",
		float64(idle.rss)/(1<<20), float64(final.rss)/(1<<20), (final.cpu - idle.cpu).Seconds())
	if warnings > 0 {
		fmt.Printf("gateway logged %d WARN/ERROR lines (log %s); first: %s\n", warnings, logPath, firstWarning)
	} else {
		fmt.Println("gateway logged no WARN/ERROR lines")
	}
	fmt.Println("verification: every table's ListOffsets equals the records acked: OK")
}

// printJavaComparison sets the gateway's run beside the Java writer's on
// the same rows: rows/s, CPU s per million rows of the writing process
// (and of the gateway plus its Kafka producers), and of the Fluss servers.
func printJavaComparison(r *runResult, j *javaResult) {
	gw := cpuPerMillion(r.gwCPU, r.records)
	gwProd := cpuPerMillion(r.gwCPU+r.benchCPU, r.records)
	jv := cpuPerMillion(j.cpu, j.rows)
	gwFluss, jvFluss := cpuPerMillion(r.flussCPU, r.records), cpuPerMillion(j.flussCPU, j.rows)
	fmt.Printf("  %-16s Java writer (fluss-client %s): %.0f rows/s in %.2fs (gateway %.0f, %.2f×); CPU s/M: Java %.2f, gateway %.2f (%.2f×), gateway+producers %.2f (%.2f×); Fluss CPU s/M: for Java's rows %.2f, for the gateway's %.2f (%.2f×)\n",
		"", javaClientVersion, j.rate(), j.secs, r.rate(), r.rate()/j.rate(), jv, gw, gw/jv, gwProd, gwProd/jv, jvFluss, gwFluss, gwFluss/jvFluss)
}
