package accumulator

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the accumulator's tunables. The zero value of a field means its
// documented default.
type Config struct {
	// BatchSize is the target size in bytes of one batch (estimated before
	// compression). A batch is closed to appends once its estimate reaches it;
	// a single larger record still gets a batch of its own. Default 2 MiB.
	BatchSize int
	// Linger is how long a non-full batch waits for more records before it is
	// ready to send. Default 20ms (the Fluss clients use 100ms; a Kafka
	// producer waits for its own acks, so the gateway lingers less).
	Linger time.Duration
	// BufferMemory bounds the bytes of all incomplete batches (queued,
	// in flight and awaiting retry). Default 64 MiB; at least 2 × BatchSize.
	BufferMemory int64
	// BufferWaitTimeout bounds how long an append waits for buffer memory
	// before it fails with ErrBufferFull. Default 30s.
	BufferWaitTimeout time.Duration
}

// Defaults.
const (
	DefaultBatchSize         = 2 << 20
	DefaultLinger            = 20 * time.Millisecond
	DefaultBufferMemory      = 64 << 20
	DefaultBufferWaitTimeout = 30 * time.Second
)

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.BufferMemory == 0 {
		c.BufferMemory = DefaultBufferMemory
	}
	if c.BufferWaitTimeout == 0 {
		c.BufferWaitTimeout = DefaultBufferWaitTimeout
	}
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
	}
	return nil
}

// Errors returned by appends and carried by handles.
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
	logger *slog.Logger
	reg    prometheus.Registerer
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer registers the accumulator's metrics with reg (default: a
// private registry, i.e. not exported).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }
