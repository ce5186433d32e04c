package outage

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Log is the one way the gateway logs a dependency that keeps
// failing (Fluss writer ids, the coordinator, route loading): a state
// change is logged once, then a summary at most every interval with the
// number of failures since the previous line, and once more when it
// recovers. Under load a failing dependency fails thousands of requests a
// second; a line per failure would bury the real cause.
//
// Causes are logged by their first line only and cut to maxCauseLen: a
// Fluss server error message may carry a whole Java stack trace.
type Log struct {
	log      *slog.Logger
	down     string // WARN message when the outage starts
	up       string // INFO message when it ends
	interval time.Duration
	now      func() time.Time

	mu       sync.Mutex // guards the fields below
	failing  bool
	since    time.Time // first failure of the outage
	lastLine time.Time // last WARN line
	unlogged int       // failures since the last WARN line
	total    int       // failures in this outage
}

// DefaultInterval spaces the summaries of an outage: often enough
// that an operator sees it is still going on, rarely enough to be read.
const DefaultInterval = 30 * time.Second

// maxCauseLen bounds the cause logged with an outage line.
const maxCauseLen = 300

func New(log *slog.Logger, down, up string, interval time.Duration, now func() time.Time) *Log {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if now == nil {
		now = time.Now
	}
	return &Log{log: log, down: down, up: up, interval: interval, now: now}
}

// Fail records one failure and logs it when it starts an outage or when
// the last line is older than the interval.
func (o *Log) Fail(err error, attrs ...slog.Attr) {
	o.mu.Lock()
	now := o.now()
	o.total++
	o.unlogged++
	var (
		msg     string
		logAttr []slog.Attr
	)
	switch {
	case !o.failing:
		o.failing, o.since = true, now
		msg = o.down
	case now.Sub(o.lastLine) >= o.interval:
		msg = o.down + " (still)"
		logAttr = append(logAttr, slog.Int("failures", o.unlogged), slog.Duration("for", now.Sub(o.since).Round(time.Second)))
	default:
		o.mu.Unlock()
		return
	}
	o.lastLine, o.unlogged = now, 0
	o.mu.Unlock()
	logAttr = append(logAttr, slog.String("err", cause(err)))
	o.log.LogAttrs(context.Background(), slog.LevelWarn, msg, append(logAttr, attrs...)...)
}

// OK records a success; it logs the recovery when an outage was going on.
func (o *Log) OK() {
	o.mu.Lock()
	if !o.failing {
		o.mu.Unlock()
		return
	}
	d, n := o.now().Sub(o.since), o.total
	o.failing, o.total, o.unlogged = false, 0, 0
	o.mu.Unlock()
	o.log.Info(o.up, slog.Duration("after", d.Round(time.Millisecond)), slog.Int("failures", n))
}

// Failing reports whether an outage is going on.
func (o *Log) Failing() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failing
}

// cause is err's text for a log line: its first line, bounded.
func cause(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if len(s) > maxCauseLen {
		s = strings.ToValidUTF8(s[:maxCauseLen], "") + " …"
	}
	return s
}
