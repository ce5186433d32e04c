// Command gateway-bench measures the whole product path against a real Fluss
// cluster: Kafka producers (franz-go, idempotent, acks=all) → the gateway
// binary (built from ./cmd/gateway and run as a child process on loopback
// ports) → Fluss tables; and, in the same run, the same rows written straight
// through the Go Fluss writer (accumulator + sender) as the baseline.
//
//	go run ./tools/gateway-bench -bootstrap 127.0.0.1:9123
//	go run ./tools/gateway-bench -records 1000000 -runs json/1/lz4,json/4/lz4
//	go run ./tools/gateway-bench -runs json/1/lz4,avro/1/lz4
//
// A run is workload/topics/codec: json (≈200-byte JSON values, 6 columns, into
// an ARROW+ZSTD log table), upsert (string key + JSON value into a
// primary-key table, half the records update an earlier key), raw (the
// value bytes into a BYTES column) or avro (the json workload's fields as
// Confluent-framed Avro, hamba/avro, ≈140 bytes; the writer schema is served
// by an in-process fake registry, srfake, that the gateway's
// schema_registry.urls points at); 1 or more topics, each its own table;
// Kafka codec none, gzip, snappy, lz4 or zstd. Per run it prints records/s,
// Kafka wire MB/s (Produce request bytes), p50/p99 produce latency (from
// Produce to the promise), the gateway's CPU seconds per million records and
// peak RSS (/proc), the baseline's records/s and the ratio. At the end of each
// run every table's log end offsets (ListOffsets) must equal what was acked;
// otherwise the command fails. With -rounds N each run writes its records N
// times into the same tables, each round printed alone: the first round is
// the first write into freshly created tables, the later ones are warm.
//
//	go run ./tools/gateway-bench -runs json/500/none -producers 8 -rounds 3 -gateway-gomemlimit 147MiB
//
// With -java-writer the json runs' rows are also written through Fluss's own
// Java client (java/FlussAppendBench.java: fluss-client's append writer, one
// thread, default settings, the jar fetched by scripts/fluss-local.sh
// fetch-client) into tables of their own, and the run prints rows/s, CPU
// seconds per million rows of the Java process, of the gateway and of the
// gateway plus its producers, and the Fluss servers' CPU per million rows for
// each writer's rows.
//
//	go run ./tools/gateway-bench -baseline=false -java-writer -records 2000000 -runs json/1/zstd
//
// With -kafka it compares instead with a real Kafka broker (KRaft, started
// with scripts/kafka-local.sh unless -kafka-bootstrap names one): each
// -kafka-runs producer/workload/size (franz-go at its defaults, franz-go as
// tuned above, Kafka's Java ProducerPerformance at its defaults; lz4,
// acks=all) goes against the gateway and against Kafka, the two alternating,
// -repeats times, and the medians are printed (compare.go). Each target's end
// offsets must grow by exactly the records acked.
//
//	go run ./tools/gateway-bench -kafka -repeats 3
//
// With -flink it compares with what a user would otherwise run to get the
// producers' records into Fluss: the same franz-go producers into a Kafka
// broker, and a Flink job (java/KafkaToFlussJob.java: Flink SQL, Kafka
// source, Fluss's Flink connector, local, resolved from Maven Central into
// .cache) carrying them into a table of the same kind. Runs alternate with
// the gateway's; each prints rows/s into Fluss (first produce to the table's
// end offsets holding every row) and the CPU of the producers, of the path
// (the gateway; or the broker and the Flink JVM) and of the tablet servers.
// With -rate, a Fluss Java client tails each table (java/FlussTail.java) for
// the time from produce to a readable row.
//
//	go run ./tools/gateway-bench -flink -records 300000 -rate 20000 -repeats 3
//
// With -quota-flood it checks the produce quotas' isolation (quotaflood.go):
// a gateway with a SASL PLAIN listener (users calm1, calm2, flood) and
// kafka.quotas.principals {"User:flood": {producer_byte_rate: -quota-rate}},
// a table per principal. calm1 and calm2 (a franz-go idempotent client
// each, lz4) offer -calm-rate records/s of ≈-calm-size-byte JSON together
// for -window, measuring records/s acked and p50/p99 from Produce to the
// promise; in the flood runs, flood offers -flood-factor × its quota in
// random uncompressed values from -flood-warmup before the window (its 10-s
// burst spent), dropping what its client cannot buffer. Baseline and flood
// runs alternate, -repeats times; it prints the medians, the flood/baseline
// ratios of calm throughput and p99 against the goal (≥ 0.9, ≤ 1.5), and
// the flood's bytes charged to its quota in the window / the quota. Every
// table's end offsets must grow by exactly the records acked.
//
//	go run ./tools/gateway-bench -quota-flood -quota-rate 1048576 -flood-factor 5 -calm-rate 5000 -window 20s -repeats 3
//
// With -goals it measures the exactly-once path's goals in one command
// (goals.go): the default route against exactly_once: false (1 KB JSON, at
// saturation and at 20,000 records/s), 500 tables against 1 (8 producers,
// three rounds, GOMEMLIMIT 147MiB), 200 producers against 10 at 20,000
// records/s, the gateway against Fluss's Java writer (200 B and 1 KB rows)
// and against Kafka + Flink (20,000 records/s, tailed). Each pair
// alternates -repeats times, a fresh database and gateway per run; the end
// prints each goal's median ratio, its spread, its bound and whether it is
// met.
//
//	go run ./tools/gateway-bench -goals all -repeats 3
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway-bench: FAIL:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	bootstrap    string
	exactlyOnce  string // the routes' exactly_once setting; "": unset (the default)
	records      int
	rounds       int // times each run writes its records into the same tables
	runs         []runSpec
	producers    int
	buckets      int
	payloadLen   int
	linger       time.Duration
	batchSize    int
	bufferMemory int
	goMemLimit   string        // GOMEMLIMIT of the gateway process; "" for none
	idle         time.Duration // hold the producers connected and idle this long after each run, then read the gateway
	pprof        bool          // serve the gateway's /debug/pprof/ and print where
	kafkaLinger  time.Duration
	maxBuffered  int
	gatewayBin   string
	baseline     bool
	javaWriter   bool
	keep         bool
	rate         float64
	flussPIDs    []int
	logLevel     string
	tableCodec   fluss.ArrowCompression

	// -kafka: the comparison with a Kafka broker (compare.go).
	kafka          bool
	kafkaRuns      []cmpSpec
	repeats        int
	kafkaBootstrap string
	kafkaPID       int
	kafkaVersion   string
	kafkaBytes     int
	warmup         bool
	java           string
	flussCluster   string
	// -flink: the comparison with a Kafka broker plus a Flink job (flink.go).
	flink            bool
	flinkParallelism int
	txn              bool // -txn: transactional Java producer vs the same without transactions
	txnSize          int
	txnValueBytes    int
	// -quota-flood: a principal flooding over its quota beside calm ones (quotaflood.go).
	quotaFlood  bool
	quotaRate   int64
	floodFactor float64
	floodWarmup time.Duration
	calmRate    float64
	calmSize    int
	window      time.Duration

	goals []string // -goals: the comparisons of the exactly-once goals (goals.go)

	recordsSet bool            // -records was given (else -kafka sizes runs by -kafka-bytes)
	set        map[string]bool // the flags given on the command line
}

// descriptor is workload w's table with the -table-codec.
func (o *options) descriptor(w workload) *fluss.TableDescriptor {
	d := w.descriptor(o.buckets)
	if _, ok := d.Properties[fluss.PropArrowCompression]; ok {
		d.Properties[fluss.PropArrowCompression] = string(o.tableCodec)
	}
	return d
}

// explicitWriterSettings are the writer flags given on the command line;
// the others stay at the gateway's defaults (the -kafka comparison is
// against the gateway as shipped).
func (o *options) explicitWriterSettings() writerSettings {
	w := writerSettings{LogLevel: o.logLevel}
	if o.set["linger"] {
		w.Linger = o.linger.String()
	}
	if o.set["batch-size"] {
		w.BatchSize = strconv.Itoa(o.batchSize)
	}
	if o.set["buffer-memory"] {
		w.BufferMemory = strconv.Itoa(o.bufferMemory)
	}
	return w
}

func parseTableCodec(s string) (fluss.ArrowCompression, error) {
	switch strings.ToLower(s) {
	case "zstd":
		return fluss.ArrowCompressionZstd, nil
	case "lz4":
		return fluss.ArrowCompressionLZ4, nil
	case "none":
		return fluss.ArrowCompressionNone, nil
	}
	return "", fmt.Errorf("unknown -table-codec %q (zstd, lz4, none)", s)
}

// runSpec is one measured configuration.
type runSpec struct {
	workload workload
	topics   int
	codec    string
}

func (r runSpec) String() string { return fmt.Sprintf("%s/%d/%s", r.workload, r.topics, r.codec) }

func parseRuns(s string) ([]runSpec, error) {
	var out []runSpec
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(part), "/")
		if len(f) != 3 {
			return nil, fmt.Errorf("run %q: want workload/topics/codec", part)
		}
		w, err := parseWorkload(f[0])
		if err != nil {
			return nil, fmt.Errorf("run %q: %w", part, err)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("run %q: topics must be a positive number", part)
		}
		if _, err := kafkaCodec(f[2]); err != nil {
			return nil, fmt.Errorf("run %q: %w", part, err)
		}
		out = append(out, runSpec{workload: w, topics: n, codec: f[2]})
	}
	return out, nil
}

func kafkaCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown codec %q (none, gzip, snappy, lz4, zstd)", name)
}

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("gateway-bench", flag.ContinueOnError)
	fs.StringVar(&o.bootstrap, "bootstrap", os.Getenv("FLUSS_BOOTSTRAP"), "Fluss bootstrap host:port (default env FLUSS_BOOTSTRAP)")
	fs.IntVar(&o.records, "records", 300_000, "Kafka records per run (the baseline writes as many rows)")
	runs := fs.String("runs", "json/1/none,json/1/lz4,json/1/zstd,json/4/lz4,upsert/1/lz4,raw/1/lz4",
		"comma-separated runs workload/topics/codec, e.g. avro/1/lz4; workloads json, upsert, raw, avro; codecs none, gzip, snappy, lz4, zstd")
	fs.IntVar(&o.rounds, "rounds", 1, "times each run writes its records into the same tables, each round measured alone (the first round is the first write into fresh tables; log workloads only when > 1)")
	fs.IntVar(&o.producers, "producers", 4, "concurrent Kafka producers (franz-go clients); the baseline uses as many goroutines")
	fs.IntVar(&o.buckets, "buckets", 4, "buckets per table (= Kafka partitions per topic)")
	fs.IntVar(&o.payloadLen, "payload", 110, "length of the JSON payload field; 110 gives ≈200-byte values")
	// The writer flags default to the gateway's own defaults (configs.Default*).
	fs.DurationVar(&o.linger, "linger", 100*time.Millisecond, "gateway writer.linger (and the baseline's)")
	fs.IntVar(&o.batchSize, "batch-size", 2<<20, "gateway writer.batch_size in bytes (and the baseline's)")
	fs.IntVar(&o.bufferMemory, "buffer-memory", 64<<20, "gateway writer.buffer_memory in bytes (and the baseline's)")
	fs.BoolVar(&o.pprof, "gateway-pprof", false, "turn on the gateway's admin.pprof and print its /debug/pprof/ URL, for go tool pprof during a run")
	fs.DurationVar(&o.idle, "idle", 0, "after each run, keep the producers connected and idle this long, then print the gateway's connections, goroutines, RSS and heap (idle-connection cost)")
	fs.StringVar(&o.goMemLimit, "gateway-gomemlimit", "", "GOMEMLIMIT of the gateway process (e.g. 147MiB, what a 164 MiB container limit gives); empty: none")
	fs.DurationVar(&o.kafkaLinger, "kafka-linger", 10*time.Millisecond, "franz-go ProducerLinger")
	fs.IntVar(&o.maxBuffered, "max-buffered", 10_000, "franz-go MaxBufferedRecords per producer (bounds the latency queue)")
	fs.StringVar(&o.gatewayBin, "gateway-bin", "", "gateway binary to run; empty: go build ./cmd/gateway into .cache/gatewaytest")
	fs.BoolVar(&o.baseline, "baseline", true, "also write the rows straight through the Go Fluss writer")
	fs.BoolVar(&o.javaWriter, "java-writer", false, "also write the json runs' rows through Fluss's Java client (fluss-client "+javaClientVersion+
		" append writer, one thread, default settings; fetched from Maven Central) and compare CPU per row, the Fluss servers' included")
	fs.BoolVar(&o.keep, "keep", false, "keep the bench database and the gateway's directory (default: drop them after a successful run)")
	fs.Float64Var(&o.rate, "rate", 0, "total records/s the producers offer (0: as fast as they can); latency at a fixed load")
	fs.StringVar(&o.exactlyOnce, "exactly-once", "", "the routes' exactly_once setting: true, false, or empty (unset: the default, exactly once for the idempotent franz-go producers)")
	fs.StringVar(&o.logLevel, "gateway-log-level", "warn", "gateway logging.level (debug shows every Fluss retry)")
	pids := fs.String("fluss-pids", "", "comma-separated pids of Fluss server processes on this machine whose CPU to report (read-only /proc); "+
		"default: the tablet servers of -fluss-cluster")
	fs.StringVar(&o.flussCluster, "fluss-cluster", os.Getenv("FLUSS_LOCAL_CLUSTER"), "scripts/fluss-local.sh cluster whose tablet servers' CPU to report when -fluss-pids is empty (default env FLUSS_LOCAL_CLUSTER)")
	tableCodec := fs.String("table-codec", "zstd", "Arrow compression of the log tables: zstd (Fluss's default), lz4, none")
	fs.BoolVar(&o.kafka, "kafka", false, "compare with a Kafka broker instead of -runs: the -kafka-runs against the gateway and against Kafka, alternating, -repeats times")
	kafkaRuns := fs.String("kafka-runs", "franz-default/json/100,franz-tuned/json/100,java/json/100,franz-default/json/1k,franz-tuned/json/1k,java/json/1k,franz-tuned/raw/1k",
		"with -kafka: comma-separated producer/workload/size[@records/s]; producers franz-default, franz-tuned (the -kafka-linger and -max-buffered of the other runs), java (ProducerPerformance); workloads json, raw; size in bytes or 1k; @rate paces that run (default -rate) for at most 10 s")
	fs.IntVar(&o.repeats, "repeats", 3, "with -kafka: how many times each run goes against each target (medians are reported)")
	fs.StringVar(&o.kafkaBootstrap, "kafka-bootstrap", "", "with -kafka: an existing broker (its topics need not exist); empty: start one with scripts/kafka-local.sh")
	fs.IntVar(&o.kafkaPID, "kafka-pid", 0, "with -kafka-bootstrap: the broker's pid on this machine, for its CPU and RSS")
	fs.StringVar(&o.kafkaVersion, "kafka-version", "4.1.2", "with -kafka: the Kafka version of the broker and of ProducerPerformance")
	fs.IntVar(&o.kafkaBytes, "kafka-bytes", 100_000_000, "with -kafka: value bytes per run (records = this / size) unless -records is given")
	fs.BoolVar(&o.warmup, "warmup", true, "with -kafka: first run everything once at 1/5 of its records against both targets, not counted")
	fs.BoolVar(&o.flink, "flink", false, "compare with a Kafka broker plus a Flink "+flinkVersion+" job (Kafka source → Fluss sink) instead of -runs: the same producers, json rows, alternating, -repeats times; with -rate, each table is tailed for the time to a readable row")
	fs.IntVar(&o.flinkParallelism, "flink-parallelism", 2, "with -flink: the Flink job's parallelism")
	fs.BoolVar(&o.txn, "txn", false, "measure a transactional Java producer against the same producer without transactions instead of -runs: -records per run, alternating, -repeats rounds")
	fs.IntVar(&o.txnSize, "txn-size", 1000, "with -txn: records per transaction")
	fs.IntVar(&o.txnValueBytes, "txn-value-bytes", 1024, "with -txn: bytes per record value")
	fs.BoolVar(&o.quotaFlood, "quota-flood", false, "measure the quotas' isolation instead of -runs: calm SASL principals at a fixed rate with and without a principal flooding at -flood-factor × its quota, alternating, -repeats times")
	fs.Int64Var(&o.quotaRate, "quota-rate", 1<<20, "with -quota-flood: the flooding principal's producer_byte_rate (bytes/s)")
	fs.Float64Var(&o.floodFactor, "flood-factor", 5, "with -quota-flood: the flood offers this many times its quota")
	fs.DurationVar(&o.floodWarmup, "flood-warmup", 12*time.Second, "with -quota-flood: the flood starts this long before the window (the quota lets a new client burst 10 s of its rate)")
	fs.Float64Var(&o.calmRate, "calm-rate", 5000, "with -quota-flood: records/s the calm principals offer together")
	fs.IntVar(&o.calmSize, "calm-size", 1024, "with -quota-flood: bytes per value (≈ for the calm principals' JSON; exact for the flood's random bytes)")
	fs.DurationVar(&o.window, "window", 20*time.Second, "with -quota-flood: how long the calm principals produce per run")
	goals := fs.String("goals", "", "measure the exactly-once goals instead of -runs and print one table of ratios against them: all, or some of "+
		strings.Join(goalGroups, ",")+" (default vs exactly_once: false; 500 tables vs 1; 200 producers vs 10; vs Fluss's Java writer; vs Kafka + Flink), each alternated -repeats times, -records per run")
	fs.StringVar(&o.java, "java", defaultJava(), "the java that runs ProducerPerformance (-kafka) and the Java writer (-java-writer)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if o.goals, err = parseGoals(*goals); err != nil {
		return nil, err
	}
	if len(o.goals) > 0 && o.repeats < 1 {
		return nil, errors.New("-goals needs -repeats ≥ 1")
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	o.recordsSet = o.set["records"]
	if o.tableCodec, err = parseTableCodec(*tableCodec); err != nil {
		return nil, err
	}
	if o.kafka {
		if o.kafkaRuns, err = parseCmpSpecs(*kafkaRuns); err != nil {
			return nil, err
		}
		if o.repeats < 1 || o.kafkaBytes < 1 {
			return nil, errors.New("need -repeats ≥ 1 and -kafka-bytes ≥ 1")
		}
	}
	if o.quotaFlood && (o.repeats < 1 || o.quotaRate < 1 || o.floodFactor <= 0 || o.calmRate <= 0 || o.calmSize < 64 || o.window <= 0) {
		return nil, errors.New("-quota-flood needs -repeats ≥ 1, -quota-rate ≥ 1, -flood-factor > 0, -calm-rate > 0, -calm-size ≥ 64, -window > 0")
	}
	if o.bootstrap == "" {
		return nil, errors.New("set -bootstrap or FLUSS_BOOTSTRAP")
	}
	if o.records < o.producers || o.producers < 1 || o.buckets < 1 {
		return nil, errors.New("need records ≥ producers ≥ 1 and buckets ≥ 1")
	}
	for _, f := range strings.FieldsFunc(*pids, func(r rune) bool { return r == ',' }) {
		pid, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("bad -fluss-pids %q", *pids)
		}
		o.flussPIDs = append(o.flussPIDs, pid)
	}
	if o.runs, err = parseRuns(*runs); err != nil {
		return nil, err
	}
	if o.rounds < 1 {
		return nil, fmt.Errorf("-rounds %d: at least 1", o.rounds)
	}
	if o.rounds > 1 && slices.ContainsFunc(o.runs, func(r runSpec) bool { return r.workload == workloadUpsert }) {
		return nil, errors.New("-rounds > 1: the upsert workload's end offsets after a second round are not counted; use log workloads")
	}
	return o, nil
}

// plannedRun is a run with its tables.
type plannedRun struct {
	runSpec
	topics   []string
	gwTables []*fluss.TableInfo
	blTables []*fluss.TableInfo
	jvTables []*fluss.TableInfo // the Java writer's (-java-writer, json runs)
}

func run(ctx context.Context, args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	setupStart := time.Now()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(o.bootstrap, ","), ClientID: "gateway-bench"})
	if err != nil {
		return fmt.Errorf("fluss client: %w", err)
	}
	defer c.Close()

	if len(o.flussPIDs) == 0 {
		if root, err := gatewaytest.ModuleRoot(); err == nil {
			o.flussPIDs = detectFlussPIDs(ctx, root, o.flussCluster)
		}
	}

	if len(o.goals) > 0 {
		return runGoals(ctx, o, c)
	}
	return inDatabase(ctx, o, c, func(db string) error {
		switch {
		case o.kafka:
			return runKafkaCompare(ctx, o, c, db, setupStart)
		case o.flink:
			_, err := runFlinkCompare(ctx, o, c, db, setupStart)
			return err
		case o.txn:
			return runTxnCompare(ctx, o, c, db)
		case o.quotaFlood:
			return runQuotaFlood(ctx, o, c, db, setupStart)
		}
		_, err := runPlanned(ctx, o, c, db, setupStart)
		return err
	})
}

// inDatabase runs f in a database of its own, dropped afterwards unless
// -keep.
func inDatabase(ctx context.Context, o *options, c *fluss.Client, f func(db string) error) error {
	db := "gwbench_" + randHex()
	if err := c.CreateDatabase(ctx, db, false); err != nil {
		return fmt.Errorf("create database %s: %w", db, err)
	}
	if !o.keep {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := c.DropDatabase(dctx, db, true, true); err != nil {
				fmt.Fprintln(os.Stderr, "gateway-bench: drop database:", err)
			}
		}()
	}
	return f(db)
}

// runPlanned is the -runs: one gateway for all of them, each run's rounds
// measured and printed, then the summary.
func runPlanned(ctx context.Context, o *options, c *fluss.Client, db string, setupStart time.Time) ([]*runResult, error) {
	// Every table up front: the gateway binds its routes once, at start.
	var plan []*plannedRun
	var routes strings.Builder
	for i, rs := range o.runs {
		pr := &plannedRun{runSpec: rs}
		for j := range rs.topics {
			topic := fmt.Sprintf("r%d_%s_t%d", i, rs.workload, j)
			gw, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: topic}, o.descriptor(rs.workload))
			if err != nil {
				return nil, err
			}
			pr.topics = append(pr.topics, topic)
			pr.gwTables = append(pr.gwTables, gw)
			routes.WriteString(rs.workload.route(topic, gw.Path))
			if o.exactlyOnce != "" {
				routes.WriteString("    exactly_once: " + o.exactlyOnce + "\n")
			}
			if o.baseline {
				bl, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: "base_" + topic}, o.descriptor(rs.workload))
				if err != nil {
					return nil, err
				}
				pr.blTables = append(pr.blTables, bl)
			}
			if o.javaWriter && rs.workload == workloadJSON {
				jv, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: "java_" + topic}, o.descriptor(rs.workload))
				if err != nil {
					return nil, err
				}
				pr.jvTables = append(pr.jvTables, jv)
			}
		}
		plan = append(plan, pr)
	}

	dir, err := os.MkdirTemp("", "gateway-bench-")
	if err != nil {
		return nil, err
	}
	succeeded := false
	defer func() {
		// Keep the gateway's configuration and log when something failed.
		if succeeded && !o.keep {
			os.RemoveAll(dir)
		}
	}()
	w := writerSettings{
		Linger:       o.linger.String(),
		BatchSize:    strconv.Itoa(o.batchSize),
		BufferMemory: strconv.Itoa(o.bufferMemory),
		LogLevel:     o.logLevel,
	}
	if slices.ContainsFunc(o.runs, func(r runSpec) bool { return r.workload == workloadAvro }) {
		reg := startRegistry()
		defer reg.Close()
		w.SchemaRegistry = reg.URL()
	}
	var jw *javaWriter
	if o.javaWriter {
		root, err := gatewaytest.ModuleRoot()
		if err != nil {
			return nil, err
		}
		if jw, err = newJavaWriter(ctx, o, root, dir, newGenerator(o.payloadLen, 0)); err != nil {
			return nil, err
		}
	}
	g, err := launchGatewayIn(ctx, o, dir, w, routes.String())
	if err != nil {
		return nil, err
	}
	defer g.Kill()
	pid := g.Pid()
	idle, err := readProcStat(pid)
	if err != nil {
		return nil, fmt.Errorf("read gateway /proc: %w", err)
	}

	printHeader(o, db, g, setupStart)
	var results []*runResult
	for _, pr := range plan {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for round := 1; round <= o.rounds; round++ {
			r, err := measure(ctx, o, c, g, jw, pr, round)
			if r != nil {
				results = append(results, r)
				printResult(r)
			}
			if err != nil {
				return results, fmt.Errorf("run %s round %d: %w", pr.runSpec, round, err)
			}
		}
	}
	final, err := readProcStat(pid)
	if err != nil {
		return nil, fmt.Errorf("read gateway /proc: %w", err)
	}
	if err := g.Stop(time.Minute); err != nil {
		return nil, err
	}
	n, first := g.Warnings()
	printSummary(results, idle, final, n, first, g.LogPath)
	succeeded = true
	return results, nil
}

// launchGatewayIn starts the gateway binary (-gateway-bin, else built from
// ./cmd/gateway) in dir with the writer settings and routes.
func launchGatewayIn(ctx context.Context, o *options, dir string, w writerSettings, routes string) (*gatewaytest.Process, error) {
	return launchGatewayCfg(ctx, o, dir, gatewayConfig(o.bootstrap, w, routes))
}

// launchGatewayCfg starts the gateway binary with cfg, to which it adds the
// -gateway-gomemlimit and -gateway-pprof settings.
func launchGatewayCfg(ctx context.Context, o *options, dir string, cfg gatewaytest.Config) (*gatewaytest.Process, error) {
	bin := o.gatewayBin
	if bin == "" {
		var err error
		if bin, err = gatewaytest.Binary(false); err != nil {
			return nil, err
		}
	}
	if o.goMemLimit != "" {
		cfg.Env = []string{"GOMEMLIMIT=" + o.goMemLimit}
	}
	cfg.Pprof = o.pprof
	p, err := gatewaytest.Start(ctx, bin, dir, cfg)
	if err == nil && o.pprof {
		fmt.Fprintf(os.Stderr, "gateway-bench: gateway profiles at %s/debug/pprof/\n", p.AdminURL)
	}
	return p, err
}

// defaultJava is $JAVA_HOME/bin/java, else java from PATH.
func defaultJava() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	return "java"
}

// startRegistry starts the in-process registry of the avro workload, with
// its writer schema seeded (the gateway fetches it once and caches it).
func startRegistry() *srfake.Registry {
	reg := srfake.New()
	reg.SeedSchema(avroSubject, 1, avroSchemaID, sr.Schema{Schema: avroSchemaText})
	return reg
}

// leaderWait bounds the wait for a new table's bucket leaders. Fluss
// 0.9.1's coordinator now and then misses a table's creation event and
// never assigns its buckets (docs/deployment.md); such a table is dropped
// and made again.
const leaderWait = 30 * time.Second

func createTable(ctx context.Context, c *fluss.Client, p fluss.TablePath, d *fluss.TableDescriptor) (*fluss.TableInfo, error) {
	for attempt := 1; ; attempt++ {
		if err := c.CreateTable(ctx, p, d, false); err != nil {
			return nil, fmt.Errorf("create table %s: %w", p, err)
		}
		wctx, cancel := context.WithTimeout(ctx, leaderWait)
		err := c.WaitForTableLeaders(wctx, p)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil || attempt == 3 {
			return nil, fmt.Errorf("wait for leaders of %s (attempt %d): %w", p, attempt, err)
		}
		fmt.Fprintf(os.Stderr, "gateway-bench: table %s has no bucket leaders after %s; dropping and creating it again\n", p, leaderWait)
		if err := c.DropTable(ctx, p, true); err != nil {
			return nil, fmt.Errorf("drop leaderless table %s: %w", p, err)
		}
	}
	info, err := c.TableInfo(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("table info %s: %w", p, err)
	}
	return info, nil
}

// verify requires the tables' log end offsets, summed over their buckets,
// to equal want.
func verify(ctx context.Context, c *fluss.Client, tables []*fluss.TableInfo, want []int64) error {
	for i, t := range tables {
		buckets := make([]int32, t.Descriptor.BucketCount)
		for b := range buckets {
			buckets[b] = int32(b)
		}
		offs, err := c.ListOffsets(ctx, t.TableID, fluss.NoPartition, buckets, fluss.LatestOffset)
		if err != nil {
			return fmt.Errorf("list offsets of %s: %w", t.Path, err)
		}
		var sum int64
		for _, o := range offs {
			sum += o
		}
		if sum != want[i] {
			return fmt.Errorf("VERIFICATION FAILED: table %s has %d records (log end offsets %v), want %d", t.Path, sum, offs, want[i])
		}
	}
	return nil
}

func randHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func printHeader(o *options, db string, g *gatewaytest.Process, setupStart time.Time) {
	load := loadAverage()
	fmt.Printf("gateway-bench: %s, %d CPUs, load average %s; Fluss %s; gateway %s (pid %d, log %s)\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), load, o.bootstrap, g.KafkaAddr, g.Pid(), g.LogPath)
	rate := "as fast as possible"
	if o.rate > 0 {
		rate = fmt.Sprintf("%.0f records/s offered", o.rate)
	}
	fmt.Printf("records/run %d (%s), producers %d, buckets %d, gateway writer linger %s batch_size %d buffer_memory %d, franz-go linger %s max-buffered %d; database %s; setup %.1fs\n\n",
		o.records, rate, o.producers, o.buckets, o.linger, o.batchSize, o.bufferMemory, o.kafkaLinger, o.maxBuffered, db, time.Since(setupStart).Seconds())
	fmt.Printf("%-16s %8s %7s %10s %7s %8s %8s %9s %8s %10s %6s\n",
		"run", "records", "secs", "records/s", "MB/s", "p50 ms", "p99 ms", "CPU s/M", "RSS MiB", "base rec/s", "gw/bl")
}
