// Package clocktest is a settable clock for the tests of code that takes
// its time from a func() time.Time. Never linked into the gateway.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a time that moves only when the test says; safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass it where a func() time.Time is taken.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
