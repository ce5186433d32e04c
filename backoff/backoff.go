package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Policy is a capped doubling delay: attempt n waits Initial·2ⁿ, at most
// Max, then scaled by the jitter. The zero Policy waits nothing.
type Policy struct {
	// Initial is the first delay. It is capped by Max too.
	Initial time.Duration
	// Max caps the doubled delay; the jitter is applied after the cap, so a
	// jittered delay may exceed Max by the jitter's fraction.
	Max time.Duration
	// Jitter spreads each delay uniformly over [1-Jitter, 1+Jitter) of
	// itself, so that callers that failed together do not retry together;
	// 0 for none.
	Jitter float64
	// Rand returns a uniform number in [0, 1) for the jitter; nil uses
	// math/rand/v2's. A seeded source makes the delays repeatable (tests).
	Rand func() float64
}

// maxDoublings is enough doublings for any positive delay to reach any
// cap a time.Duration can hold.
const maxDoublings = 63

// Delay is the delay before retry number attempt, counted from 0.
func (p Policy) Delay(attempt int) time.Duration {
	d := max(0, min(p.Initial, p.Max))
	for range min(attempt, maxDoublings) {
		if d == 0 {
			break // zero never grows: do not spin through a large attempt count
		}
		if d >= p.Max-d { // 2d ≥ Max, written so that 2d cannot overflow
			d = p.Max
			break
		}
		d *= 2
	}
	if p.Jitter <= 0 {
		return d
	}
	// Drawn even for a zero delay, so that a seeded source gives the same
	// sequence whatever the delays are.
	u := rand.Float64
	if p.Rand != nil {
		u = p.Rand
	}
	scaled := float64(d) * (1 - p.Jitter + 2*p.Jitter*u())
	if scaled >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(scaled)
}

// Sequence returns a retry loop's delays under p, starting at Initial.
func (p Policy) Sequence() Sequence {
	return Sequence{policy: p}
}

// Sequence is one retry loop's back-off: each failure's Next is twice the
// one before (up to the cap), and Reset after a success starts again from
// Initial. It is not safe for concurrent use; its owner guards it.
type Sequence struct {
	policy   Policy
	failures int
}

// Next returns the delay after one more failure.
func (s *Sequence) Next() time.Duration {
	d := s.policy.Delay(s.failures)
	if s.failures < maxDoublings { // past it the delay no longer changes
		s.failures++
	}
	return d
}

// Reset starts the sequence again from Initial, after a success.
func (s *Sequence) Reset() {
	s.failures = 0
}

// Sleep waits d, or less if ctx ends first. It reports whether the whole d
// passed, i.e. false when the caller should stop retrying.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
