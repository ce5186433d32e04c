// Package metrictest reads a metric's value back from a Prometheus
// registry, for the product packages' tests. Never linked into the gateway.
package metrictest

import (
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Value is the value of the counter name in g whose labels are the
// given name, value pairs (0 when there is none).
func Value(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
