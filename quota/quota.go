package quota

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits are the produce quotas in force, in bytes per second (0: no
// quota). An entity's quota is, first match wins: its principal's entry in
// Principals (shared by every client id of that principal, Kafka's
// /config/users/<user>), its client id's entry in ClientIDs (shared by
// every principal using that client id, Kafka's /config/clients/<id>), or
// ProducerByteRate for each (principal, client id) pair (Kafka's
// /config/users/<default>/clients/<default>). An entry of 0 exempts its
// entity from the default.
type Limits struct {
	ProducerByteRate int64
	Principals       map[string]int64
	ClientIDs        map[string]int64
}

// Validate reports a negative rate, naming it.
func (l Limits) Validate() error {
	var errs []error
	if l.ProducerByteRate < 0 {
		errs = append(errs, fmt.Errorf("producer_byte_rate %d is negative", l.ProducerByteRate))
	}
	for _, kind := range []struct {
		name string
		m    map[string]int64
	}{{"principal", l.Principals}, {"client id", l.ClientIDs}} {
		for _, k := range slices.Sorted(maps.Keys(kind.m)) {
			if v := kind.m[k]; v < 0 {
				errs = append(errs, fmt.Errorf("%s %q: producer_byte_rate %d is negative", kind.name, k, v))
			}
		}
	}
	return errors.Join(errs...)
}

// entity is who a rate is measured for: a principal alone, a client id
// alone, or both.
type entity struct {
	kind                entityKind
	principal, clientID string
}

type entityKind uint8

const (
	byPrincipal entityKind = iota
	byClientID
	byPair
)

// resolve is the entity principal and clientID are charged to and its
// quota; a zero quota means none.
func (l *Limits) resolve(principal, clientID string) (entity, int64) {
	if v, ok := l.Principals[principal]; ok {
		return entity{kind: byPrincipal, principal: principal}, v
	}
	if v, ok := l.ClientIDs[clientID]; ok {
		return entity{kind: byClientID, clientID: clientID}, v
	}
	return entity{kind: byPair, principal: principal, clientID: clientID}, l.ProducerByteRate
}

// state is one entity's rate.
type state struct {
	meter     meter
	throttled bool      // its last record was throttled
	logged    time.Time // when its throttling was last logged
}

// Quotas measures produce rates and computes throttle times; safe for
// concurrent use. Its Limits can be swapped at any time (Store).
type Quotas struct {
	cfg    Config
	now    func() time.Time
	log    *slog.Logger
	limits atomic.Pointer[Limits]

	bytes           *prometheus.CounterVec // principal
	throttleSeconds *prometheus.CounterVec // principal
	throttled       *prometheus.CounterVec // principal

	mu        sync.Mutex // guards the fields below
	states    map[entity]*state
	lastSweep time.Time
}

// Option sets a collaborator of Quotas.
type Option func(*Quotas)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(q *Quotas) { q.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(q *Quotas) { q.log = l } }

// New puts limits in force, with rates measured as cfg says (zero fields:
// DefaultConfig's), and registers the metrics with reg.
func New(cfg Config, limits Limits, reg prometheus.Registerer, opts ...Option) (*Quotas, error) {
	d := DefaultConfig()
	if cfg.Window == 0 {
		cfg.Window = d.Window
	}
	if cfg.Samples == 0 {
		cfg.Samples = d.Samples
	}
	if cfg.Window < time.Millisecond || cfg.Samples < 2 {
		return nil, fmt.Errorf("quota window %v and samples %d: at least 1ms and 2", cfg.Window, cfg.Samples)
	}
	q := &Quotas{cfg: cfg, now: time.Now, log: slog.New(slog.DiscardHandler), states: map[entity]*state{},
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_quota_produce_bytes_total",
			Help: "Record batch bytes of Produce requests charged to client quotas, by principal.",
		}, []string{"principal"}),
		throttleSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_quota_throttle_seconds_total",
			Help: "Throttle time given to Produce requests over their producer_byte_rate quota, by principal.",
		}, []string{"principal"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fluss_gateway_kafka_quota_throttled_requests_total",
			Help: "Produce requests throttled for exceeding their producer_byte_rate quota, by principal.",
		}, []string{"principal"}),
	}
	for _, o := range opts {
		o(q)
	}
	if err := q.Store(limits); err != nil {
		return nil, err
	}
	if err := registerAll(reg, q.bytes, q.throttleSeconds, q.throttled); err != nil {
		return nil, fmt.Errorf("quota metrics: %w", err)
	}
	return q, nil
}

func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Store puts limits in force from the next request on; rates measured so
// far are kept for the entities that remain.
func (q *Quotas) Store(limits Limits) error {
	if err := limits.Validate(); err != nil {
		return fmt.Errorf("quotas: %w", err)
	}
	// Copied, so that the caller's maps may change afterwards.
	limits.Principals, limits.ClientIDs = maps.Clone(limits.Principals), maps.Clone(limits.ClientIDs)
	q.limits.Store(&limits)
	return nil
}

// Limit is the quota principal with clientID is held to, in bytes per
// second (0: none).
func (q *Quotas) Limit(principal, clientID string) int64 {
	_, bound := q.limits.Load().resolve(principal, clientID)
	return bound
}

// RecordProduce charges bytes of record batches produced by principal with
// clientID to its quota and returns how long the client must be throttled
// (0: it is within its quota). The bytes count even when throttled, as in
// Kafka: the throttle brings the rate back to the quota. The strings may
// alias a request buffer: they are cloned when kept.
func (q *Quotas) RecordProduce(principal, clientID string, bytes int) time.Duration {
	q.bytes.WithLabelValues(principal).Add(float64(bytes))
	e, bound := q.limits.Load().resolve(principal, clientID)
	if bound <= 0 {
		return 0
	}
	now := q.now()
	d, started, rate := q.record(e, float64(bound), now, float64(bytes))
	if d <= 0 {
		return 0
	}
	q.throttled.WithLabelValues(principal).Inc()
	q.throttleSeconds.WithLabelValues(principal).Add(d.Seconds())
	if started {
		q.log.Info("client quota exceeded: throttling", slog.String("principal", principal), slog.String("client_id", clientID),
			slog.String("entity", e.String()), slog.Int64("producer_byte_rate", bound),
			slog.Int64("measured_byte_rate", int64(rate)), slog.Duration("throttle", d))
	}
	return d
}

// record adds bytes to e's rate and returns its throttle time, whether its
// throttling starts now (to be logged: at most once per span of the
// samples) and the rate measured.
func (q *Quotas) record(e entity, bound float64, now time.Time, bytes float64) (time.Duration, bool, float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	st := q.states[e]
	if st == nil {
		st = &state{}
		q.states[entity{kind: e.kind, principal: strings.Clone(e.principal), clientID: strings.Clone(e.clientID)}] = st
	}
	st.meter.record(q.cfg, now, bytes)
	rate, window := st.meter.rate(q.cfg, now)
	d := throttleTime(q.cfg, rate, bound, window)
	started := d > 0 && !st.throttled && now.Sub(st.logged) >= q.cfg.span()
	if started {
		st.logged = now
	}
	st.throttled = d > 0
	return d, started, rate
}

// sweep drops the entities whose samples have all expired, at most once
// per span: client ids are the clients' choice, so the map must not keep
// every one ever seen.
func (q *Quotas) sweep(now time.Time) {
	if now.Sub(q.lastSweep) < q.cfg.span() {
		return
	}
	q.lastSweep = now
	for e, st := range q.states {
		if st.meter.idle(q.cfg, now) {
			delete(q.states, e)
		}
	}
}

// entities is how many entities have a rate (tests).
func (q *Quotas) entities() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.states)
}

// String names the entity as Kafka's quota entities are written.
func (e entity) String() string {
	switch e.kind {
	case byPrincipal:
		return "user=" + e.principal
	case byClientID:
		return "client-id=" + e.clientID
	}
	return "user=" + e.principal + ",client-id=" + e.clientID
}
