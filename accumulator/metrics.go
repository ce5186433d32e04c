package accumulator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the accumulator's Prometheus collectors
// (fluss_gateway_accumulator_*, docs/metrics.md). State (bytes in use,
// waiters, incomplete batches) is read at scrape time.
type metrics struct {
	bufferFull prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, a *Accumulator) (*metrics, error) {
	m := &metrics{
		bufferFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_accumulator_buffer_full_total",
			Help: "Appends that failed because no buffer memory became free in time.",
		}),
	}
	cs := []prometheus.Collector{
		m.bufferFull,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_accumulator_buffer_bytes",
			Help: "Bytes of buffer memory held by incomplete batches.",
		}, func() float64 { return float64(a.mem.inUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_accumulator_buffer_limit_bytes",
			Help: "Configured buffer memory.",
		}, func() float64 { return float64(a.cfg.BufferMemory) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_accumulator_buffer_waiters",
			Help: "Appends waiting for buffer memory.",
		}, func() float64 { return float64(a.mem.waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_accumulator_incomplete_batches",
			Help: "Batches queued, in flight or awaiting retry.",
		}, func() float64 { return float64(a.Incomplete()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("accumulator: register metrics: %w", err)
		}
	}
	return m, nil
}
