package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// The producers of the Kafka comparison.
const (
	producerFranzDefault = "franz-default" // franz-go's defaults, lz4
	producerFranzTuned   = "franz-tuned"   // what the bench's other runs use (tunedOpts)
	producerJava         = "java"          // Kafka's ProducerPerformance at its defaults, lz4
)

// The two targets of a comparison.
const (
	targetGateway = "gateway"
	targetKafka   = "kafka"
)

// compareCodec is the Kafka codec of every comparison run.
const compareCodec = "lz4"

// cmpSpec is one compared configuration, producer/workload/value size,
// optionally @records/s offered.
type cmpSpec struct {
	producer string
	workload workload
	size     int     // value bytes (≈ for json)
	rate     float64 // records/s offered; 0: -rate
}

func (c cmpSpec) String() string {
	s := fmt.Sprintf("%s/%s/%s", c.producer, c.workload, sizeName(c.size))
	if c.rate > 0 {
		s += "@" + strconv.FormatFloat(c.rate, 'f', -1, 64)
	}
	return s
}

// pacedSecs is how long a paced run lasts unless -records is given: long
// enough for a steady p50, short enough to repeat.
const pacedSecs = 10

// recordsFor is how many records one run of sp produces.
func recordsFor(o *options, sp cmpSpec) int {
	if o.recordsSet {
		return o.records
	}
	n := o.kafkaBytes / sp.size
	if r := sp.offered(o); r > 0 {
		n = min(n, int(r*pacedSecs))
	}
	return max(o.producers, n)
}

// offered is the rate sp's producers offer; 0: as fast as they can.
func (c cmpSpec) offered(o *options) float64 {
	if c.rate > 0 {
		return c.rate
	}
	return o.rate
}

// sizeName writes 1024 as 1k, other sizes in bytes.
func sizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "k"
	}
	return strconv.Itoa(n)
}

func parseSize(s string) (int, error) {
	mult := 1
	if t, ok := strings.CutSuffix(s, "k"); ok {
		s, mult = t, 1024
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("size %q: want bytes (100) or KiB (1k)", s)
	}
	return n * mult, nil
}

func parseCmpSpecs(s string) ([]cmpSpec, error) {
	var out []cmpSpec
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(part), "/")
		if len(f) != 3 {
			return nil, fmt.Errorf("kafka run %q: want producer/workload/size", part)
		}
		switch f[0] {
		case producerFranzDefault, producerFranzTuned, producerJava:
		default:
			return nil, fmt.Errorf("kafka run %q: producer %q (%s, %s, %s)", part, f[0], producerFranzDefault, producerFranzTuned, producerJava)
		}
		w, err := parseWorkload(f[1])
		if err != nil {
			return nil, fmt.Errorf("kafka run %q: %w", part, err)
		}
		if w != workloadJSON && w != workloadRaw {
			return nil, fmt.Errorf("kafka run %q: the comparison takes the json and raw workloads", part)
		}
		sizeStr, rateStr, paced := strings.Cut(f[2], "@")
		size, err := parseSize(sizeStr)
		if err != nil {
			return nil, fmt.Errorf("kafka run %q: %w", part, err)
		}
		var rate float64
		if paced {
			if rate, err = strconv.ParseFloat(rateStr, 64); err != nil || rate <= 0 {
				return nil, fmt.Errorf("kafka run %q: @%s: want records/s > 0", part, rateStr)
			}
		}
		out = append(out, cmpSpec{producer: f[0], workload: w, size: size, rate: rate})
	}
	return out, nil
}

// payloadLenFor is the payload field length that makes the json values of
// records about size bytes long: the rest of the object is measured at the
// middle record (its id has the typical number of digits).
func payloadLenFor(size, records int) int {
	gen := newGenerator(1, 0)
	rest := len(gen.value(nil, int64(records/2))) - 1
	return max(1, size-rest)
}

// sample is one measurement of one spec against one target.
type sample struct {
	spec      cmpSpec
	target    string
	repeat    int
	records   int
	secs      float64
	rate      float64 // records/s
	p50, p99  float64 // ms
	serverCPU time.Duration
	flussCPU  time.Duration // tablet servers (gateway target)
	clientCPU time.Duration // the producers: this process or the JVM
	serverRSS int64         // peak during the run
	cpuKnown  bool          // serverCPU/RSS were read (the broker's pid is known)
}

func (s *sample) perM(d time.Duration) float64 { return cpuPerMillion(d, s.records) }

// cmpEnv is what every comparison measurement uses.
type cmpEnv struct {
	o         *options
	c         *fluss.Client
	g         *gatewaytest.Process
	b         *broker
	kcl       *kgo.Client // admin client of the broker
	jp        javaPerf
	tables    map[cmpSpec]*fluss.TableInfo
	topics    map[cmpSpec]string
	payloads  map[cmpSpec]string // payload files of the java specs
	gens      map[cmpSpec]*generator
	records   map[cmpSpec]int
	flussPIDs []int
}

// measureCompare runs n records of spec against target once and checks
// that the target's end offsets grew by exactly the records acked.
func measureCompare(ctx context.Context, e *cmpEnv, spec cmpSpec, target string, repeat, n int) (*sample, error) {
	s := &sample{spec: spec, target: target, repeat: repeat}
	topic := e.topics[spec]
	bootstrap, serverPID := e.g.KafkaAddr, e.g.Pid()
	var flussPIDs []int
	if target == targetKafka {
		bootstrap, serverPID = e.b.bootstrap, e.b.pid
	} else {
		flussPIDs = e.flussPIDs
	}
	endOffset := func() (int64, error) {
		if target == targetKafka {
			return kafkaEndOffset(ctx, e.kcl, topic, e.o.buckets)
		}
		return flussEndOffset(ctx, e.c, e.tables[spec])
	}
	before, err := endOffset()
	if err != nil {
		return nil, err
	}
	self, err := readProcStat(os.Getpid())
	if err != nil {
		return nil, err
	}
	var srvBefore procStat
	var rss *rssSampler
	if serverPID > 0 {
		if srvBefore, err = readProcStat(serverPID); err != nil {
			return nil, fmt.Errorf("read %s /proc: %w", target, err)
		}
		rss = sampleRSS(serverPID, 100*time.Millisecond)
		s.cpuKnown = true
	}
	flussBefore := sumCPU(flussPIDs)
	var acked int
	var runErr error
	switch spec.producer {
	case producerJava:
		var ps perfSummary
		ps, s.clientCPU, runErr = runPerf(ctx, e.jp, perfRun{
			bootstrap:   bootstrap,
			topic:       topic,
			records:     n,
			payloadFile: e.payloads[spec],
			rate:        spec.offered(e.o),
			codec:       compareCodec,
			clientID:    "gateway-bench-perf",
		})
		acked, s.rate, s.p50, s.p99 = int(ps.records), ps.rate, ps.p50, ps.p99
		if ps.rate > 0 {
			s.secs = float64(ps.records) / ps.rate
		}
	default:
		codec, _ := kafkaCodec(compareCodec)
		opts := defaultOpts(codec)
		if spec.producer == producerFranzTuned {
			opts = tunedOpts(e.o, codec)
		}
		var fr franzResult
		fr, runErr = produceFranz(ctx, franzRun{
			seed:      bootstrap,
			producers: e.o.producers,
			opts:      opts,
			topics:    []string{topic},
			records:   n,
			rate:      spec.offered(e.o),
			record:    franzRecordFunc(spec.workload, e.gens[spec]),
		})
		acked, s.secs = fr.acked, fr.secs
		s.rate, s.p50, s.p99 = float64(fr.acked)/fr.secs, ms(fr.p50), ms(fr.p99)
		if selfAfter, err := readProcStat(os.Getpid()); err == nil {
			s.clientCPU = selfAfter.cpu - self.cpu
		}
	}
	if serverPID > 0 {
		s.serverRSS = rss.Stop()
		after, err := readProcStat(serverPID)
		if err != nil {
			return nil, fmt.Errorf("read %s /proc: %w", target, err)
		}
		s.serverCPU = after.cpu - srvBefore.cpu
	}
	s.flussCPU = sumCPU(flussPIDs) - flussBefore
	s.records = acked
	if runErr != nil {
		return s, fmt.Errorf("%s against %s: %w", spec, target, runErr)
	}
	if target == targetGateway {
		if err := e.g.Alive(); err != nil {
			return s, err
		}
	}
	after, err := endOffset()
	if err != nil {
		return s, err
	}
	if after-before != int64(acked) || acked != n {
		return s, fmt.Errorf("VERIFICATION FAILED: %s against %s: end offsets of %s grew by %d, %d of %d records acked",
			spec, target, topic, after-before, acked, n)
	}
	return s, nil
}

// flussEndOffset is the table's log end offsets summed over its buckets.
func flussEndOffset(ctx context.Context, c *fluss.Client, t *fluss.TableInfo) (int64, error) {
	buckets := make([]int32, t.Descriptor.BucketCount)
	for b := range buckets {
		buckets[b] = int32(b)
	}
	offs, err := c.ListOffsets(ctx, t.TableID, fluss.NoPartition, buckets, fluss.LatestOffset)
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", t.Path, err)
	}
	var sum int64
	for _, o := range offs {
		sum += o
	}
	return sum, nil
}

// runKafkaCompare is -kafka: the same producers against the gateway (with
// Fluss) and against a Kafka broker, alternating, -repeats times.
func runKafkaCompare(ctx context.Context, o *options, c *fluss.Client, db string, setupStart time.Time) error {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		return err
	}
	e := &cmpEnv{
		o: o, c: c, flussPIDs: o.flussPIDs,
		tables: map[cmpSpec]*fluss.TableInfo{}, topics: map[cmpSpec]string{}, payloads: map[cmpSpec]string{},
		gens: map[cmpSpec]*generator{}, records: map[cmpSpec]int{},
	}
	var routes strings.Builder
	var topics []string
	for i, sp := range o.kafkaRuns {
		topic := fmt.Sprintf("k%d_%s_%s", i, sp.workload, sizeName(sp.size))
		info, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: topic}, o.descriptor(sp.workload))
		if err != nil {
			return err
		}
		n := recordsFor(o, sp)
		e.tables[sp], e.topics[sp], e.records[sp] = info, topic, n
		e.gens[sp] = newGenerator(payloadLenFor(sp.size, n), 0)
		topics = append(topics, topic)
		routes.WriteString(sp.workload.route(topic, info.Path))
	}

	dir, err := os.MkdirTemp("", "gateway-bench-")
	if err != nil {
		return err
	}
	succeeded := false
	defer func() {
		if succeeded && !o.keep {
			os.RemoveAll(dir)
		}
	}()
	g, err := launchGatewayIn(ctx, o, dir, o.explicitWriterSettings(), routes.String())
	if err != nil {
		return err
	}
	defer g.Kill()
	e.g = g

	b, stopBroker, err := useBroker(ctx, o, root)
	if err != nil {
		return err
	}
	defer stopBroker()
	e.b = b
	if e.kcl, err = kgo.NewClient(kgo.SeedBrokers(b.bootstrap), kgo.ClientID("gateway-bench-admin")); err != nil {
		return fmt.Errorf("kafka admin client: %w", err)
	}
	defer e.kcl.Close()
	if err := createKafkaTopics(ctx, e.kcl, topics, o.buckets); err != nil {
		return err
	}

	if slices.ContainsFunc(o.kafkaRuns, func(s cmpSpec) bool { return s.producer == producerJava }) {
		out, err := kafkaScript(ctx, root, "fetch", "-v", o.kafkaVersion)
		if err != nil {
			return err
		}
		e.jp = javaPerf{java: o.java, lib: strings.TrimSpace(out), log4j: filepath.Join(dir, "perf-log4j2.properties"),
			heap: "512m", timeout: 15 * time.Minute}
		if err := os.WriteFile(e.jp.log4j, []byte(perfLog4j), 0o600); err != nil {
			return err
		}
		for i, sp := range o.kafkaRuns {
			if sp.producer != producerJava {
				continue
			}
			e.payloads[sp] = filepath.Join(dir, fmt.Sprintf("payload-%d.txt", i))
			if err := writePayloadFile(e.payloads[sp], 10_000, e.gens[sp].value); err != nil {
				return err
			}
		}
	}

	printCompareHeader(o, e, db, setupStart)
	if o.warmup {
		// The broker's JIT (and the gateway's pools) warm up on the first
		// runs: without this the first repeat's broker CPU is 2-5x the rest.
		t0 := time.Now()
		for _, sp := range o.kafkaRuns {
			for _, t := range []string{targetGateway, targetKafka} {
				if _, err := measureCompare(ctx, e, sp, t, -1, max(o.producers, e.records[sp]/5)); err != nil {
					return fmt.Errorf("warm-up: %w", err)
				}
			}
		}
		fmt.Printf("(warm-up: every run once at 1/5 of its records against both targets, not counted: %.1fs)\n", time.Since(t0).Seconds())
	}
	printSampleHeader()
	var samples []*sample
	for r := range o.repeats {
		for _, sp := range o.kafkaRuns {
			targets := []string{targetGateway, targetKafka}
			if r%2 == 1 { // alternate which target goes first
				slices.Reverse(targets)
			}
			for _, t := range targets {
				if err := ctx.Err(); err != nil {
					return err
				}
				s, err := measureCompare(ctx, e, sp, t, r, e.records[sp])
				if s != nil && err == nil {
					samples = append(samples, s)
					printSample(s)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	if err := g.Stop(time.Minute); err != nil {
		return err
	}
	rows := aggregate(samples, o.kafkaRuns)
	fmt.Println()
	fmt.Printf("medians of %d alternated runs (gateway/kafka: median of the per-repeat ratios, [min–max]); CPU in s per million records:\n\n", o.repeats)
	fmt.Print(formatCompareTable(rows))
	n, first := g.Warnings()
	if n > 0 {
		fmt.Printf("\ngateway logged %d WARN/ERROR lines (log %s); first: %s\n", n, g.LogPath, first)
	} else {
		fmt.Println("\ngateway logged no WARN/ERROR lines")
	}
	fmt.Println("verification: after every run the target's end offsets (Fluss ListOffsets, Kafka ListOffsets) grew by exactly the records acked: OK")
	succeeded = true
	return nil
}

func printCompareHeader(o *options, e *cmpEnv, db string, setupStart time.Time) {
	load := loadAverage()
	codecs := map[string]bool{}
	for _, t := range e.tables {
		d := &t.Descriptor
		c := string(d.LogFormat()) + " " + string(d.ArrowCompression())
		if lvl := d.Properties[fluss.PropArrowCompressionLevel]; lvl != "" && d.ArrowCompression() == fluss.ArrowCompressionZstd {
			c += " level " + lvl
		}
		codecs[c] = true
	}
	tableCodec := strings.Join(slices.Sorted(maps.Keys(codecs)), ", ")
	brokerPID := "pid unknown: no broker CPU/RSS"
	if e.b.pid > 0 {
		brokerPID = fmt.Sprintf("pid %d", e.b.pid)
	}
	fmt.Printf("gateway-bench -kafka: %s, %d CPUs, load average %s\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), load)
	fmt.Printf("gateway %s (pid %d) → Fluss %s (tablet server pids %v), Fluss tables: %s, %d buckets; database %s\n",
		e.g.KafkaAddr, e.g.Pid(), o.bootstrap, e.flussPIDs, tableCodec, o.buckets, db)
	fmt.Printf("Kafka %s KRaft broker %s (%s), topics of %d partitions\n", o.kafkaVersion, e.b.bootstrap, brokerPID, o.buckets)
	w := o.explicitWriterSettings()
	fmt.Printf("gateway writer: linger %s batch_size %s buffer_memory %s (empty: the gateway's default)\n", w.Linger, w.BatchSize, w.BufferMemory)
	rate := "as fast as possible"
	if o.rate > 0 {
		rate = fmt.Sprintf("%.0f records/s offered (unless @rate)", o.rate)
	}
	fmt.Printf("producers: %s, acks=all; franz-go: %d clients (franz-tuned: linger %s, max-buffered %d); java: one ProducerPerformance JVM, %s\n",
		compareCodec, o.producers, o.kafkaLinger, o.maxBuffered, rate)
	fmt.Printf("records per run: ")
	for i, sp := range o.kafkaRuns {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("%s %d", sp, e.records[sp])
	}
	fmt.Printf("; setup %.1fs\n", time.Since(setupStart).Seconds())
}

func printSampleHeader() {
	fmt.Printf("\n%-6s %-24s %-7s %8s %10s %8s %8s %9s %9s %9s %8s\n",
		"repeat", "run", "target", "records", "records/s", "p50 ms", "p99 ms", "srv s/M", "fluss s/M", "client s/M", "RSS MiB")
}

func printSample(s *sample) {
	srv, rss, fl := "-", "-", "-"
	if s.cpuKnown {
		srv = fmt.Sprintf("%.2f", s.perM(s.serverCPU))
		rss = fmt.Sprintf("%.0f", float64(s.serverRSS)/(1<<20))
	}
	if s.target == targetGateway && s.flussCPU > 0 {
		fl = fmt.Sprintf("%.2f", s.perM(s.flussCPU))
	}
	fmt.Printf("%-6d %-24s %-7s %8d %10.0f %8.1f %8.1f %9s %9s %9.2f %8s\n",
		s.repeat+1, s.spec, s.target, s.records, s.rate, s.p50, s.p99, srv, fl, s.perM(s.clientCPU), rss)
}

// targetAgg is the medians of one spec against one target.
type targetAgg struct {
	n                   int
	rate, p50, p99      float64
	serverCPU, flussCPU float64 // s per million records
	rssMiB              float64
	cpuKnown            bool
}

// cmpRow is one line of the comparison table.
type cmpRow struct {
	spec                      cmpSpec
	gw, kafka                 targetAgg
	ratio, ratioMin, ratioMax float64 // gateway/kafka records/s: median of the per-repeat ratios
	cpuRatio                  float64 // gateway CPU / broker CPU per record, of the medians
	hasRatio, hasCPURatio     bool
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func aggregateTarget(ss []*sample) targetAgg {
	a := targetAgg{n: len(ss)}
	var rate, p50, p99, srv, fl, rss []float64
	for _, s := range ss {
		rate, p50, p99 = append(rate, s.rate), append(p50, s.p50), append(p99, s.p99)
		fl = append(fl, s.perM(s.flussCPU))
		if s.cpuKnown {
			a.cpuKnown = true
			srv = append(srv, s.perM(s.serverCPU))
			rss = append(rss, float64(s.serverRSS)/(1<<20))
		}
	}
	a.rate, a.p50, a.p99 = median(rate), median(p50), median(p99)
	a.serverCPU, a.flussCPU, a.rssMiB = median(srv), median(fl), median(rss)
	return a
}

// aggregate makes one row per spec, in the order of specs; the ratio pairs
// the gateway and Kafka samples of the same repeat, which ran back to back.
func aggregate(samples []*sample, specs []cmpSpec) []cmpRow {
	var rows []cmpRow
	for _, sp := range specs {
		var gw, kf []*sample
		byRepeat := map[int][2]*sample{}
		for _, s := range samples {
			if s.spec != sp {
				continue
			}
			pair := byRepeat[s.repeat]
			if s.target == targetGateway {
				gw, pair[0] = append(gw, s), s
			} else {
				kf, pair[1] = append(kf, s), s
			}
			byRepeat[s.repeat] = pair
		}
		row := cmpRow{spec: sp, gw: aggregateTarget(gw), kafka: aggregateTarget(kf)}
		var ratios []float64
		for _, p := range byRepeat {
			if p[0] != nil && p[1] != nil && p[1].rate > 0 {
				ratios = append(ratios, p[0].rate/p[1].rate)
			}
		}
		if len(ratios) > 0 {
			row.hasRatio = true
			row.ratio, row.ratioMin, row.ratioMax = median(ratios), slices.Min(ratios), slices.Max(ratios)
		}
		if row.gw.cpuKnown && row.kafka.cpuKnown && row.kafka.serverCPU > 0 {
			row.hasCPURatio = true
			row.cpuRatio = row.gw.serverCPU / row.kafka.serverCPU
		}
		rows = append(rows, row)
	}
	return rows
}

// formatCompareTable renders the rows as a Markdown table (it reads as
// plain text too and goes into docs/benchmarks.md as is).
func formatCompareTable(rows []cmpRow) string {
	var b strings.Builder
	b.WriteString("| producer/workload/size | gateway rec/s | Kafka rec/s | gateway / Kafka | gateway CPU s/M | tablet server CPU s/M | broker CPU s/M | gateway / broker CPU | p50 / p99 ms gateway | p50 / p99 ms Kafka | peak RSS MiB gateway / broker |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	dash := func(ok bool, f string, v ...any) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf(f, v...)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f | %s | %s | %.1f / %.1f | %.1f / %.1f | %s / %s |\n",
			r.spec, thousands(r.gw.rate), thousands(r.kafka.rate),
			dash(r.hasRatio, "%.2f [%.2f–%.2f]", r.ratio, r.ratioMin, r.ratioMax),
			dash(r.gw.cpuKnown, "%.2f", r.gw.serverCPU), r.gw.flussCPU,
			dash(r.kafka.cpuKnown, "%.2f", r.kafka.serverCPU),
			dash(r.hasCPURatio, "%.1f×", r.cpuRatio),
			r.gw.p50, r.gw.p99, r.kafka.p50, r.kafka.p99,
			dash(r.gw.cpuKnown, "%.0f", r.gw.rssMiB), dash(r.kafka.cpuKnown, "%.0f", r.kafka.rssMiB))
	}
	return b.String()
}

// thousands writes 123456.7 as 123,457.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
