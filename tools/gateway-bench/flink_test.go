package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadableLatencyIsReadMinusSent(t *testing.T) {
	sent := make([]int64, 100)
	seen := make([]int64, 100)
	for i := range sent {
		sent[i] = 1_000_000 + int64(i)*10
		seen[i] = sent[i] + int64(i+1)*1000 // row i readable i+1 ms after its produce
	}
	p50, p99 := readableLatency(sent, seen)
	assert.Equal(t, 51.0, p50)
	assert.Equal(t, 100.0, p99)
}

func TestFormatFlinkTableRatiosOfMedians(t *testing.T) {
	mk := func(target string, secs float64, path time.Duration, read float64) *flinkSample {
		return &flinkSample{target: target, records: 1_000_000, secs: secs, producers: time.Second, path: path,
			fluss: 2 * time.Second, ackP50: 10, readP50: read, readP99: 2 * read}
	}
	samples := []*flinkSample{
		mk(targetGateway, 10, 3*time.Second, 20), mk(targetFlink, 20, 9*time.Second, 200),
		mk(targetGateway, 12, 3*time.Second, 30), mk(targetFlink, 40, 9*time.Second, 300),
		mk(targetGateway, 11, 3*time.Second, 40), mk(targetFlink, 30, 9*time.Second, 100),
	}
	out := formatFlinkTable(samples, true)
	lines := strings.Split(out, "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, "| "+prefix) {
				return l
			}
		}
		t.Fatalf("no row %q in\n%s", prefix, out)
		return ""
	}
	// medians: 1e6/11 s against 1e6/30 s.
	assert.Equal(t, "| rows/s into Fluss | 90909 | 33333 | 2.73 |", find("rows/s"))
	// producers + path: 4 s against 10 s per million.
	assert.Equal(t, "| rows per CPU-second of producers + path | 250000 | 100000 | 2.50 |", find("rows per CPU"))
	assert.Equal(t, "| CPU s/M: all processes | 6.00 | 12.00 | 0.50 |", find("CPU s/M: all"))
	assert.Equal(t, "| produce → readable in Fluss p50 ms | 30.0 | 200.0 | 0.15 |", find("produce → readable in Fluss p50"))
	require.NotContains(t, formatFlinkTable(samples, false), "readable")
}
