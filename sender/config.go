package sender

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// Transport is what the sender needs from the Fluss client (*fluss.Client).
// One request writes one table's batches to one tablet server.
type Transport interface {
	// SendProduceLog and SendPutKv return once the request is queued on the
	// tablet server's connection (requests queued one after the other reach
	// the server in that order); the answer comes from the PendingWrite.
	SendProduceLog(ctx context.Context, serverID int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error)
	SendPutKv(ctx context.Context, serverID int32, req *fluss.PutKvRequest) (*fluss.PendingWrite, error)
	// BucketLeader may block on a metadata refresh; the sender calls it only
	// from its own refresh goroutines, never from the drain loop.
	BucketLeader(ctx context.Context, tableID, partitionID int64, bucket int32) (fluss.ServerNode, error)
	InvalidateTableMetadata(tableID int64)
	// InvalidatePartitionMetadata forgets what is cached of one partition
	// (its bucket count and leaders), after INVALID_BUCKET_ROUTING.
	InvalidatePartitionMetadata(tableID, partitionID int64)
	InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error)
}

// Config holds the sender's tunables. Start from DefaultConfig. Retries,
// Acks and DisableIdempotence are taken as they are (zero Retries: no
// retry; zero Acks is refused); for every other field zero means its
// DefaultConfig value.
type Config struct {
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
	// LeaderWait is how long a table's buckets may stay without a known
	// leader before the batches queued for them (never sent, so nothing of
	// them is in Fluss) fail with ErrNoLeader and the table is reported
	// leaderless ([Sender.Leaderless]), so that its producers get a
	// retriable answer within their request timeout instead of waiting out
	// the delivery timeout. The default is 5s.
	LeaderWait time.Duration
}

// DefaultConfig returns the default of every setting.
func DefaultConfig() Config {
	return Config{
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
		LeaderWait:             5 * time.Second,
	}
}

// withDefaults replaces the zero fields that mean "default" (see Config).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.RequestTimeout = cmp.Or(c.RequestTimeout, d.RequestTimeout)
	c.RequestTimeoutOverhead = cmp.Or(c.RequestTimeoutOverhead, d.RequestTimeoutOverhead)
	c.MaxRequestSize = cmp.Or(c.MaxRequestSize, d.MaxRequestSize)
	c.MaxInflightPerBucket = cmp.Or(c.MaxInflightPerBucket, d.MaxInflightPerBucket)
	c.RetryBackoff = cmp.Or(c.RetryBackoff, d.RetryBackoff)
	c.RetryBackoffMax = cmp.Or(c.RetryBackoffMax, d.RetryBackoffMax)
	c.DeliveryTimeout = cmp.Or(c.DeliveryTimeout, d.DeliveryTimeout)
	c.KvMaxThrottle = cmp.Or(c.KvMaxThrottle, d.KvMaxThrottle)
	c.LeaderWait = cmp.Or(c.LeaderWait, d.LeaderWait)
	return c
}

// Validate reports the first invalid setting (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Acks == 0:
		return errors.New("sender: acks 0 is not supported towards Fluss: use 1 or -1 (all)")
	case c.Acks != -1 && c.Acks != 1:
		return fmt.Errorf("sender: acks %d: want -1 (all) or 1", c.Acks)
	case !c.DisableIdempotence && c.Acks != -1:
		return errors.New("sender: idempotence requires acks -1 (all)")
	case c.MaxInflightPerBucket < 0:
		return fmt.Errorf("sender: max in-flight per bucket %d must be positive", c.MaxInflightPerBucket)
	case !c.DisableIdempotence && c.MaxInflightPerBucket > 5:
		return fmt.Errorf("sender: idempotence requires max in-flight per bucket ≤ 5, not %d", c.MaxInflightPerBucket)
	case c.Retries < 0:
		return fmt.Errorf("sender: retries %d must not be negative", c.Retries)
	case c.RequestTimeout < 0 || c.RequestTimeoutOverhead < 0 || c.DeliveryTimeout < 0 || c.KvMaxThrottle < 0 || c.LeaderWait < 0:
		return errors.New("sender: timeouts must not be negative")
	case c.RetryBackoff < 0 || c.RetryBackoffMax < c.RetryBackoff:
		return fmt.Errorf("sender: retry backoff %v must be ≥ 0 and ≤ retry backoff max %v", c.RetryBackoff, c.RetryBackoffMax)
	case c.MaxRequestSize < 0:
		return fmt.Errorf("sender: max request size %d must be positive", c.MaxRequestSize)
	}
	return nil
}

// Errors carried by handles (wrapped with the table and bucket); the
// accumulator's own (ErrBufferFull, ErrClosed, ErrRecordTooLarge) come
// from appends.
var (
	// ErrDeliveryTimeout: the batch was not acknowledged within
	// Config.DeliveryTimeout. It may or may not have been written.
	ErrDeliveryTimeout = errors.New("sender: delivery timeout")
	// ErrWriterReset: the batch was sent under a writer id that was reset
	// (after a fatal sequence error elsewhere) and cannot be resent safely.
	ErrWriterReset = errors.New("sender: writer id reset")
	// ErrStopped: the sender stopped before the batch was acknowledged. It
	// also matches accumulator.ErrClosed.
	ErrStopped = fmt.Errorf("sender: stopped before the batch was acknowledged: %w", accumulator.ErrClosed)
	// ErrNoLeader: the batch's bucket had no known leader for
	// Config.LeaderWait; it was never sent. It wraps the last lookup error.
	ErrNoLeader = errors.New("sender: bucket has no leader")
	// ErrSequenceRejected wraps the Fluss answer OUT_OF_ORDER_SEQUENCE to a
	// sealed batch whose predecessors of the same writer and bucket were
	// all resolved: the server does not hold the sequence before it (its
	// writer state is gone, or the caller's sequences are wrong). Nothing
	// was written.
	ErrSequenceRejected = errors.New("sender: sealed batch sequence rejected")
)

// Option configures collaborators of a Sender.
type Option func(*options)

type options struct {
	logger *slog.Logger
	reg    prometheus.Registerer
	seed   uint64
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer registers the sender's metrics with reg (default: a
// private registry, i.e. not exported).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// WithJitterSeed fixes the seed of the back-off jitter (tests).
func WithJitterSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }
