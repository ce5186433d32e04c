package gateway

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/schemaregistry"
)

// gatewayMetrics are the metrics of the wiring itself; the components
// register their own (kafkaproto, writer).
type gatewayMetrics struct {
	routeRecords   *prometheus.CounterVec
	routeRejected  *prometheus.CounterVec
	routeDLQ       *prometheus.CounterVec
	routeBusy      *prometheus.CounterVec
	routeLatency   *prometheus.HistogramVec
	reloads        *prometheus.CounterVec
	registryDown   *prometheus.CounterVec
	columnsAdded   *prometheus.CounterVec
	fieldsNotAdded *prometheus.CounterVec
	routes         prometheus.Gauge
}

func newGatewayMetrics(reg prometheus.Registerer) *gatewayMetrics {
	m := &gatewayMetrics{
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
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_config_reloads_total",
			Help: "Configuration reloads by result (success or failure; a failed reload keeps the old routes).",
		}, []string{"result"}),
		routes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fluss_gateway_routes",
			Help: "Routes currently bound to their tables.",
		}),
	}
	reg.MustRegister(m.routeRecords, m.routeRejected, m.routeDLQ, m.routeLatency, m.reloads, m.registryDown, m.routes, m.routeBusy, m.columnsAdded, m.fieldsNotAdded)
	return m
}

func (m *gatewayMetrics) tableBusy(route string) {
	m.routeBusy.WithLabelValues(route).Inc()
}

func (m *gatewayMetrics) recordsIn(route string, n int) {
	m.routeRecords.WithLabelValues(route).Add(float64(n))
}

// produceDone returns the observer of a route's produce latency.
func (m *gatewayMetrics) produceDone(route string) func(time.Duration) {
	o := m.routeLatency.WithLabelValues(route)
	return func(d time.Duration) { o.Observe(d.Seconds()) }
}

func (m *gatewayMetrics) rejected(route string, n int) {
	m.routeRejected.WithLabelValues(route).Add(float64(n))
}

func (m *gatewayMetrics) deadLettered(route string) {
	m.routeDLQ.WithLabelValues(route).Inc()
}

func (m *gatewayMetrics) reloaded(ok bool) {
	if ok {
		m.reloads.WithLabelValues("success").Inc()
	} else {
		m.reloads.WithLabelValues("failure").Inc()
	}
}

func (m *gatewayMetrics) registryUnavailable(route string) {
	m.registryDown.WithLabelValues(route).Inc()
}

// registerRegistryStats exports the schema-registry client's counters.
func registerRegistryStats(reg prometheus.Registerer, c *schemaregistry.Client) {
	counter := func(name, help string, v func(schemaregistry.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(c.Stats())) })
	}
	reg.MustRegister(
		counter("fluss_gateway_schema_registry_lookups_total", "Writer-schema lookups (by id, GUID, globalId or contentId).",
			func(s schemaregistry.Stats) uint64 { return s.Lookups }),
		counter("fluss_gateway_schema_registry_cache_hits_total", "Lookups answered from the schema cache.",
			func(s schemaregistry.Stats) uint64 { return s.CacheHits }),
		counter("fluss_gateway_schema_registry_fetches_total", "Schema fetches from the registry (one per id, however many ask at once).",
			func(s schemaregistry.Stats) uint64 { return s.Fetches }),
		counter("fluss_gateway_schema_registry_unknown_total", "Fetches the registry answered with 'not found' (those records are bad).",
			func(s schemaregistry.Stats) uint64 { return s.FetchUnknown }),
		counter("fluss_gateway_schema_registry_unavailable_total", "Fetches that failed because the registry could not be reached or failed (retriable).",
			func(s schemaregistry.Stats) uint64 { return s.FetchUnavailable }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fluss_gateway_schema_registry_cached_schemas", Help: "Schemas in the cache."},
			func() float64 { return float64(c.Stats().CachedSchemas) }),
	)
}
