package quota

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/clocktest"
	"github.com/fluss-kafka/gateway/internal/metrictest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newQuotas(t *testing.T, limits Limits, opts ...Option) (*Quotas, *clocktest.Clock, *prometheus.Registry) {
	t.Helper()
	clock := clocktest.New(t0)
	reg := prometheus.NewPedanticRegistry()
	q, err := New(Config{}, limits, reg, append([]Option{WithClock(clock.Now)}, opts...)...)
	require.NoError(t, err)
	return q, clock, reg
}

// TestThrottleTimeAsKafka: the rate of a new entity is measured over at
// least 10 windows (samples - 1), and the throttle time is (rate - quota) /
// quota * window, capped at 11 s, as Kafka's ClientQuotaManager computes it.
func TestThrottleTimeAsKafka(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		bytes int
		want  time.Duration
	}{
		{"within the quota", 500, 0},                // 50 B/s
		{"at the quota", 1000, 0},                   // 100 B/s
		{"twice the quota", 2000, 10 * time.Second}, // 200 B/s: (200-100)/100 * 10 s
		{"1.5 times", 1500, 5 * time.Second},        // (150-100)/100 * 10 s
		{"capped", 1 << 20, 11 * time.Second},
	} {
		q, _, _ := newQuotas(t, Limits{ProducerByteRate: 100})
		assert.Equal(t, tc.want, q.RecordProduce("User:a", "c", tc.bytes), tc.name)
	}
}

// TestWindowSlides: samples expire after 11 windows, so a burst stops
// counting then; until then the elapsed time since the oldest sample is
// the window.
func TestWindowSlides(t *testing.T) {
	t.Parallel()
	q, clock, _ := newQuotas(t, Limits{ProducerByteRate: 100})
	require.Equal(t, time.Duration(0), q.RecordProduce("User:a", "c", 1000))
	clock.Advance(10500 * time.Millisecond)
	// 1001 bytes over 10.5 s: 95.3 B/s, within the quota.
	assert.Equal(t, time.Duration(0), q.RecordProduce("User:a", "c", 1))
	clock.Advance(time.Second)
	// The first sample (1000 bytes) expired: 1 + 1000 bytes over 10 s (the
	// oldest sample opened 1 s ago, and at least 10 windows count), 100.1
	// B/s: (100.1 - 100) / 100 * 10 s.
	assert.Equal(t, 10*time.Millisecond, q.RecordProduce("User:a", "c", 1000))
}

// TestSteadyRateHeldAtQuota: a client that sends whenever its throttle
// time has passed gets the quota over a long run, within 10% (samples
// expiring in turn let it overshoot a little, as with Kafka); its first 10
// windows' worth comes as a burst, left out.
func TestSteadyRateHeldAtQuota(t *testing.T) {
	t.Parallel()
	const quota, batch = 10000, 700
	q, clock, _ := newQuotas(t, Limits{ProducerByteRate: quota})
	var sent int
	for clock.Now().Sub(t0) < 20*time.Second { // past the burst
		d := q.RecordProduce("User:a", "c", batch)
		clock.Advance(max(d, 10*time.Millisecond))
	}
	start := clock.Now()
	for clock.Now().Sub(start) < 180*time.Second {
		d := q.RecordProduce("User:a", "c", batch)
		sent += batch
		clock.Advance(max(d, 10*time.Millisecond))
	}
	got := float64(sent) / clock.Now().Sub(start).Seconds()
	assert.InEpsilon(t, quota, got, 0.1, "measured %f B/s", got)
}

// TestEntities: a principal's quota is shared by its client ids, a client
// id's by its principals, and the default applies to each (principal,
// client id) pair alone; an override of 0 exempts its entity.
func TestEntities(t *testing.T) {
	t.Parallel()
	q, _, _ := newQuotas(t, Limits{
		ProducerByteRate: 100,
		Principals:       map[string]int64{"User:alice": 100, "User:root": 0},
		ClientIDs:        map[string]int64{"bulk": 100},
	})
	over := 1500 // 150 B/s alone
	half := 750
	// alice's two clients share her quota.
	assert.Zero(t, q.RecordProduce("User:alice", "a1", half))
	assert.Positive(t, q.RecordProduce("User:alice", "a2", half+1), "alice's quota is shared by her client ids")
	// bulk is shared by bob and carol, but alice's principal quota wins.
	assert.Zero(t, q.RecordProduce("User:bob", "bulk", half))
	assert.Positive(t, q.RecordProduce("User:carol", "bulk", half+1), "bulk's quota is shared by its principals")
	// The default: each pair on its own.
	assert.Zero(t, q.RecordProduce("User:bob", "x", half))
	assert.Zero(t, q.RecordProduce("User:bob", "y", half))
	assert.Zero(t, q.RecordProduce("User:carol", "x", half))
	// root is exempt.
	assert.Zero(t, q.RecordProduce("User:root", "bulk", 1<<30))
	assert.Positive(t, q.RecordProduce("User:dave", "z", over))

	assert.Equal(t, int64(100), q.Limit("User:alice", "bulk"))
	assert.Equal(t, int64(0), q.Limit("User:root", "bulk"))
}

// TestStoreTakesEffect: limits swapped by Store apply to the next
// request; a removed quota stops throttling.
func TestStoreTakesEffect(t *testing.T) {
	t.Parallel()
	q, clock, _ := newQuotas(t, Limits{})
	assert.Zero(t, q.RecordProduce("User:a", "c", 1<<20), "no quota")
	require.NoError(t, q.Store(Limits{Principals: map[string]int64{"User:a": 1000}}))
	clock.Advance(time.Second)
	assert.Positive(t, q.RecordProduce("User:a", "c", 20000))
	require.NoError(t, q.Store(Limits{Principals: map[string]int64{"User:a": 1 << 20}}))
	assert.Zero(t, q.RecordProduce("User:a", "c", 1000), "a raised quota applies at once")
	require.NoError(t, q.Store(Limits{}))
	assert.Zero(t, q.RecordProduce("User:a", "c", 1<<20))
}

// TestValidate: negative rates are refused, naming the entry.
func TestValidate(t *testing.T) {
	t.Parallel()
	err := Limits{ProducerByteRate: -1, Principals: map[string]int64{"User:a": -2}, ClientIDs: map[string]int64{"c": -3}}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "producer_byte_rate -1 is negative")
	assert.Contains(t, err.Error(), `principal "User:a": producer_byte_rate -2 is negative`)
	assert.Contains(t, err.Error(), `client id "c": producer_byte_rate -3 is negative`)
	_, err = New(Config{}, Limits{ProducerByteRate: -1}, prometheus.NewRegistry())
	require.Error(t, err)
	_, err = New(Config{Samples: 1}, Limits{}, prometheus.NewRegistry())
	require.Error(t, err)
}

// TestMetricsAndLog: bytes and throttle time are counted by principal, and
// the start of an entity's throttling is logged once, not per request.
func TestMetricsAndLog(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	q, clock, reg := newQuotas(t, Limits{ProducerByteRate: 100}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	assert.Zero(t, q.RecordProduce("User:b", "c", 10))
	d1 := q.RecordProduce("User:a", "c", 2000)
	clock.Advance(time.Second)
	d2 := q.RecordProduce("User:a", "c", 100)
	require.Positive(t, d1)
	require.Positive(t, d2)
	assert.Equal(t, 2100.0, metrictest.Value(t, reg, "fluss_gateway_kafka_quota_produce_bytes_total", "principal", "User:a"))
	assert.Equal(t, 10.0, metrictest.Value(t, reg, "fluss_gateway_kafka_quota_produce_bytes_total", "principal", "User:b"))
	assert.Equal(t, 2.0, metrictest.Value(t, reg, "fluss_gateway_kafka_quota_throttled_requests_total", "principal", "User:a"))
	assert.InDelta(t, (d1 + d2).Seconds(), metrictest.Value(t, reg, "fluss_gateway_kafka_quota_throttle_seconds_total", "principal", "User:a"), 1e-9)
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("client quota exceeded")), logs.String())
	assert.Contains(t, logs.String(), `entity="user=User:a,client-id=c"`)
}

// TestIdleEntitiesDropped: entities whose samples have all expired are
// forgotten, so that client ids do not accumulate.
func TestIdleEntitiesDropped(t *testing.T) {
	t.Parallel()
	q, clock, _ := newQuotas(t, Limits{ProducerByteRate: 100})
	for _, id := range []string{"a", "b", "c"} {
		q.RecordProduce("User:x", id, 1)
	}
	require.Equal(t, 3, q.entities())
	clock.Advance(11 * time.Second)
	q.RecordProduce("User:x", "d", 1)
	assert.Equal(t, 1, q.entities())
}
