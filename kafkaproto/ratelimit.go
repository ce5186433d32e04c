package kafkaproto

import (
	"sync"
	"time"
)

// logLimiter lets one log line through per interval and counts the ones it
// held back, for warnings a client can trigger at will.
type logLimiter struct {
	interval time.Duration

	// mu guards the fields below.
	mu         sync.Mutex
	next       time.Time
	suppressed int
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval}
}

// allow reports whether a line may be logged now and, if so, how many were
// held back since the last one.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.next, l.suppressed = now.Add(l.interval), 0
	return true, n
}
