package kafkaproto

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
)

// The request series count under the same labels whether their child was
// cached or not, and keys a client makes up are not cached.
func TestRequestSeriesCached(t *testing.T) {
	reg := prometheus.NewRegistry()
	zero := func() float64 { return 0 }
	m := newMetrics(reg, zero, zero, zero)
	for range 3 {
		m.request(keyProduce, 9)
		m.request(keyProduce, -1)
		m.request(5000, 2)
		m.requestDone(keyProduce, time.Now())
		m.requestDone(-7, time.Now())
	}
	assert.Equal(t, 3.0, testutil.ToFloat64(m.requests.WithLabelValues("produce", "9")))
	assert.Equal(t, 3.0, testutil.ToFloat64(m.requests.WithLabelValues("produce", "unsupported")))
	assert.Equal(t, 3.0, testutil.ToFloat64(m.requests.WithLabelValues("unknown", "2")))
	assert.Equal(t, 2, testutil.CollectAndCount(m.requestDuration), "produce and unknown")

	cached := 0
	m.requestSeries.Range(func(any, any) bool { cached++; return true })
	assert.Equal(t, 2, cached, "produce v9 and unsupported; not the made-up key")
	cached = 0
	m.requestTimes.Range(func(any, any) bool { cached++; return true })
	assert.Equal(t, 1, cached)
}
