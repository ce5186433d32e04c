package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// perfMain is Kafka's producer benchmark in kafka-tools (kafka-producer-perf-test.sh).
const perfMain = "org.apache.kafka.tools.ProducerPerformance"

// perfSummary is the final line of ProducerPerformance, e.g.
//
//	200000 records sent, 42992.3 records/sec (41.98 MB/sec), 570.02 ms avg latency,
//	828.00 ms max latency, 566 ms 50th, 773 ms 95th, 804 ms 99th, 820 ms 99.9th.
//
// Its records count only the sends that succeeded (Kafka 4.x's callback
// counts a record when its exception is null).
type perfSummary struct {
	records             int64
	rate                float64 // records/s, from its own clock (first send to last callback)
	mbPerSec            float64
	avgMs, maxMs        float64
	p50, p95, p99, p999 float64 // ms
}

// perfSummaryRE matches the summary line only; the periodic window lines
// have no percentiles.
var perfSummaryRE = regexp.MustCompile(`(\d+) records sent, ([0-9.]+) records/sec \(([0-9.]+) MB/sec\), ` +
	`([0-9.]+) ms avg latency, ([0-9.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th`)

// parsePerfSummary returns the last summary line in ProducerPerformance's
// output.
func parsePerfSummary(out string) (perfSummary, error) {
	var s perfSummary
	m := perfSummaryRE.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return s, errors.New("no ProducerPerformance summary line (\"N records sent, ... 99.9th.\") in its output")
	}
	f := m[len(m)-1][1:]
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return s, fmt.Errorf("summary records %q: %w", f[0], err)
	}
	s.records = n
	dst := []*float64{&s.rate, &s.mbPerSec, &s.avgMs, &s.maxMs, &s.p50, &s.p95, &s.p99, &s.p999}
	for i, p := range dst {
		if *p, err = strconv.ParseFloat(f[i+1], 64); err != nil {
			return s, fmt.Errorf("summary field %q: %w", f[i+1], err)
		}
	}
	return s, nil
}

// javaPerf is how ProducerPerformance runs: a child JVM on the Kafka jars
// that scripts/kafka-local.sh resolved.
type javaPerf struct {
	java    string // the java binary
	lib     string // directory of the kafka-tools runtime jars
	log4j   string // log4j2 configuration file (WARN: keeps INFO lines out of the output)
	heap    string // -Xmx; kafka-run-class.sh uses 256M for tools, more keeps GC out of the figures
	timeout time.Duration
}

// perfRun is one ProducerPerformance invocation.
type perfRun struct {
	bootstrap   string
	topic       string
	records     int
	payloadFile string  // one value per line; a random line per record
	rate        float64 // records/s; 0: -1 (as fast as it can)
	codec       string  // compression.type
	clientID    string
}

// perfArgs is the java command line: the producer at its defaults except
// bootstrap, acks=all (already the 4.x default) and the codec.
func perfArgs(jp javaPerf, r perfRun) []string {
	throughput := "-1"
	if r.rate > 0 {
		throughput = strconv.FormatFloat(r.rate, 'f', 0, 64)
	}
	return []string{
		"-Xmx" + jp.heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=file:" + jp.log4j,
		"-cp", filepath.Join(jp.lib, "*"), perfMain,
		"--topic", r.topic,
		"--num-records", strconv.Itoa(r.records),
		"--payload-file", r.payloadFile,
		"--throughput", throughput,
		"--producer-props",
		"bootstrap.servers=" + r.bootstrap,
		"acks=all",
		"compression.type=" + r.codec,
		"client.id=" + r.clientID,
	}
}

// runPerf runs ProducerPerformance to completion and returns its summary and
// the CPU time of the JVM (user + system, from wait4).
func runPerf(ctx context.Context, jp javaPerf, r perfRun) (perfSummary, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, jp.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, jp.java, perfArgs(jp, r)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return perfSummary{}, cpu, fmt.Errorf("ProducerPerformance against %s: %w; stderr: %s", r.bootstrap, err, tail(stderr.String(), 2000))
	}
	s, err := parsePerfSummary(stdout.String())
	if err != nil {
		return s, cpu, fmt.Errorf("ProducerPerformance against %s: %w; stdout: %s stderr: %s", r.bootstrap, err,
			tail(stdout.String(), 1000), tail(stderr.String(), 1000))
	}
	// A failed send is printed as a stack trace and left out of the count.
	if s.records != int64(r.records) {
		return s, cpu, fmt.Errorf("ProducerPerformance against %s: %d of %d records acked; stderr: %s",
			r.bootstrap, s.records, r.records, tail(stderr.String(), 2000))
	}
	return s, cpu, nil
}

// writePayloadFile writes n values, one per line, for --payload-file.
func writePayloadFile(path string, n int, value func(dst []byte, k int64) []byte) error {
	var b []byte
	for k := range int64(n) {
		v := value(nil, k)
		if bytes.IndexByte(v, '\n') >= 0 {
			return fmt.Errorf("value %d holds a newline, the payload file's delimiter", k)
		}
		b = append(append(b, v...), '\n')
	}
	return os.WriteFile(path, b, 0o600)
}

// perfLog4j is the log4j 2 configuration of the ProducerPerformance JVM.
const perfLog4j = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_ERR
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
`

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
