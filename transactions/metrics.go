package transactions

import (
	"github.com/prometheus/client_golang/prometheus"
)

// txnMetrics are the transactions' metrics (docs/metrics.md).
type txnMetrics struct {
	outcomes       *prometheus.CounterVec
	stagedBatches  prometheus.Counter
	stagedBytes    prometheus.Counter
	appliedRecords prometheus.Counter
	apply          prometheus.Histogram
}

func newTxnMetrics(reg prometheus.Registerer, open func() float64) (*txnMetrics, error) {
	m := &txnMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_transactions_total",
			Help: "Transactions ended on this instance, by outcome: commit (applied to the tables), abort (the producer's), timeout (aborted past its transaction.timeout.ms), fenced (aborted because a new producer with the same transactional id started).",
		}, []string{"outcome"}),
		stagedBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_transaction_staged_batches_total",
			Help: "Kafka batches of open transactions staged in gateway.kafka_txn_staging by this instance.",
		}),
		stagedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_transaction_staged_bytes_total",
			Help: "Bytes of the records staged in gateway.kafka_txn_staging by this instance, as counted against kafka.transaction_max_bytes (uncompressed; keys, values and headers plus a bound of their framing).",
		}),
		appliedRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_transaction_applied_records_total",
			Help: "Records of committed transactions this instance wrote to their tables (a repeated apply after a crash counts again; the exactly-once path writes them once).",
		}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fluss_gateway_transaction_apply_duration_seconds",
			Help:    "Time to apply a committed transaction: read its batches back from the staging table and write them to their tables; EndTxn(commit) is answered after it.",
			Buckets: prometheus.ExponentialBuckets(0.002, 2, 14),
		}),
	}
	openGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fluss_gateway_transactions_open",
		Help: "Transactions open on this instance: partitions added here and no EndTxn answered here yet.",
	}, open)
	for _, o := range []string{"commit", "abort", "timeout", "fenced"} {
		m.outcomes.WithLabelValues(o) // every outcome's series from the start
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.stagedBatches, m.stagedBytes, m.appliedRecords, m.apply, openGauge} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
