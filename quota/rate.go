package quota

import "time"

// Config is how rates are measured, fixed for the life of a [Quotas]
// (Kafka's quota.window.num and quota.window.size.seconds).
type Config struct {
	// Window is the span of one sample. Default 1 s.
	Window time.Duration
	// Samples is how many windows the rate is measured over, the current
	// one included. Default 11.
	Samples int
}

// DefaultConfig is Kafka's: 11 samples of 1 s.
func DefaultConfig() Config { return Config{Window: time.Second, Samples: 11} }

// span is how long a sample counts, and the longest throttle time (Kafka's
// cap).
func (c Config) span() time.Duration { return c.Window * time.Duration(c.Samples) }

// sample is the bytes recorded in one window starting at start.
type sample struct {
	start time.Time
	bytes float64
}

// meter is a rate over sampled windows, as Kafka's Rate over a
// SampledStat: samples open when a record finds the current one complete,
// expire Samples windows after they opened, and the rate divides their sum
// by the time since the oldest one opened, but by at least Samples-1
// windows, so that a new meter does not read one burst as a huge rate.
type meter struct {
	samples []sample // at most Config.Samples, reused in turn
	cur     int
}

// record adds bytes at now.
func (m *meter) record(cfg Config, now time.Time, bytes float64) {
	switch {
	case len(m.samples) == 0:
		m.samples = append(m.samples, sample{start: now})
	case now.Sub(m.samples[m.cur].start) >= cfg.Window:
		m.cur = (m.cur + 1) % cfg.Samples
		if m.cur == len(m.samples) {
			m.samples = append(m.samples, sample{start: now})
		} else {
			m.samples[m.cur] = sample{start: now}
		}
	}
	m.samples[m.cur].bytes += bytes
}

// rate is the bytes per second at now, and the window it is measured
// over (which throttle times are computed on).
func (m *meter) rate(cfg Config, now time.Time) (float64, time.Duration) {
	total := 0.0
	oldest := now
	for i := range m.samples {
		s := &m.samples[i]
		if now.Sub(s.start) >= cfg.span() {
			// Obsolete: Kafka resets it to an empty sample opening now.
			*s = sample{start: now}
		}
		total += s.bytes
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if full, least := int(elapsed/cfg.Window), cfg.Samples-1; full < least {
		elapsed += time.Duration(least-full) * cfg.Window
	}
	return total / elapsed.Seconds(), elapsed
}

// idle reports whether every sample has expired at now: the meter reads
// zero and can be dropped.
func (m *meter) idle(cfg Config, now time.Time) bool {
	return len(m.samples) == 0 || now.Sub(m.samples[m.cur].start) >= cfg.span()
}

// throttleTime is how long a client measured at rate over window must wait
// for its rate to fall back to bound (bytes/s), as Kafka computes it:
// (rate - bound) / bound * window, capped at the span of the samples. Zero
// when the rate is within the bound.
func throttleTime(cfg Config, rate, bound float64, window time.Duration) time.Duration {
	if rate <= bound {
		return 0
	}
	d := (rate - bound) / bound * float64(window)
	if d >= float64(cfg.span()) { // also keeps the conversion in range
		return cfg.span()
	}
	return time.Duration(d).Round(time.Millisecond)
}
