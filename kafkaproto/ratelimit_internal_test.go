package kafkaproto

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLogLimiter(t *testing.T) {
	t.Parallel()
	l := newLogLimiter(time.Second)
	t0 := time.Unix(1000, 0)
	ok, n := l.allow(t0)
	assert.True(t, ok)
	assert.Zero(t, n)
	for i := range 5 {
		ok, _ = l.allow(t0.Add(time.Duration(i) * 100 * time.Millisecond))
		assert.False(t, ok)
	}
	ok, n = l.allow(t0.Add(time.Second))
	assert.True(t, ok)
	assert.Equal(t, 5, n, "held-back lines are reported with the next")
	ok, n = l.allow(t0.Add(3 * time.Second))
	assert.True(t, ok)
	assert.Zero(t, n)
}
