package kafkaproto

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Kafka front's Prometheus metrics. Label values are bounded:
// API names from the advertised table, topics the Topics interface knows,
// codecs, and error names from errors.go.
type metrics struct {
	openConns atomic.Int64

	connsTotal      prometheus.Counter
	requests        *prometheus.CounterVec   // api, version
	requestDuration *prometheus.HistogramVec // api
	produceRecords  *prometheus.CounterVec   // topic
	produceBytes    *prometheus.CounterVec   // topic, codec
	produceErrors   *prometheus.CounterVec   // error
	duplicates      prometheus.Counter
	protocolErrors  *prometheus.CounterVec // reason
	authFailures    prometheus.Counter
	readBudgetWaits prometheus.Counter
	notReadyTotal   *prometheus.CounterVec // api
	authzFailures   *prometheus.CounterVec // operation
	throttleSeconds prometheus.Counter
	throttled       prometheus.Counter
	connsRefused    *prometheus.CounterVec // reason
	listenerFull    prometheus.Counter

	// requestSeries and requestTimes hold the children of the two
	// per-request series, looked up once per API key and version: with
	// producers that send a record or two per request, the label lookup
	// and the version's formatting were 2 % of the gateway's CPU. Keys
	// past cachedAPIKeys (client input) are looked up each time.
	requestSeries sync.Map // apiVersion → prometheus.Counter
	requestTimes  sync.Map // int16 → prometheus.Observer
}

// apiVersion is a request's API key and version (-1: unsupported).
type apiVersion struct{ key, version int16 }

// cachedAPIKeys bounds the cached request series: Kafka's API keys are
// below it, and a client's made-up keys and versions do not grow the
// caches.
const cachedAPIKeys = 128

func newMetrics(reg prometheus.Registerer, producerStates, readBudgetBytes, collectedBatches func() float64) *metrics {
	m := &metrics{
		connsTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_connections_total",
			Help: "Kafka client connections accepted.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_requests_total",
			Help: "Kafka requests received, by API and version.",
		}, []string{"api", "version"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fluss_gateway_kafka_request_duration_seconds",
			Help:    "Time from reading a Kafka request to writing its response, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"api"}),
		produceRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_records_total",
			Help: "Records handed to the sink (whether it accepted them or not), by topic.",
		}, []string{"topic"}),
		produceBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_batch_bytes_total",
			Help: "Record batch bytes on the wire handed to the sink (accepted or not), by topic and codec.",
		}, []string{"topic", "codec"}),
		produceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_partition_errors_total",
			Help: "Produce partition results with an error, by Kafka error name.",
		}, []string{"error"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_duplicate_batches_total",
			Help: "Idempotent batches recognised as retries and answered with the original result.",
		}),
		protocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_protocol_errors_total",
			Help: "Connections closed because of a protocol violation, by reason.",
		}, []string{"reason"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_sasl_failures_total",
			Help: "Failed SASL authentications.",
		}),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_connections_refused_total",
			Help: "Kafka client connections closed at accept because a connection limit was reached, by reason (per_ip).",
		}, []string{"reason"}),
		listenerFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_listener_full_total",
			Help: "Times the listener reached its max_connections and stopped accepting until a connection closed.",
		}),
		readBudgetWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_read_budget_waits_total",
			Help: "Requests that waited for the server-wide memory budget (Config.Memory or MaxReadBytes) before being read.",
		}),
		notReadyTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_not_ready_responses_total",
			Help: "Requests answered with a retriable error because the ready check failed, by API.",
		}, []string{"api"}),
		authzFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_authorization_failures_total",
			Help: "Topics refused to a principal by the authorizer, by operation.",
		}, []string{"operation"}),
		throttleSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_throttle_seconds_total",
			Help: "Throttle time given to clients in Produce responses.",
		}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_throttled_responses_total",
			Help: "Produce responses with a non-zero throttle time.",
		}),
	}
	reg.MustRegister(m.connsRefused, m.listenerFull, m.readBudgetWaits, m.notReadyTotal, m.authzFailures, m.throttleSeconds, m.throttled, m.connsTotal, m.requests, m.requestDuration, m.produceRecords, m.produceBytes,
		m.produceErrors, m.duplicates, m.protocolErrors, m.authFailures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_kafka_open_connections",
			Help: "Kafka client connections currently open.",
		}, func() float64 { return float64(m.openConns.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_kafka_producer_states",
			Help: "Idempotent (producer id, partition) sequence states held.",
		}, producerStates),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fluss_gateway_kafka_read_budget_bytes",
			Help: "Bytes this server holds of its memory budget (Config.Memory or MaxReadBytes): requests being read and handled, and the record batches decoded from them until the sink releases them.",
		}, readBudgetBytes),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_produce_batches_collected_total",
			Help: "Decoded record batches the sink dropped without releasing them, whose memory budget came back only when they were garbage-collected.",
		}, collectedBatches),
	)
	return m
}

// request counts a request; version -1 stands for any unsupported version.
func (m *metrics) request(key, version int16) {
	cached := key >= 0 && key < cachedAPIKeys && version >= -1 && version < cachedAPIKeys
	if cached {
		if c, ok := m.requestSeries.Load(apiVersion{key, version}); ok {
			c.(prometheus.Counter).Inc()
			return
		}
	}
	v := "unsupported"
	if version >= 0 {
		v = strconv.Itoa(int(version))
	}
	c := m.requests.WithLabelValues(apiName(key), v)
	if cached {
		m.requestSeries.Store(apiVersion{key, version}, c)
	}
	c.Inc()
}

func (m *metrics) requestDone(key int16, start time.Time) {
	d := time.Since(start).Seconds()
	if key < 0 || key >= cachedAPIKeys {
		m.requestDuration.WithLabelValues(apiName(key)).Observe(d)
		return
	}
	o, ok := m.requestTimes.Load(key)
	if !ok {
		o = m.requestDuration.WithLabelValues(apiName(key))
		m.requestTimes.Store(key, o)
	}
	o.(prometheus.Observer).Observe(d)
}

func (m *metrics) produced(topic string, codec Codec, records, wireBytes int) {
	m.produceRecords.WithLabelValues(topic).Add(float64(records))
	m.produceBytes.WithLabelValues(topic, codec.String()).Add(float64(wireBytes))
}

func (m *metrics) produceError(code int16) {
	m.produceErrors.WithLabelValues(errorName(code)).Inc()
}

func (m *metrics) protocolError(reason string) {
	m.protocolErrors.WithLabelValues(reason).Inc()
}

func (m *metrics) notReady(key int16) {
	m.notReadyTotal.WithLabelValues(apiName(key)).Inc()
}

func (m *metrics) authorizationFailure(op Operation) {
	m.authzFailures.WithLabelValues(op.String()).Inc()
}

func (m *metrics) throttle(d time.Duration) {
	m.throttled.Inc()
	m.throttleSeconds.Add(d.Seconds())
}
