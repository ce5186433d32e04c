package accumulator

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the accumulator's tunables. Start from DefaultConfig. Linger
// is taken as it is (zero: no linger); for every other field zero means its
// DefaultConfig value.
type Config struct {
	// BatchSize is the target size in bytes of one batch (estimated before
	// compression). A batch is closed to appends once its estimate reaches
	// it; a single larger record still gets a batch of its own.
	BatchSize int
	// Linger bounds how long a non-full batch waits for more records: a
	// bucket that has nothing in flight and has not sent for Linger sends
	// at once, so under light load a write takes about one Fluss round
	// trip; otherwise it sends at most one non-full batch per Linger
	// (package sender). Zero never waits. The default is 20ms.
	Linger time.Duration
	// BufferMemory bounds the bytes of all incomplete batches (queued, in
	// flight and awaiting retry); at least 2 × BatchSize.
	BufferMemory int64
	// MaxTableShare is the fraction of BufferMemory one table may hold
	// (0 < share ≤ 1; default 0.5). A table whose Fluss writes stall or
	// slow down fills its share and its writers wait; the rest of the
	// buffer stays for the other tables. 1 lets one table take it all.
	MaxTableShare float64
	// RequestMemory is the part of BufferMemory that the requests feeding
	// the accumulator may hold through [Accumulator.RequestMemory] (the
	// gateway's Kafka frames and the batches decoded from them), so that
	// one budget bounds both. 0 (the default): none, BufferMemory is the
	// batches' alone. Below BufferMemory.
	RequestMemory int64
	// BufferWaitTimeout bounds how long an append waits for buffer memory
	// before it fails with ErrBufferFull.
	BufferWaitTimeout time.Duration
}

// DefaultConfig returns the default of every setting.
func DefaultConfig() Config {
	return Config{
		BatchSize:         2 << 20,
		Linger:            20 * time.Millisecond,
		BufferMemory:      64 << 20,
		MaxTableShare:     0.5,
		BufferWaitTimeout: 30 * time.Second,
	}
}

// withDefaults replaces the zero fields that mean "default" (see Config).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.BatchSize = cmp.Or(c.BatchSize, d.BatchSize)
	c.BufferMemory = cmp.Or(c.BufferMemory, d.BufferMemory)
	c.MaxTableShare = cmp.Or(c.MaxTableShare, d.MaxTableShare)
	c.BufferWaitTimeout = cmp.Or(c.BufferWaitTimeout, d.BufferWaitTimeout)
	return c
}

// Validate reports the first invalid setting (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.BatchSize < 0:
		return fmt.Errorf("accumulator: batch size %d must be positive", c.BatchSize)
	case c.Linger < 0:
		return fmt.Errorf("accumulator: linger %v must not be negative", c.Linger)
	case c.BufferWaitTimeout < 0:
		return fmt.Errorf("accumulator: buffer wait timeout %v must not be negative", c.BufferWaitTimeout)
	case c.BufferMemory < 2*int64(c.BatchSize):
		return fmt.Errorf("accumulator: buffer memory %d must be at least 2 × batch size %d", c.BufferMemory, c.BatchSize)
	case c.MaxTableShare <= 0 || c.MaxTableShare > 1:
		return fmt.Errorf("accumulator: max table share %v must be above 0 and at most 1", c.MaxTableShare)
	case c.tableMemoryCap() < int64(c.BatchSize):
		return fmt.Errorf("accumulator: a table's share of the buffer memory (%v × %d bytes) must hold a batch of %d bytes", c.MaxTableShare, c.BufferMemory, c.BatchSize)
	case c.RequestMemory < 0 || c.RequestMemory >= c.BufferMemory:
		return fmt.Errorf("accumulator: request memory %d must be at least 0 and below the buffer memory %d", c.RequestMemory, c.BufferMemory)
	}
	return nil
}

// tableMemoryCap is the buffer memory one table may hold.
func (c Config) tableMemoryCap() int64 {
	return int64(float64(c.BufferMemory) * c.MaxTableShare)
}

// Errors returned by appends and carried by handles (wrapped with the table
// and bucket).
var (
	// ErrBufferFull: no buffer memory became free within BufferWaitTimeout.
	ErrBufferFull = errors.New("accumulator: buffer memory full")
	// ErrClosed: the accumulator is closed; the record was not (or will not
	// be) sent.
	ErrClosed = errors.New("accumulator: closed")
	// ErrRecordTooLarge: a record cannot fit in the whole buffer.
	ErrRecordTooLarge = errors.New("accumulator: record larger than buffer memory")
)

// Option configures collaborators of an Accumulator.
type Option func(*options)

type options struct {
	reg prometheus.Registerer
}

// WithRegisterer registers the accumulator's metrics with reg (default: a
// private registry, i.e. not exported).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }
