package sender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/fluss"
)

// Transport is what the sender needs from the Fluss client (*fluss.Client).
// One call writes one table's batches to one tablet server.
type Transport interface {
	// SendProduceLog and SendPutKv return once the request is queued on
	// the server's connection; requests queued one after the other reach
	// the server in that order.
	SendProduceLog(ctx context.Context, serverID int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error)
	SendPutKv(ctx context.Context, serverID int32, req *fluss.PutKvRequest) (*fluss.PendingWrite, error)
	// BucketLeader may block on a metadata refresh; the sender calls it only
	// from its own refresh goroutines, never from the drain loop.
	BucketLeader(ctx context.Context, tableID, partitionID int64, bucket int32) (fluss.ServerNode, error)
	InvalidateTableMetadata(tableID int64)
	InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error)
}

// Config holds the sender's tunables. The zero value of a field means its
// documented default.
type Config struct {
	// Acks is the Fluss acks of every write: -1 (all, the default) or 1.
	Acks int
	// RequestTimeout is the timeout_ms sent to the server with each write;
	// the client-side deadline adds RequestTimeoutOverhead. Default 30s.
	RequestTimeout time.Duration
	// RequestTimeoutOverhead is added to RequestTimeout for the client-side
	// deadline of one request. Default 5s.
	RequestTimeoutOverhead time.Duration
	// MaxRequestSize bounds the estimated bytes drained for one tablet server
	// in one pass (a single larger batch still goes alone). Default 10 MiB.
	MaxRequestSize int
	// MaxInflightPerBucket caps the batches of one bucket sent and not yet
	// completed (including those waiting for a retry). Default 5, the most
	// the server's duplicate detection covers with idempotence.
	MaxInflightPerBucket int
	// DisableIdempotence turns off writer ids and batch sequences. With
	// idempotence on (the default) a retried batch is never written twice
	// and per-bucket order holds across retries; it requires Acks = -1.
	DisableIdempotence bool
	// RetryBackoff and RetryBackoffMax bound the exponential back-off
	// (±20% jitter) before a bucket's failed batch is resent. Defaults 100ms
	// and 1s.
	RetryBackoff, RetryBackoffMax time.Duration
	// DeliveryTimeout bounds the time from a batch's first record to its
	// acknowledgement, retries included; then the batch fails with
	// ErrDeliveryTimeout. Default 2 minutes.
	DeliveryTimeout time.Duration
}

// Defaults.
const (
	DefaultRequestTimeout         = 30 * time.Second
	DefaultRequestTimeoutOverhead = 5 * time.Second
	DefaultMaxRequestSize         = 10 << 20
	DefaultMaxInflightPerBucket   = 5
	DefaultRetryBackoff           = 100 * time.Millisecond
	DefaultRetryBackoffMax        = time.Second
	DefaultDeliveryTimeout        = 2 * time.Minute
)

func (c Config) withDefaults() Config {
	if c.Acks == 0 {
		c.Acks = -1
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RequestTimeoutOverhead == 0 {
		c.RequestTimeoutOverhead = DefaultRequestTimeoutOverhead
	}
	if c.MaxRequestSize == 0 {
		c.MaxRequestSize = DefaultMaxRequestSize
	}
	if c.MaxInflightPerBucket == 0 {
		c.MaxInflightPerBucket = DefaultMaxInflightPerBucket
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = DefaultRetryBackoffMax
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = DefaultDeliveryTimeout
	}
	return c
}

// Validate reports the first invalid setting (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Acks != -1 && c.Acks != 1:
		return fmt.Errorf("sender: acks %d: want -1 (all) or 1", c.Acks)
	case !c.DisableIdempotence && c.Acks != -1:
		return errors.New("sender: writer idempotence requires acks=-1 (all)")
	case c.MaxInflightPerBucket < 0:
		return fmt.Errorf("sender: max in-flight per bucket %d must be positive", c.MaxInflightPerBucket)
	case !c.DisableIdempotence && c.MaxInflightPerBucket > 5:
		return fmt.Errorf("sender: writer idempotence requires max in-flight per bucket ≤ 5, not %d", c.MaxInflightPerBucket)
	case c.RequestTimeout < 0 || c.RequestTimeoutOverhead < 0 || c.DeliveryTimeout < 0:
		return errors.New("sender: timeouts must not be negative")
	case c.RetryBackoff < 0 || c.RetryBackoffMax < c.RetryBackoff:
		return fmt.Errorf("sender: retry backoff %v must be ≥ 0 and ≤ retry backoff max %v", c.RetryBackoff, c.RetryBackoffMax)
	case c.MaxRequestSize < 0:
		return fmt.Errorf("sender: max request size %d must be positive", c.MaxRequestSize)
	}
	return nil
}

// Errors carried by handles (wrapped with the table and bucket).
var (
	// ErrDeliveryTimeout: the batch was not acknowledged within
	// Config.DeliveryTimeout. It may or may not have been written.
	ErrDeliveryTimeout = errors.New("sender: delivery timeout")
	// ErrWriterReset: the batch was sent under a writer id that was reset
	// (after a fatal sequence error elsewhere) and cannot be resent safely.
	ErrWriterReset = errors.New("sender: writer id reset")
	// ErrStopped: the sender stopped before the batch was acknowledged. It
	// also matches accumulator.ErrClosed.
	ErrStopped = fmt.Errorf("sender: stopped before the batch was acknowledged: %w", errAccClosed)
	// errMissingBucket: the response had no entry for a bucket we sent.
	errMissingBucket = errors.New("sender: response has no result for the bucket")
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
// private registry).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// WithJitterSeed fixes the seed of the back-off jitter (tests).
func WithJitterSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }
