package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/fluss"
)

// Transport is what the writer needs from the Fluss client (*fluss.Client).
// One request writes one table's batches to one tablet server.
type Transport interface {
	// SendProduceLog and SendPutKv return once the request is queued on the
	// tablet server's connection (requests queued one after the other reach
	// the server in that order); the answer comes from the PendingWrite.
	SendProduceLog(ctx context.Context, serverID int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error)
	SendPutKv(ctx context.Context, serverID int32, req *fluss.PutKvRequest) (*fluss.PendingWrite, error)
	// BucketLeader may block on a metadata refresh; the writer calls it only
	// from its own refresh goroutines, never from the drain loop.
	BucketLeader(ctx context.Context, tableID, partitionID int64, bucket int32) (fluss.ServerNode, error)
	InvalidateTableMetadata(tableID int64)
	// InvalidatePartitionMetadata forgets what is cached of one partition
	// (its bucket count and leaders), after INVALID_BUCKET_ROUTING.
	InvalidatePartitionMetadata(tableID, partitionID int64)
	InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error)
}

// Config holds the writer's tunables. Start from DefaultConfig. Linger,
// Retries, Acks and DisableIdempotence are taken as they are (zero Linger:
// no linger; zero Retries: no retry; zero Acks is refused); for every other
// field zero means its DefaultConfig value.
type Config struct {
	// BatchSize is the target size in bytes of one batch (estimated before
	// compression). A batch is closed to appends once its estimate reaches
	// it; a single larger record still gets a batch of its own.
	BatchSize int
	// Linger bounds how long a non-full batch waits for more records while
	// an earlier batch of its bucket is in flight; a bucket with nothing in
	// flight sends at once, so under light load a write takes about one
	// Fluss round trip. Zero never waits. The default is 20ms.
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
	// the writer may hold through [Writer.RequestMemory] (the gateway's
	// Kafka frames and the batches decoded from them), so that one budget
	// bounds both. 0 (the default): none, BufferMemory is the writer's alone.
	// Below BufferMemory.
	RequestMemory int64
	// BufferWaitTimeout bounds how long a write waits for buffer memory
	// before it fails with ErrBufferFull.
	BufferWaitTimeout time.Duration

	// Acks is the Fluss acks of every write: -1 (all) or 1. Fluss has no
	// fire-and-forget: 0 is refused.
	Acks int
	// RequestTimeout is the timeout_ms sent to the server with each write;
	// the client-side deadline adds RequestTimeoutOverhead.
	RequestTimeout time.Duration
	// RequestTimeoutOverhead is added to RequestTimeout for the client-side
	// deadline of one request.
	RequestTimeoutOverhead time.Duration
	// MaxRequestSize bounds the estimated bytes drained for one tablet
	// server in one pass (a single larger batch still goes alone).
	MaxRequestSize int
	// MaxInflightPerBucket caps the batches of one bucket sent and not yet
	// completed (including those waiting for a retry). The default, 5, is
	// the most the server's duplicate detection covers with idempotence.
	MaxInflightPerBucket int
	// DisableIdempotence turns off writer ids and batch sequences. With
	// idempotence on (the default) a retried batch is never written twice
	// and per-bucket order holds across retries; it requires Acks = -1.
	DisableIdempotence bool
	// Retries is how many times a batch that failed with a retriable error
	// is resent; then it fails with its last error. DeliveryTimeout bounds
	// the retries in any case. Zero: never resent.
	Retries int
	// RetryBackoff and RetryBackoffMax bound the exponential back-off (±20%
	// jitter) before a bucket's failed batch is resent.
	RetryBackoff, RetryBackoffMax time.Duration
	// DeliveryTimeout bounds the time from a batch's first record to its
	// acknowledgement, retries included; then the batch fails with
	// ErrDeliveryTimeout.
	DeliveryTimeout time.Duration
	// KvMaxThrottle is the longest a primary-key table's bucket is held back
	// when its tablet server reports storage pressure p in (0,1] (Fluss 1.0
	// KV back-pressure; PutKv v2+): the bucket's next send waits
	// KvMaxThrottle·p². Fluss's own clients default to 3s.
	KvMaxThrottle time.Duration
}

// DefaultConfig returns the default of every setting.
func DefaultConfig() Config {
	return Config{
		BatchSize:              2 << 20,
		Linger:                 20 * time.Millisecond,
		BufferMemory:           64 << 20,
		MaxTableShare:          0.5,
		BufferWaitTimeout:      30 * time.Second,
		Acks:                   -1,
		RequestTimeout:         30 * time.Second,
		RequestTimeoutOverhead: 5 * time.Second,
		MaxRequestSize:         10 << 20,
		MaxInflightPerBucket:   5,
		Retries:                math.MaxInt32,
		RetryBackoff:           100 * time.Millisecond,
		RetryBackoffMax:        time.Second,
		DeliveryTimeout:        2 * time.Minute,
		KvMaxThrottle:          3 * time.Second,
	}
}

// withDefaults replaces the zero fields that mean "default" (see Config).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setDefault(&c.BatchSize, d.BatchSize)
	setDefault(&c.BufferMemory, d.BufferMemory)
	setDefault(&c.MaxTableShare, d.MaxTableShare)
	setDefault(&c.BufferWaitTimeout, d.BufferWaitTimeout)
	setDefault(&c.RequestTimeout, d.RequestTimeout)
	setDefault(&c.RequestTimeoutOverhead, d.RequestTimeoutOverhead)
	setDefault(&c.MaxRequestSize, d.MaxRequestSize)
	setDefault(&c.MaxInflightPerBucket, d.MaxInflightPerBucket)
	setDefault(&c.RetryBackoff, d.RetryBackoff)
	setDefault(&c.RetryBackoffMax, d.RetryBackoffMax)
	setDefault(&c.DeliveryTimeout, d.DeliveryTimeout)
	setDefault(&c.KvMaxThrottle, d.KvMaxThrottle)
	return c
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Validate reports the first invalid setting (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.BatchSize < 0:
		return fmt.Errorf("writer: batch size %d must be positive", c.BatchSize)
	case c.Linger < 0:
		return fmt.Errorf("writer: linger %v must not be negative", c.Linger)
	case c.BufferWaitTimeout < 0:
		return fmt.Errorf("writer: buffer wait timeout %v must not be negative", c.BufferWaitTimeout)
	case c.BufferMemory < 2*int64(c.BatchSize):
		return fmt.Errorf("writer: buffer memory %d must be at least 2 × batch size %d", c.BufferMemory, c.BatchSize)
	case c.MaxTableShare <= 0 || c.MaxTableShare > 1:
		return fmt.Errorf("writer: max table share %v must be above 0 and at most 1", c.MaxTableShare)
	case c.tableMemoryCap() < int64(c.BatchSize):
		return fmt.Errorf("writer: a table's share of the buffer memory (%v × %d bytes) must hold a batch of %d bytes", c.MaxTableShare, c.BufferMemory, c.BatchSize)
	case c.RequestMemory < 0 || c.RequestMemory >= c.BufferMemory:
		return fmt.Errorf("writer: request memory %d must be at least 0 and below the buffer memory %d", c.RequestMemory, c.BufferMemory)
	case c.Acks == 0:
		return errors.New("writer: acks 0 is not supported towards Fluss: use 1 or -1 (all)")
	case c.Acks != -1 && c.Acks != 1:
		return fmt.Errorf("writer: acks %d: want -1 (all) or 1", c.Acks)
	case !c.DisableIdempotence && c.Acks != -1:
		return errors.New("writer: idempotence requires acks -1 (all)")
	case c.MaxInflightPerBucket < 0:
		return fmt.Errorf("writer: max in-flight per bucket %d must be positive", c.MaxInflightPerBucket)
	case !c.DisableIdempotence && c.MaxInflightPerBucket > 5:
		return fmt.Errorf("writer: idempotence requires max in-flight per bucket ≤ 5, not %d", c.MaxInflightPerBucket)
	case c.Retries < 0:
		return fmt.Errorf("writer: retries %d must not be negative", c.Retries)
	case c.RequestTimeout < 0 || c.RequestTimeoutOverhead < 0 || c.DeliveryTimeout < 0 || c.KvMaxThrottle < 0:
		return errors.New("writer: timeouts must not be negative")
	case c.RetryBackoff < 0 || c.RetryBackoffMax < c.RetryBackoff:
		return fmt.Errorf("writer: retry backoff %v must be ≥ 0 and ≤ retry backoff max %v", c.RetryBackoff, c.RetryBackoffMax)
	case c.MaxRequestSize < 0:
		return fmt.Errorf("writer: max request size %d must be positive", c.MaxRequestSize)
	}
	return nil
}

// Errors returned by writes and carried by handles (wrapped with the table
// and bucket).
var (
	// ErrBufferFull: no buffer memory became free within BufferWaitTimeout.
	ErrBufferFull = errors.New("writer: buffer memory full")
	// ErrClosed: the writer is closed; the record was not (or will not be)
	// sent.
	ErrClosed = errors.New("writer: closed")
	// ErrRecordTooLarge: a record cannot fit in the whole buffer.
	ErrRecordTooLarge = errors.New("writer: record larger than buffer memory")
	// ErrDeliveryTimeout: the batch was not acknowledged within
	// Config.DeliveryTimeout. It may or may not have been written.
	ErrDeliveryTimeout = errors.New("writer: delivery timeout")
	// ErrWriterReset: the batch was sent under a writer id that was reset
	// (after a fatal sequence error elsewhere) and cannot be resent safely.
	ErrWriterReset = errors.New("writer: writer id reset")
	// ErrStopped: the writer stopped before the batch was acknowledged. It
	// also matches ErrClosed.
	ErrStopped = fmt.Errorf("writer: stopped before the batch was acknowledged: %w", ErrClosed)
)

// errMissingBucket: the response had no entry for a bucket we sent.
var errMissingBucket = errors.New("writer: response has no result for the bucket")

// Option configures collaborators of a Writer.
type Option func(*options)

type options struct {
	logger *slog.Logger
	reg    prometheus.Registerer
	seed   uint64
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer registers the writer's metrics with reg (default: a
// private registry, i.e. not exported).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// WithJitterSeed fixes the seed of the back-off jitter (tests).
func WithJitterSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// tableMemoryCap is the buffer memory one table may hold.
func (c Config) tableMemoryCap() int64 {
	return int64(float64(c.BufferMemory) * c.MaxTableShare)
}
