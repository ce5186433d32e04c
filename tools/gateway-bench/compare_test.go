package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// perfOutput is what ProducerPerformance 4.1 prints with --payload-file:
// the payload lines, window lines without percentiles, then the summary.
const perfOutput = `Reading payloads from: /tmp/p.txt
Number of messages read: 10000
212345 records sent, 42469.0 records/sec (41.47 MB/sec), 512.3 ms avg latency, 801.0 ms max latency.
200000 records sent, 42992.3 records/sec (41.98 MB/sec), 570.02 ms avg latency, 828.00 ms max latency, 566 ms 50th, 773 ms 95th, 804 ms 99th, 820 ms 99.9th.
`

func TestParsePerfSummary(t *testing.T) {
	s, err := parsePerfSummary(perfOutput)
	require.NoError(t, err)
	assert.Equal(t, perfSummary{
		records: 200000, rate: 42992.3, mbPerSec: 41.98, avgMs: 570.02, maxMs: 828,
		p50: 566, p95: 773, p99: 804, p999: 820,
	}, s)

	// Only the summary line counts, and the last one wins.
	two := perfOutput + strings.Replace(strings.Split(perfOutput, "\n")[3], "200000", "7", 1) + "\n"
	s, err = parsePerfSummary(two)
	require.NoError(t, err)
	assert.Equal(t, int64(7), s.records)

	_, err = parsePerfSummary("212345 records sent, 42469.0 records/sec (41.47 MB/sec), 512.3 ms avg latency, 801.0 ms max latency.\n")
	assert.Error(t, err, "a window line is no summary")
	_, err = parsePerfSummary("")
	assert.Error(t, err)
}

func TestPerfArgsKeepProducerDefaults(t *testing.T) {
	jp := javaPerf{java: "java", lib: "/c/kafka/4.1.2/lib", log4j: "/d/log4j2.properties", heap: "512m"}
	args := perfArgs(jp, perfRun{bootstrap: "127.0.0.1:9", topic: "t", records: 10, payloadFile: "/d/p.txt", codec: "lz4", clientID: "c"})
	i := slices.Index(args, perfMain)
	require.Positive(t, i)
	assert.Equal(t, []string{"-cp", "/c/kafka/4.1.2/lib/*"}, args[i-2:i])
	assert.Contains(t, args, "-Xmx512m")
	assert.Equal(t, []string{
		"--topic", "t", "--num-records", "10", "--payload-file", "/d/p.txt", "--throughput", "-1",
		"--producer-props", "bootstrap.servers=127.0.0.1:9", "acks=all", "compression.type=lz4", "client.id=c",
	}, args[i+1:], "nothing but bootstrap, acks, codec and client id: the rest stays at the producer's defaults")

	args = perfArgs(jp, perfRun{rate: 12345.6})
	assert.Equal(t, "12346", args[slices.Index(args, "--throughput")+1])
}

func TestWritePayloadFile(t *testing.T) {
	gen := newGenerator(payloadLenFor(1024, 50_000), 0)
	path := filepath.Join(t.TempDir(), "p.txt")
	require.NoError(t, writePayloadFile(path, 3, gen.value))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 3)
	for k, l := range lines {
		assert.Equal(t, string(gen.value(nil, int64(k))), l)
	}
	err = writePayloadFile(path, 1, func(dst []byte, _ int64) []byte { return append(dst, "a\nb"...) })
	assert.Error(t, err)
}

func TestPayloadLenForGivesTheValueSize(t *testing.T) {
	for _, size := range []int{100, 1024} {
		for _, records := range []int{20_000, 500_000} {
			gen := newGenerator(payloadLenFor(size, records), 0)
			v := gen.value(nil, int64(records/2))
			assert.InDelta(t, size, len(v), 8, "size %d, %d records: %s", size, records, v)
		}
	}
}

func TestParseCmpSpecs(t *testing.T) {
	specs, err := parseCmpSpecs("franz-default/json/100, java/raw/1k,franz-tuned/json/2048")
	require.NoError(t, err)
	assert.Equal(t, []cmpSpec{
		{producerFranzDefault, workloadJSON, 100, 0},
		{producerJava, workloadRaw, 1024, 0},
		{producerFranzTuned, workloadJSON, 2048, 0},
	}, specs)
	assert.Equal(t, "java/raw/1k", specs[1].String())
	assert.Equal(t, "franz-tuned/json/2k", specs[2].String())
	paced, err := parseCmpSpecs("java/json/1k@5000,franz-tuned/raw/100@2500.5")
	require.NoError(t, err)
	assert.Equal(t, []cmpSpec{{producerJava, workloadJSON, 1024, 5000}, {producerFranzTuned, workloadRaw, 100, 2500.5}}, paced)
	assert.Equal(t, "java/json/1k@5000", paced[0].String())
	for _, bad := range []string{"java/json", "sarama/json/100", "java/upsert/100", "java/json/0", "java/json/1m", "java/xml/1k",
		"java/json/1k@", "java/json/1k@0", "java/json/1k@x"} {
		_, err := parseCmpSpecs(bad)
		assert.Error(t, err, bad)
	}
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 0.0, median(nil))
	assert.Equal(t, 3.0, median([]float64{3}))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	xs := []float64{3, 1, 2}
	median(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs, "the input is left as it was")
}

func TestAggregatePairsRepeats(t *testing.T) {
	a := cmpSpec{producerFranzTuned, workloadJSON, 1024, 0}
	b := cmpSpec{producerJava, workloadJSON, 1024, 0}
	mk := func(sp cmpSpec, target string, repeat int, rate float64, cpuSecs float64, known bool) *sample {
		return &sample{spec: sp, target: target, repeat: repeat, records: 1_000_000, rate: rate, p50: rate / 1000, p99: rate / 100,
			serverCPU: time.Duration(cpuSecs * float64(time.Second)), flussCPU: time.Second, serverRSS: 100 << 20, cpuKnown: known}
	}
	samples := []*sample{
		// a: ratios 100/200 = 0.5, 300/200 = 1.5, 200/100 = 2 -> median 1.5
		mk(a, targetGateway, 0, 100, 6, true), mk(a, targetKafka, 0, 200, 2, true),
		mk(a, targetKafka, 1, 200, 3, true), mk(a, targetGateway, 1, 300, 9, true),
		mk(a, targetGateway, 2, 200, 3, true), mk(a, targetKafka, 2, 100, 4, true),
		// b: the broker's pid unknown, one repeat without its Kafka half
		mk(b, targetGateway, 0, 10, 1, true), mk(b, targetKafka, 0, 40, 0, false),
		mk(b, targetGateway, 1, 30, 1, true),
	}
	rows := aggregate(samples, []cmpSpec{b, a})
	require.Len(t, rows, 2)
	assert.Equal(t, b, rows[0].spec, "rows in the order of the specs")

	ra := rows[1]
	assert.Equal(t, 3, ra.gw.n)
	assert.Equal(t, 200.0, ra.gw.rate)
	assert.Equal(t, 200.0, ra.kafka.rate)
	assert.True(t, ra.hasRatio)
	assert.InDelta(t, 1.5, ra.ratio, 1e-9, "median of the per-repeat ratios, not the ratio of the medians")
	assert.InDelta(t, 0.5, ra.ratioMin, 1e-9)
	assert.InDelta(t, 2.0, ra.ratioMax, 1e-9)
	assert.Equal(t, 6.0, ra.gw.serverCPU)
	assert.Equal(t, 3.0, ra.kafka.serverCPU)
	assert.True(t, ra.hasCPURatio)
	assert.InDelta(t, 2.0, ra.cpuRatio, 1e-9)
	assert.Equal(t, 1.0, ra.gw.flussCPU)
	assert.Equal(t, 100.0, ra.gw.rssMiB)
	assert.Equal(t, 0.2, ra.gw.p50)

	rb := rows[0]
	assert.InDelta(t, 0.25, rb.ratio, 1e-9, "only repeat 0 has both halves")
	assert.False(t, rb.hasCPURatio)
	assert.False(t, rb.kafka.cpuKnown)
}

func TestFormatCompareTable(t *testing.T) {
	rows := []cmpRow{{
		spec:  cmpSpec{producerFranzTuned, workloadJSON, 1024, 0},
		gw:    targetAgg{n: 3, rate: 51234.4, p50: 12.34, p99: 56.78, serverCPU: 13.456, flussCPU: 4.5, rssMiB: 210.4, cpuKnown: true},
		kafka: targetAgg{n: 3, rate: 99999.5, p50: 3, p99: 9.05, serverCPU: 2.4, rssMiB: 600, cpuKnown: true},
		ratio: 0.512, ratioMin: 0.49, ratioMax: 0.55, cpuRatio: 5.6,
		hasRatio: true, hasCPURatio: true,
	}, {
		spec:  cmpSpec{producerJava, workloadRaw, 100, 0},
		gw:    targetAgg{n: 1, rate: 10, cpuKnown: true},
		kafka: targetAgg{n: 0},
	}}
	out := formatCompareTable(rows)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4)
	assert.True(t, strings.HasPrefix(lines[0], "| producer/workload/size | gateway rec/s | Kafka rec/s | gateway / Kafka |"), lines[0])
	for _, l := range lines {
		assert.Equal(t, 12, strings.Count(l, "|"), "11 columns: %s", l)
	}
	assert.Equal(t, "| franz-tuned/json/1k | 51,234 | 100,000 | 0.51 [0.49–0.55] | 13.46 | 4.50 | 2.40 | 5.6× | 12.3 / 56.8 | 3.0 / 9.1 | 210 / 600 |", lines[2])
	assert.Equal(t, "| java/raw/100 | 10 | 0 | - | 0.00 | 0.00 | - | - | 0.0 / 0.0 | 0.0 / 0.0 | 0 / - |", lines[3])
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 1234567.8: "1,234,568", 100000: "100,000"} {
		assert.Equal(t, want, thousands(in), "%v", in)
	}
}

func TestParseKeyValuesOfTheScripts(t *testing.T) {
	kv := parseKeyValues("KAFKA_BOOTSTRAP=127.0.0.1:24905\nKAFKA_PID=17791\n\nnoise\n")
	assert.Equal(t, map[string]string{"KAFKA_BOOTSTRAP": "127.0.0.1:24905", "KAFKA_PID": "17791"}, kv)
}

func TestParseTabletPIDs(t *testing.T) {
	status := `cluster 'dev': Fluss 0.9.1-incubating, dir /tmp/fluss-local-dev.PUKaay, started 2026-12-01 11:16:08
  FLUSS_BOOTSTRAP=127.0.0.1:23282
  zookeeper    running  pid 12179    127.0.0.1:27194
  coordinator  running  pid 12235    127.0.0.1:23282
  tablet-0     running  pid 12333    127.0.0.1:45185
  tablet-1     DOWN     pid 12334    127.0.0.1:45186
  tablet-2     running  pid 12400    127.0.0.1:45187
`
	assert.Equal(t, []int{12333, 12400}, parseTabletPIDs(status))
	assert.Empty(t, parseTabletPIDs("cluster 'x': not running (no state file)\n"))
}

func TestOptionsKafka(t *testing.T) {
	o, err := parseOptions([]string{"-bootstrap", "h:1", "-kafka", "-kafka-runs", "java/json/1k", "-linger", "5ms"})
	require.NoError(t, err)
	assert.True(t, o.kafka)
	assert.Equal(t, []cmpSpec{{producerJava, workloadJSON, 1024, 0}}, o.kafkaRuns)
	assert.Equal(t, 3, o.repeats)
	assert.False(t, o.recordsSet)
	assert.Equal(t, writerSettings{Linger: "5ms", LogLevel: "warn"}, o.explicitWriterSettings(),
		"only the writer flags given; the rest stays at the gateway's defaults")
	assert.Equal(t, fluss.ArrowCompressionZstd, o.descriptor(workloadJSON).ArrowCompression())

	o, err = parseOptions([]string{"-bootstrap", "h:1", "-table-codec", "none", "-records", "10"})
	require.NoError(t, err)
	assert.True(t, o.recordsSet)
	assert.Equal(t, fluss.ArrowCompressionNone, o.descriptor(workloadRaw).ArrowCompression())
	assert.NotContains(t, o.descriptor(workloadUpsert).Properties, fluss.PropArrowCompression, "a primary-key table gets no Arrow codec")

	for _, bad := range [][]string{
		{"-bootstrap", "h:1", "-table-codec", "brotli"},
		{"-bootstrap", "h:1", "-kafka", "-kafka-runs", "java/upsert/1k"},
		{"-bootstrap", "h:1", "-kafka", "-repeats", "0"},
	} {
		_, err := parseOptions(bad)
		assert.Error(t, err, bad)
	}
}

func TestRecordsFor(t *testing.T) {
	o := &options{kafkaBytes: 100_000_000, producers: 4}
	assert.Equal(t, 1_000_000, recordsFor(o, cmpSpec{size: 100}))
	assert.Equal(t, 97_656, recordsFor(o, cmpSpec{size: 1024}))
	assert.Equal(t, 50_000, recordsFor(o, cmpSpec{size: 1024, rate: 5000}), "a paced run lasts about pacedSecs")
	o.rate = 100
	assert.Equal(t, 1000, recordsFor(o, cmpSpec{size: 100}), "-rate paces every run without @rate")
	assert.Equal(t, 30_000, recordsFor(o, cmpSpec{size: 100, rate: 3000}))
	o.rate, o.kafkaBytes = 0, 10
	assert.Equal(t, 4, recordsFor(o, cmpSpec{size: 1024}), "at least one record per producer")
	o.recordsSet, o.records = true, 123
	assert.Equal(t, 123, recordsFor(o, cmpSpec{size: 1024, rate: 5}))
}
