package produce

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the produce path's metrics, per route.
type Metrics struct {
	routeRecords   *prometheus.CounterVec
	routeRejected  *prometheus.CounterVec
	routeDLQ       *prometheus.CounterVec
	routeBusy      *prometheus.CounterVec
	routeLatency   *prometheus.HistogramVec
	registryDown   *prometheus.CounterVec
	columnsAdded   *prometheus.CounterVec
	fieldsNotAdded *prometheus.CounterVec
}

// NewMetrics registers the produce path's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		routeRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_records_total",
			Help: "Kafka records accepted by a route and handed to the write path (dead-lettered ones included).",
		}, []string{"route"}),
		routeRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_rejected_records_total",
			Help: "Kafka records in batches refused with INVALID_RECORD because a record could not be converted (reject mode).",
		}, []string{"route"}),
		routeDLQ: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_dead_letter_records_total",
			Help: "Kafka records that could not be converted and were written to the route's dead-letter table (dlq mode).",
		}, []string{"route"}),
		routeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fluss_gateway_route_produce_duration_seconds",
			Help:    "Time from handing a Kafka batch to the write path until Fluss acknowledged all its records (acks 1/all), per route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"route"}),
		registryDown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_schema_registry_unavailable_total",
			Help: "Kafka batches refused with a retriable error because the schema registry could not be reached for a writer schema (nothing of them written; the producer retries).",
		}, []string{"route"}),
		columnsAdded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_columns_added_total",
			Help: "Columns this instance added to a route's table because a writer schema had fields the table lacked (follow_schema.add_columns).",
		}, []string{"route"}),
		fieldsNotAdded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_writer_fields_not_added_total",
			Help: "Fields of writer schemas that no column was made for, because Fluss cannot add them (a field new inside a ROW column, or of a type no column holds); counted once per field and writer schema. Their values are left out (unknown_fields: ignore) or their records refused (reject).",
		}, []string{"route"}),
		routeBusy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_route_table_busy_batches_total",
			Help: "Kafka batches refused with REQUEST_TIMED_OUT (retriable, nothing written) because the batches of their table waiting for Fluss already held the table's share of the memory budget.",
		}, []string{"route"}),
	}
	reg.MustRegister(m.routeRecords, m.routeRejected, m.routeDLQ, m.routeLatency, m.registryDown, m.routeBusy, m.columnsAdded, m.fieldsNotAdded)
	return m
}

func (m *Metrics) tableBusy(route string) {
	m.routeBusy.WithLabelValues(route).Inc()
}

func (m *Metrics) recordsIn(route string, n int) {
	m.routeRecords.WithLabelValues(route).Add(float64(n))
}

// produceDone returns the observer of a route's produce latency.
func (m *Metrics) produceDone(route string) func(time.Duration) {
	o := m.routeLatency.WithLabelValues(route)
	return func(d time.Duration) { o.Observe(d.Seconds()) }
}

func (m *Metrics) rejected(route string, n int) {
	m.routeRejected.WithLabelValues(route).Add(float64(n))
}

func (m *Metrics) deadLettered(route string) {
	m.routeDLQ.WithLabelValues(route).Inc()
}

func (m *Metrics) registryUnavailable(route string) {
	m.registryDown.WithLabelValues(route).Inc()
}

// ColumnsAdded counts n columns added to route's table for a writer schema.
func (m *Metrics) ColumnsAdded(route string, n int) {
	m.columnsAdded.WithLabelValues(route).Add(float64(n))
}

// FieldsNotAdded counts n writer-schema fields no column was made for.
func (m *Metrics) FieldsNotAdded(route string, n int) {
	m.fieldsNotAdded.WithLabelValues(route).Add(float64(n))
}
