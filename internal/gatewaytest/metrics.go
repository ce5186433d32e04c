package gatewaytest

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// MetricSet is a scrape of the Prometheus text format: series → value, a
// series written as the exposition format prints it,
// name{label="value",...} with sorted labels.
type MetricSet map[string]float64

// ParseMetrics reads the Prometheus text format.
func ParseMetrics(r io.Reader) (MetricSet, error) {
	m := make(MetricSet)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// Sum adds every series of the metric name whose labels include all of want
// (each `key="value"`); 0 when there is none.
func (m MetricSet) Sum(name string, want ...string) float64 {
	var total float64
	for series, v := range m {
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(labels, w) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// Has reports whether any series of the metric name exists.
func (m MetricSet) Has(name string) bool {
	for series := range m {
		if n, _, _ := strings.Cut(series, "{"); n == name {
			return true
		}
	}
	return false
}

// Series returns the labelled series of the metric name as "series value"
// lines, sorted.
func (m MetricSet) Series(name string) []string {
	var out []string
	for series, v := range m {
		if strings.HasPrefix(series, name+"{") {
			out = append(out, series+" "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	slices.Sort(out)
	return out
}
