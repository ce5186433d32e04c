package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/schemaregistry"
)

// gatewayMetrics are the metrics of the wiring itself; the components
// register their own (kafkaproto, the produce path, the writer).
type gatewayMetrics struct {
	reloads *prometheus.CounterVec
	routes  prometheus.Gauge
	// credentialReloads counts reloads of changed credentials files.
	credentialReloads *prometheus.CounterVec
}

func newGatewayMetrics(reg prometheus.Registerer) *gatewayMetrics {
	m := &gatewayMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_config_reloads_total",
			Help: "Configuration reloads by result (success or failure; a failed reload keeps the old routes).",
		}, []string{"result"}),
		routes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fluss_gateway_routes",
			Help: "Routes currently bound to their tables.",
		}),
	}
	m.credentialReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fluss_gateway_sasl_credentials_reloads_total",
		Help: "Reloads of a changed SASL credentials file by result (success or failure; a failed reload keeps the credentials in force).",
	}, []string{"result"})
	reg.MustRegister(m.reloads, m.routes, m.credentialReloads)
	return m
}

func result(ok bool) string {
	if ok {
		return "success"
	}
	return "failure"
}

func (m *gatewayMetrics) credentialsReloaded(ok bool) {
	m.credentialReloads.WithLabelValues(result(ok)).Inc()
}

func (m *gatewayMetrics) reloaded(ok bool) {
	m.reloads.WithLabelValues(result(ok)).Inc()
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
