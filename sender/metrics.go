package sender

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fluss-kafka/gateway/accumulator"
)

// The sender's metrics are fluss_gateway_sender_* (docs/metrics.md); the
// accumulator has its own.

// metrics are the sender's Prometheus collectors. Per-table children
// are resolved once per table (loop-owned cache).
type metrics struct {
	batches      *prometheus.CounterVec
	records      *prometheus.CounterVec
	bytes        *prometheus.CounterVec
	fill         *prometheus.HistogramVec
	batchRecords *prometheus.HistogramVec
	tableLatency *prometheus.HistogramVec
	retries      *prometheus.CounterVec
	errors       *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	writerResets prometheus.Counter
	kvPressure   *prometheus.GaugeVec
	kvThrottle   *prometheus.CounterVec
	sharedEntry  *prometheus.CounterVec

	tables  map[int64]*tableMetrics // loop-owned
	servers map[serverAPI]prometheus.Observer
}

type serverAPI struct {
	server int32
	kv     bool
}

type tableMetrics struct {
	name    string
	batches prometheus.Counter
	records prometheus.Counter
	bytes   prometheus.Counter
	fill    prometheus.Observer
	recs    prometheus.Observer
	latency prometheus.Observer
	retries prometheus.Counter
	errs    *prometheus.CounterVec
	codes   map[int32]prometheus.Counter

	kvPressure prometheus.Gauge
	kvThrottle prometheus.Counter
	// sharedEntry counts batches sent in a records entry with others.
	sharedEntry prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, s *Sender) (*metrics, error) {
	m := &metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_batches_total",
			Help: "Batches acknowledged by Fluss, per table.",
		}, []string{"table"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_records_total",
			Help: "Records acknowledged by Fluss, per table.",
		}, []string{"table"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_batch_bytes_total",
			Help: "Estimated bytes of acknowledged batches, per table.",
		}, []string{"table"}),
		fill: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fluss_gateway_sender_batch_fill_ratio",
			Help:    "Estimated batch size over the configured batch size, per table.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.5},
		}, []string{"table"}),
		batchRecords: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fluss_gateway_sender_batch_records",
			Help:    "Records per acknowledged batch, per table.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}, []string{"table"}),
		tableLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fluss_gateway_sender_table_request_duration_seconds",
			Help:    "Write request latency per table (one request carries one table's batches for one tablet server).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"table"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_retries_total",
			Help: "Batches re-queued for a retry, per table.",
		}, []string{"table"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_errors_total",
			Help: "Failed batch attempts per table and Fluss error code (0: not a Fluss error).",
		}, []string{"table", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fluss_gateway_sender_request_duration_seconds",
			Help:    "Write request latency per tablet server and API.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"tablet_server", "api"}),
		writerResets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_writer_resets_total",
			Help: "Writer id resets after a fatal sequence error or an unknown outcome.",
		}),
		kvPressure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fluss_gateway_sender_kv_pressure",
			Help: "Last KV storage pressure a tablet server reported for a primary-key table (0 none, up to 1; Fluss 1.0).",
		}, []string{"table"}),
		kvThrottle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_kv_throttle_seconds_total",
			Help: "Time buckets of a primary-key table were held back for KV storage pressure.",
		}, []string{"table"}),
		sharedEntry: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_sender_shared_entry_batches_total",
			Help: "Sealed batches answered in a bucket's records entry shared with other fresh sealed batches (exactly-once writes of several producers or batches sent together).",
		}, []string{"table"}),
		tables:  make(map[int64]*tableMetrics),
		servers: make(map[serverAPI]prometheus.Observer),
	}
	cs := []prometheus.Collector{
		m.batches, m.records, m.bytes, m.fill, m.batchRecords, m.tableLatency, m.retries, m.errors, m.latency, m.writerResets,
		m.kvPressure, m.kvThrottle, m.sharedEntry,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_sender_inflight_requests",
			Help: "Write requests sent and not yet answered.",
		}, func() float64 { return float64(s.inflightReqs.Load()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("sender: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) table(t *accumulator.Table) *tableMetrics {
	tm := m.tables[t.ID()]
	if tm == nil {
		name := t.Path().String()
		tm = &tableMetrics{
			name:    name,
			batches: m.batches.WithLabelValues(name),
			records: m.records.WithLabelValues(name),
			bytes:   m.bytes.WithLabelValues(name),
			fill:    m.fill.WithLabelValues(name),
			recs:    m.batchRecords.WithLabelValues(name),
			latency: m.tableLatency.WithLabelValues(name),
			retries: m.retries.WithLabelValues(name),
			errs:    m.errors,
			codes:   make(map[int32]prometheus.Counter),

			kvPressure: m.kvPressure.WithLabelValues(name),
			kvThrottle: m.kvThrottle.WithLabelValues(name),

			sharedEntry: m.sharedEntry.WithLabelValues(name),
		}
		m.tables[t.ID()] = tm
	}
	return tm
}

func (m *metrics) requestDone(server int32, kv bool, d time.Duration) {
	k := serverAPI{server, kv}
	o := m.servers[k]
	if o == nil {
		api := "produce_log"
		if kv {
			api = "put_kv"
		}
		o = m.latency.WithLabelValues(strconv.Itoa(int(server)), api)
		m.servers[k] = o
	}
	o.Observe(d.Seconds())
}

func (tm *tableMetrics) batchSent(b *accumulator.Batch, batchSize int) {
	tm.batches.Inc()
	tm.records.Add(float64(b.Records()))
	tm.bytes.Add(float64(b.Estimated()))
	tm.fill.Observe(float64(b.Estimated()) / float64(batchSize))
	tm.recs.Observe(float64(b.Records()))
}

// pressure records a KV storage-pressure report and the hold-back it caused.
func (tm *tableMetrics) pressure(p float64, d time.Duration) {
	tm.kvPressure.Set(p)
	tm.kvThrottle.Add(d.Seconds())
}

func (tm *tableMetrics) errorCode(code int32) {
	c := tm.codes[code]
	if c == nil {
		c = tm.errs.WithLabelValues(tm.name, strconv.Itoa(int(code)))
		tm.codes[code] = c
	}
	c.Inc()
}

// retriesTotal sums the retry counters (for tests and logs).
func (m *metrics) retriesTotal() float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { m.retries.Collect(ch); close(ch) }()
	var sum float64
	for mt := range ch {
		var pm dto.Metric
		if err := mt.Write(&pm); err == nil && pm.Counter != nil {
			sum += pm.Counter.GetValue()
		}
	}
	return sum
}
