package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// -flink compares the gateway with the pipeline a user would otherwise run
// to get Kafka producers' records into a Fluss table: a Kafka broker plus a
// Flink job reading the topic and writing the table through Fluss's Flink
// connector (java/KafkaToFlussJob.java). The same franz-go producers feed
// both; the time from a record's produce to its row being readable is taken
// by a Fluss Java client tailing each table (java/FlussTail.java).

// The Flink side's versions: the Flink 1.20 line, its Kafka connector, and
// Fluss's connector for it at the local cluster's version.
const (
	flinkVersion          = "1.20.3"
	flinkKafkaConnector   = "3.4.0-1.20"
	flinkCheckpointMillis = 10_000
)

const targetFlink = "kafka+flink"

// flinkLib resolves the Flink job's classpath from Maven Central into
// .cache/flink-bench once and returns the directory of jars.
func flinkLib(ctx context.Context, root string) (string, error) {
	lib := filepath.Join(root, ".cache", "flink-bench", flinkVersion+"_"+flinkKafkaConnector+"_"+javaClientVersion)
	if _, err := os.Stat(filepath.Join(lib, "flink-runtime-"+flinkVersion+".jar")); err == nil {
		return lib, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", errors.New("-flink needs Maven (mvn) to download Flink and its connectors")
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(lib), "lib.tmp.")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	dep := func(group, artifact, version string) string {
		return fmt.Sprintf("<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n", group, artifact, version)
	}
	var deps strings.Builder
	for _, a := range []string{"flink-streaming-java", "flink-clients", "flink-table-api-java-bridge", "flink-table-planner-loader",
		"flink-table-runtime", "flink-json", "flink-connector-base"} {
		deps.WriteString(dep("org.apache.flink", a, flinkVersion))
	}
	deps.WriteString(dep("org.apache.flink", "flink-connector-kafka", flinkKafkaConnector))
	deps.WriteString(dep("org.apache.fluss", "fluss-flink-1.20", javaClientVersion))
	pom := `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
<modelVersion>4.0.0</modelVersion>
<groupId>local.gateway-bench</groupId><artifactId>flink-job</artifactId><version>1</version><packaging>pom</packaging>
<dependencies>
` + deps.String() + `</dependencies>
</project>
`
	if err := os.WriteFile(filepath.Join(tmp, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "gateway-bench: resolving Flink %s, flink-connector-kafka %s and fluss-flink-1.20 %s with Maven (once)\n",
		flinkVersion, flinkKafkaConnector, javaClientVersion)
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(tmp, "pom.xml"),
		"org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies", "-DincludeScope=runtime",
		"-DoutputDirectory="+filepath.Join(tmp, "jars"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("resolve the Flink job's jars: %w\n%s", err, tail(string(out), 3000))
	}
	if err := os.Rename(filepath.Join(tmp, "jars"), lib); err != nil && !dirExists(lib) {
		return "", fmt.Errorf("publish %s: %w", lib, err)
	}
	return lib, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// javaChild is a JVM this bench started and talks to over its stdout.
type javaChild struct {
	cmd   *exec.Cmd
	lines chan string // its stdout, line by line; closed at EOF
	stdin io.WriteCloser
	log   string // its stderr
}

// startJava starts java with args, its stderr into logPath, and waits for
// the line ready on its stdout.
func startJava(ctx context.Context, java, logPath, ready string, wait time.Duration, args ...string) (*javaChild, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(java, args...)
	cmd.Stderr = logf
	// The JVM goes when the bench does, even if the bench is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", java, err)
	}
	j := &javaChild{cmd: cmd, lines: make(chan string, 16), stdin: stdin, log: logPath}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
		close(j.lines)
	}()
	if _, err := j.await(ctx, ready, wait); err != nil {
		j.stop()
		return nil, err
	}
	return j, nil
}

// await returns the next stdout line that starts with prefix.
func (j *javaChild) await(ctx context.Context, prefix string, wait time.Duration) (string, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-j.lines:
			if !ok {
				return "", fmt.Errorf("the JVM (pid %d) exited before it printed %q; its log %s ends:\n%s", j.cmd.Process.Pid, prefix, j.log, logTail(j.log))
			}
			if strings.HasPrefix(line, prefix) {
				return line, nil
			}
		case <-timer.C:
			return "", fmt.Errorf("the JVM (pid %d) printed no %q within %s; its log %s ends:\n%s", j.cmd.Process.Pid, prefix, wait, j.log, logTail(j.log))
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (j *javaChild) pid() int { return j.cmd.Process.Pid }

func (j *javaChild) stop() {
	_ = j.cmd.Process.Kill()
	_ = j.cmd.Wait()
}

func logTail(path string) string {
	b, _ := os.ReadFile(path)
	return tail(string(b), 3000)
}

// tailRun is what a FlussTail reported for one run.
type tailRun struct {
	seen       []int64 // wall-clock µs at which row first+i was read
	duplicates int
	err        error
}

// startTailRun tells the tail to wait for ids first..first+n-1 and returns
// at once; the result arrives on the channel.
func startTailRun(ctx context.Context, t *javaChild, first int64, n int, file string) <-chan tailRun {
	ch := make(chan tailRun, 1)
	if _, err := fmt.Fprintf(t.stdin, "RUN %d %d %s\n", first, n, file); err != nil {
		ch <- tailRun{err: fmt.Errorf("tell the tail: %w", err)}
		return ch
	}
	go func() {
		line, err := t.await(ctx, "DONE", 10*time.Minute)
		if err != nil {
			ch <- tailRun{err: err}
			return
		}
		r := tailRun{}
		for _, f := range strings.Fields(line)[1:] {
			if k, v, ok := strings.Cut(f, "="); ok && k == "duplicates" {
				r.duplicates, _ = strconv.Atoi(v)
			}
		}
		b, err := os.ReadFile(file)
		if err != nil || len(b) != 8*n {
			r.err = fmt.Errorf("read the tail's %s: %d bytes for %d rows, %v", file, len(b), n, err)
		} else {
			r.seen = make([]int64, n)
			for i := range r.seen {
				r.seen[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
			}
		}
		ch <- r
	}()
	return ch
}

// readableLatency is, per row, its read time minus its produce time, in ms:
// p50 and p99.
func readableLatency(sent, seen []int64) (p50, p99 float64) {
	lat := make([]float64, len(sent))
	for i := range sent {
		lat[i] = float64(seen[i]-sent[i]) / 1000
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// flinkTarget is one side of the comparison: where the producers send, the
// table the rows end in, the processes that carry them (whose CPU counts),
// and the tail reading the table.
type flinkTarget struct {
	name  string
	seed  string // the producers' bootstrap
	topic string
	table *fluss.TableInfo
	pids  []int // gateway; or Kafka broker and Flink JVM
	tail  *javaChild
}

// flinkSample is one run against one target.
type flinkSample struct {
	target           string
	repeat           int
	records          int
	secs             float64 // first produce to the last row in Fluss (its end offsets)
	ackP50, ackP99   float64 // ms, produce to the producer's ack
	readP50, readP99 float64 // ms, produce to the row read from Fluss (with a tail)
	producers        time.Duration
	path             time.Duration // the target's processes
	fluss            time.Duration // the tablet servers
}

func (s *flinkSample) rate() float64 { return float64(s.records) / s.secs }

// perM is d in CPU-seconds per million rows.
func (s *flinkSample) perM(d time.Duration) float64 { return cpuPerMillion(d, s.records) }

// measureFlink produces n records first..first+n-1 to t and waits until the
// table holds all of them.
func measureFlink(ctx context.Context, o *options, c *fluss.Client, gen *generator, t *flinkTarget, repeat int, first int64, n int, dir string) (*flinkSample, error) {
	s := &flinkSample{target: t.name, repeat: repeat, records: n}
	before, err := flussEndOffset(ctx, c, t.table)
	if err != nil {
		return nil, err
	}
	var tailCh <-chan tailRun
	if t.tail != nil {
		tailCh = startTailRun(ctx, t.tail, first, n, filepath.Join(dir, "tail-"+strings.ReplaceAll(t.name, "+", "-")+".bin"))
	}
	self, err := readProcStat(os.Getpid())
	if err != nil {
		return nil, err
	}
	pathBefore, flussBefore := sumCPU(t.pids), sumCPU(o.flussPIDs)
	codec, _ := kafkaCodec(compareCodec)
	sent := make([]int64, n)
	start := time.Now()
	fr, err := produceFranz(ctx, franzRun{
		seed: t.seed, producers: o.producers, opts: tunedOpts(o, codec), topics: []string{t.topic},
		records: n, rate: o.rate, record: franzRecordFunc(workloadJSON, gen), first: first, sent: sent,
	})
	if selfAfter, err := readProcStat(os.Getpid()); err == nil {
		s.producers = selfAfter.cpu - self.cpu
	}
	if err != nil {
		return nil, fmt.Errorf("produce to %s: %w", t.name, err)
	}
	s.ackP50, s.ackP99 = ms(fr.p50), ms(fr.p99)
	// The Flink side acks when Kafka has the records; they reach Fluss later.
	deadline := time.Now().Add(5 * time.Minute)
	var after int64
	for {
		if after, err = flussEndOffset(ctx, c, t.table); err != nil {
			return nil, err
		}
		if after-before >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: the table %s holds %d of the %d rows 5 minutes after the last ack", t.name, t.table.Path, after-before, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.secs = time.Since(start).Seconds()
	s.path, s.fluss = sumCPU(t.pids)-pathBefore, sumCPU(o.flussPIDs)-flussBefore
	if after-before != int64(n) {
		return nil, fmt.Errorf("VERIFICATION FAILED: %s: the end offsets of %s grew by %d for %d records", t.name, t.table.Path, after-before, n)
	}
	if tailCh != nil {
		r := <-tailCh
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, r.err)
		}
		if r.duplicates > 0 {
			return nil, fmt.Errorf("VERIFICATION FAILED: %s: the tail read %d rows twice", t.name, r.duplicates)
		}
		s.readP50, s.readP99 = readableLatency(sent, r.seen)
	}
	return s, nil
}

// runFlinkCompare is -flink: the gateway against a Kafka broker plus a
// Flink job, the same producers, alternating, -repeats times.
func runFlinkCompare(ctx context.Context, o *options, c *fluss.Client, db string, setupStart time.Time) ([]*flinkSample, error) {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gateway-bench-flink-")
	if err != nil {
		return nil, err
	}
	succeeded := false
	defer func() {
		if succeeded && !o.keep {
			os.RemoveAll(dir)
		}
	}()
	gwTable, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: "gw_json"}, o.descriptor(workloadJSON))
	if err != nil {
		return nil, err
	}
	flTable, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: "flink_json"}, o.descriptor(workloadJSON))
	if err != nil {
		return nil, err
	}
	route := workloadJSON.route("gw_json", gwTable.Path)
	if o.exactlyOnce != "" {
		route += "    exactly_once: " + o.exactlyOnce + "\n"
	}
	g, err := launchGatewayIn(ctx, o, dir, o.explicitWriterSettings(), route)
	if err != nil {
		return nil, err
	}
	defer g.Kill()

	b, stopBroker, err := useBroker(ctx, o, root)
	if err != nil {
		return nil, err
	}
	defer stopBroker()
	if b.pid == 0 {
		return nil, errors.New("-flink needs the broker's pid (-kafka-pid with -kafka-bootstrap) for its CPU")
	}
	kcl, err := kgo.NewClient(kgo.SeedBrokers(b.bootstrap), kgo.ClientID("gateway-bench-admin"))
	if err != nil {
		return nil, fmt.Errorf("kafka admin client: %w", err)
	}
	defer kcl.Close()
	if err := createKafkaTopics(ctx, kcl, []string{"flink_json"}, o.buckets); err != nil {
		return nil, err
	}

	lib, err := flinkLib(ctx, root)
	if err != nil {
		return nil, err
	}
	src := func(name string) string { return filepath.Join(root, "tools", "gateway-bench", "java", name) }
	job, err := startJava(ctx, o.java, filepath.Join(dir, "flink.log"), "RUNNING", 5*time.Minute,
		append(append([]string{"-Xmx1g"}, gatewaytest.FlinkJVMOpens()...), "-cp", filepath.Join(lib, "*"), src("KafkaToFlussJob.java"),
			b.bootstrap, "flink_json", o.bootstrap, db, "flink_json", strconv.Itoa(o.flinkParallelism), strconv.Itoa(flinkCheckpointMillis))...)
	if err != nil {
		return nil, fmt.Errorf("start the Flink job: %w", err)
	}
	defer job.stop()

	gw := &flinkTarget{name: targetGateway, seed: g.KafkaAddr, topic: "gw_json", table: gwTable, pids: []int{g.Pid()}}
	fl := &flinkTarget{name: targetFlink, seed: b.bootstrap, topic: "flink_json", table: flTable, pids: []int{b.pid, job.pid()}}
	targets := []*flinkTarget{gw, fl}
	if o.rate > 0 {
		jar, err := fetchClientJar(ctx, root)
		if err != nil {
			return nil, err
		}
		for _, t := range targets {
			name := strings.ReplaceAll(t.name, "+", "-")
			if t.tail, err = startJava(ctx, o.java, filepath.Join(dir, "tail-"+name+".log"), "READY", 2*time.Minute,
				append(gatewaytest.FlinkJVMOpens(), "-cp", jar, src("FlussTail.java"), o.bootstrap, t.table.Path.String())...); err != nil {
				return nil, fmt.Errorf("start the tail of %s: %w", t.table.Path, err)
			}
			defer t.tail.stop()
		}
	}

	gen := newGenerator(o.payloadLen, 0)
	printFlinkHeader(o, g, b, job, db, setupStart)
	var first int64
	if o.warmup {
		// Both sides' JVMs (and the gateway's pools) warm up on a first run.
		t0 := time.Now()
		for _, t := range targets {
			n := max(o.producers, o.records/5)
			if _, err := measureFlink(ctx, o, c, gen, t, -1, first, n, dir); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
			first += int64(n)
		}
		fmt.Printf("(warm-up: one run of %d records against each, not counted: %.1fs)\n", max(o.producers, o.records/5), time.Since(t0).Seconds())
	}
	fmt.Printf("\n%-6s %-12s %8s %10s %9s %9s %10s %10s %9s %9s %9s\n",
		"repeat", "target", "records", "rows/s", "ack p50", "ack p99", "read p50", "read p99", "prod s/M", "path s/M", "fluss s/M")
	var samples []*flinkSample
	for r := range o.repeats {
		order := slices.Clone(targets)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := g.Alive(); err != nil {
				return nil, err
			}
			s, err := measureFlink(ctx, o, c, gen, t, r, first, o.records, dir)
			if err != nil {
				return nil, err
			}
			first += int64(o.records)
			samples = append(samples, s)
			fmt.Printf("%-6d %-12s %8d %10.0f %9.1f %9.1f %10.1f %10.1f %9.2f %9.2f %9.2f\n", r+1, s.target, s.records, s.rate(),
				s.ackP50, s.ackP99, s.readP50, s.readP99, s.perM(s.producers), s.perM(s.path), s.perM(s.fluss))
		}
	}
	if err := g.Stop(time.Minute); err != nil {
		return nil, err
	}
	fmt.Printf("\nmedians of %d alternated runs; CPU in s per million rows; \"path\": the gateway, or the Kafka broker and the Flink JVM:\n\n", o.repeats)
	fmt.Print(formatFlinkTable(samples, o.rate > 0))
	if n, first := g.Warnings(); n > 0 {
		fmt.Printf("\ngateway logged %d WARN/ERROR lines (log %s); first: %s\n", n, g.LogPath, first)
	}
	fmt.Println("verification: after every run the table's end offsets grew by exactly the records produced" +
		map[bool]string{true: ", and the tail read each row once", false: ""}[o.rate > 0] + ": OK")
	succeeded = true
	return samples, nil
}

func printFlinkHeader(o *options, g *gatewaytest.Process, b *broker, job *javaChild, db string, setupStart time.Time) {
	fmt.Printf("gateway-bench -flink: %s, %d CPUs, load average %s; database %s; setup %.1fs\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage(), db, time.Since(setupStart).Seconds())
	fmt.Printf("gateway %s (pid %d) → Fluss %s (tablet server pids %v); exactly_once %q (empty: the default)\n",
		g.KafkaAddr, g.Pid(), o.bootstrap, o.flussPIDs, o.exactlyOnce)
	fmt.Printf("Kafka %s broker %s (pid %d) → Flink %s job (pid %d, local, parallelism %d, at-least-once checkpoints every %d ms; "+
		"flink-connector-kafka %s, fluss-flink-1.20 %s)\n", o.kafkaVersion, b.bootstrap, b.pid, flinkVersion, job.pid(),
		o.flinkParallelism, flinkCheckpointMillis, flinkKafkaConnector, javaClientVersion)
	rate := "as fast as they can"
	if o.rate > 0 {
		rate = fmt.Sprintf("%.0f records/s offered; each table tailed by fluss-client %s for the time to a readable row", o.rate, javaClientVersion)
	}
	fmt.Printf("producers: %d franz-go clients, %s, acks=all, linger %s, max-buffered %d; json values of payload %d; %d buckets/partitions; %s\n",
		o.producers, compareCodec, o.kafkaLinger, o.maxBuffered, o.payloadLen, o.buckets, rate)
}

// formatFlinkTable is the medians of each target and the gateway's ratio
// to Kafka + Flink, as Markdown.
func formatFlinkTable(samples []*flinkSample, latency bool) string {
	type agg struct{ rate, rowsPerCPUs, ackP50, readP50, readP99, prod, path, fl, total float64 }
	by := map[string]*agg{}
	for _, name := range []string{targetGateway, targetFlink} {
		var rate, rpc, ack, r50, r99, prod, path, fl, total []float64
		for _, s := range samples {
			if s.target != name {
				continue
			}
			rate = append(rate, s.rate())
			rpc = append(rpc, float64(s.records)/(s.producers+s.path).Seconds())
			ack, r50, r99 = append(ack, s.ackP50), append(r50, s.readP50), append(r99, s.readP99)
			prod, path, fl = append(prod, s.perM(s.producers)), append(path, s.perM(s.path)), append(fl, s.perM(s.fluss))
			total = append(total, s.perM(s.producers+s.path+s.fluss))
		}
		by[name] = &agg{median(rate), median(rpc), median(ack), median(r50), median(r99), median(prod), median(path), median(fl), median(total)}
	}
	g, f := by[targetGateway], by[targetFlink]
	var b strings.Builder
	b.WriteString("| | gateway | Kafka + Flink | gateway / (Kafka + Flink) |\n|---|---|---|---|\n")
	row := func(name string, gv, fv float64, format string) {
		ratio := "-"
		if fv > 0 {
			ratio = fmt.Sprintf("%.2f", gv/fv)
		}
		fmt.Fprintf(&b, "| %s | "+format+" | "+format+" | %s |\n", name, gv, fv, ratio)
	}
	row("rows/s into Fluss", g.rate, f.rate, "%.0f")
	row("rows per CPU-second of producers + path", g.rowsPerCPUs, f.rowsPerCPUs, "%.0f")
	row("CPU s/M: producers", g.prod, f.prod, "%.2f")
	row("CPU s/M: path (gateway; broker + Flink)", g.path, f.path, "%.2f")
	row("CPU s/M: Fluss tablet server", g.fl, f.fl, "%.2f")
	row("CPU s/M: all processes", g.total, f.total, "%.2f")
	row("produce → ack p50 ms", g.ackP50, f.ackP50, "%.1f")
	if latency {
		row("produce → readable in Fluss p50 ms", g.readP50, f.readP50, "%.1f")
		row("produce → readable in Fluss p99 ms", g.readP99, f.readP99, "%.1f")
	}
	return b.String()
}
