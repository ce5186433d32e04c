package exactlyonce

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the exactly-once path's metrics. A nil *metrics records
// nothing (a bridge whose metrics were not registered).
type metrics struct {
	loads     *prometheus.CounterVec
	writerIDs *prometheus.CounterVec
	window    prometheus.Counter
	recovered prometheus.Counter
	commit    prometheus.Histogram
	// committedBatches over commit's count is how many Kafka batches one
	// state write covers.
	committedBatches prometheus.Counter
	// hedged counts commits also written to another key slot because
	// theirs stalled (producerstate's slots).
	hedged prometheus.Counter
}

func newEOMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_exactly_once_state_loads_total",
			Help: "Producer-partition states looked up in the producer-state table on first contact (result found, missing or error).",
		}, []string{"result"}),
		writerIDs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_exactly_once_writer_ids_total",
			Help: "Fluss writer ids taken for producer-partitions, by reason (new, route_changed, epoch_bump, failed_write, too_many_targets).",
		}, []string{"reason"}),
		window: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_exactly_once_window_answers_total",
			Help: "Re-sent Kafka batches answered from the producer's window (committed, or still in flight here) without writing.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_exactly_once_recoveries_total",
			Help: "Producer-partition states dropped after a failed write, to be reloaded from Fluss on the producer's retry.",
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fluss_gateway_exactly_once_commit_duration_seconds",
			Help:    "Time from the start of a producer-state commit to its acknowledgement; one commit covers every batch of its producer-partition written meanwhile.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		committedBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_exactly_once_committed_batches_total",
			Help: "Kafka batches whose producer-state commit was acknowledged or failed; over the commit histogram's count, the batches one state write covers.",
		}),
		hedged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_gateway_exactly_once_commits_hedged_total",
			Help: "Producer-state commits also written under another key slot because theirs was not acknowledged within a second (a tablet server dead, paused or cut off).",
		}),
	}
	for _, c := range []prometheus.Collector{m.loads, m.writerIDs, m.window, m.recovered, m.commit, m.committedBatches, m.hedged} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) load(result string) {
	if m != nil {
		m.loads.WithLabelValues(result).Inc()
	}
}

func (m *metrics) writerID(reason string) {
	if m != nil {
		m.writerIDs.WithLabelValues(reason).Inc()
	}
}

func (m *metrics) windowAnswer() {
	if m != nil {
		m.window.Inc()
	}
}

func (m *metrics) recovery() {
	if m != nil {
		m.recovered.Inc()
	}
}

func (m *metrics) committed(d time.Duration, batches int) {
	if m != nil {
		m.commit.Observe(d.Seconds())
		m.committedBatches.Add(float64(batches))
	}
}

// Register registers the exactly-once metrics with reg; until it is called
// they are not recorded.
func (e *Writer) Register(reg prometheus.Registerer) error {
	m, err := newEOMetrics(reg)
	if err != nil {
		return err
	}
	e.m = m
	if h, ok := e.store.(interface{ OnHedge(func()) }); ok {
		h.OnHedge(m.hedged.Inc)
	}
	return nil
}
