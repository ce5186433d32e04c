package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = time.Millisecond

// delays is the first n delays of p by attempt number.
func delays(p Policy, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = p.Delay(i)
	}
	return out
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		want []time.Duration
	}{
		{"doubles to a power-of-two cap", Policy{Initial: 50 * ms, Max: 400 * ms}, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 400 * ms}},
		{"caps between two doublings", Policy{Initial: 500 * ms, Max: 10 * time.Second}, []time.Duration{500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"initial equal to the cap", Policy{Initial: time.Second, Max: time.Second}, []time.Duration{time.Second, time.Second, time.Second}},
		{"initial above the cap is capped", Policy{Initial: 3 * time.Second, Max: time.Second}, []time.Duration{time.Second, time.Second}},
		{"zero initial stays zero", Policy{Max: time.Second}, []time.Duration{0, 0, 0}},
		{"zero policy waits nothing", Policy{}, []time.Duration{0, 0}},
		{"negative initial waits nothing", Policy{Initial: -ms, Max: time.Second}, []time.Duration{0, 0}},
		{"odd cap", Policy{Initial: 2, Max: 5}, []time.Duration{2, 4, 5, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := delays(tc.p, len(tc.want)); !equal(got, tc.want) {
				t.Errorf("delays = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDelayLargeAttempts: large attempt counts and caps neither overflow
// nor take long.
func TestDelayLargeAttempts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Policy
		attempt int
		want    time.Duration
	}{
		{"max int attempt", Policy{Initial: ms, Max: time.Minute}, math.MaxInt, time.Minute},
		{"cap at the largest duration", Policy{Initial: 1, Max: math.MaxInt64}, 1000, math.MaxInt64},
		{"just below the largest cap", Policy{Initial: 1, Max: math.MaxInt64}, 62, 1 << 62},
		{"zero initial, max int attempt", Policy{Max: time.Minute}, math.MaxInt, 0},
		{"negative attempt is the first", Policy{Initial: ms, Max: time.Minute}, -3, ms},
		{"jittered largest cap saturates", Policy{Initial: 1, Max: math.MaxInt64, Jitter: 0.5, Rand: func() float64 { return 0.99 }}, 100, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Delay(tc.attempt); got != tc.want {
				t.Errorf("Delay(%d) = %v, want %v", tc.attempt, got, tc.want)
			}
		})
	}
}

func TestDelayJitter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jitter  float64
		u       float64
		attempt int
		want    time.Duration
	}{
		{"lowest draw", 0.2, 0, 0, 80 * ms},
		{"middle draw", 0.2, 0.5, 0, 100 * ms},
		{"high draw", 0.2, 0.75, 1, 220 * ms},
		{"jitter after the cap", 0.2, 0.75, 10, 1100 * ms},
		{"no jitter ignores the draw", 0, 0.9, 2, 400 * ms},
		{"full jitter", 1, 0.25, 0, 50 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Initial: 100 * ms, Max: time.Second, Jitter: tc.jitter, Rand: func() float64 { return tc.u }}
			if got := p.Delay(tc.attempt); got != tc.want {
				t.Errorf("Delay(%d) = %v, want %v", tc.attempt, got, tc.want)
			}
		})
	}
}

// TestDelayJitterBounds: with the default source every delay stays within
// ±Jitter of the unjittered one, and the delays are not all equal.
func TestDelayJitterBounds(t *testing.T) {
	p := Policy{Initial: 100 * ms, Max: time.Second, Jitter: 0.2}
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := p.Delay(1)
		if d < 160*ms || d >= 240*ms {
			t.Fatalf("Delay(1) = %v, want within [160ms, 240ms)", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("1000 jittered delays were all %v", seen)
	}
}

// TestDelaySeededRand: the same seed gives the same delays, and the
// source is drawn once per delay, even a zero one.
func TestDelaySeededRand(t *testing.T) {
	run := func(initial time.Duration) []time.Duration {
		r := rand.New(rand.NewPCG(7, 11))
		p := Policy{Initial: initial, Max: time.Second, Jitter: 0.2, Rand: r.Float64}
		out := delays(p, 5)
		out = append(out, time.Duration(r.Uint64()%1000)) // where the source stands after them
		return out
	}
	a, b := run(100*ms), run(100*ms)
	if !equal(a, b) {
		t.Errorf("same seed, different delays: %v and %v", a, b)
	}
	if z := run(0); z[len(z)-1] != a[len(a)-1] {
		t.Errorf("zero delays drew the source a different number of times: %v vs %v", z, a)
	}
}

// TestDelayMatchesFormerSenderFormula: the sender's hand-written back-off
// (base·2^attempt, at most 30 doublings, capped, ±20% jitter) is kept
// exactly, for caps within 2^30 of the base (the gateway caps at
// max(retry_backoff, 1s)).
func TestDelayMatchesFormerSenderFormula(t *testing.T) {
	former := func(base, maxD time.Duration, attempt int, u float64) time.Duration {
		d := base
		for range min(attempt, 30) {
			d *= 2
			if d >= maxD {
				d = maxD
				break
			}
		}
		return time.Duration(float64(d) * (0.8 + 0.4*u))
	}
	for _, c := range []struct{ base, max time.Duration }{
		{100 * ms, time.Second}, {ms, ms}, {0, time.Second}, {1, time.Second}, {3 * ms, 10 * time.Second}, {time.Second, time.Second},
	} {
		for attempt := range 40 {
			for _, u := range []float64{0, 0.123, 0.5, 0.999} {
				p := Policy{Initial: c.base, Max: c.max, Jitter: 0.2, Rand: func() float64 { return u }}
				if got, want := p.Delay(attempt), former(c.base, c.max, attempt, u); got != want {
					t.Fatalf("base %v max %v attempt %d u %v: Delay = %v, former = %v", c.base, c.max, attempt, u, got, want)
				}
			}
		}
	}
}

func TestSequence(t *testing.T) {
	const (
		next  = "next"
		reset = "reset"
	)
	for _, tc := range []struct {
		name  string
		p     Policy
		steps []string
		want  []time.Duration // one per next
	}{
		{"doubles to the cap", Policy{Initial: 5 * ms, Max: 20 * ms}, []string{next, next, next, next}, []time.Duration{5 * ms, 10 * ms, 20 * ms, 20 * ms}},
		{"reset starts again", Policy{Initial: time.Second, Max: 4 * time.Second}, []string{next, next, next, reset, next, next}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second, 2 * time.Second}},
		{"reset before any failure", Policy{Initial: ms, Max: 8 * ms}, []string{reset, next, reset, reset, next}, []time.Duration{ms, ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.p.Sequence()
			var got []time.Duration
			for _, step := range tc.steps {
				if step == reset {
					s.Reset()
				} else {
					got = append(got, s.Next())
				}
			}
			if !equal(got, tc.want) {
				t.Errorf("delays = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSequenceStaysAtCap: a loop that keeps failing stays at the cap and
// starts over after Reset.
func TestSequenceStaysAtCap(t *testing.T) {
	s := Policy{Initial: 5 * ms, Max: time.Second}.Sequence()
	for range 10_000 {
		s.Next()
	}
	if d := s.Next(); d != time.Second {
		t.Errorf("after 10000 failures Next = %v, want the cap 1s", d)
	}
	s.Reset()
	if d := s.Next(); d != 5*ms {
		t.Errorf("after Reset Next = %v, want 5ms", d)
	}
}

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		d       time.Duration
		want    bool
		atLeast time.Duration
		atMost  time.Duration
	}{
		{"waits the delay", context.Background(), 20 * ms, true, 20 * ms, 5 * time.Second},
		{"zero delay", context.Background(), 0, true, 0, 5 * time.Second},
		{"cancelled context ends it", cancelled, time.Hour, false, 0, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got := Sleep(tc.ctx, tc.d)
			took := time.Since(start)
			if got != tc.want {
				t.Errorf("Sleep = %v, want %v", got, tc.want)
			}
			if took < tc.atLeast || took > tc.atMost {
				t.Errorf("Sleep took %v, want within [%v, %v]", took, tc.atLeast, tc.atMost)
			}
		})
	}
}

// TestSleepCancelledWhileWaiting: a context ending mid-wait ends it.
func TestSleepCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*ms)
	defer cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep = true after its context ended")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Sleep took %v after a 20ms context", took)
	}
}
