package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/backoff"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/outage"
	"github.com/fluss-kafka/gateway/produce"
)

// producerIDs is the produce path's source of producer ids: Fluss InitWriter,
// asked within a short bound and not at all while it keeps failing.
//
// A Kafka client waits for InitProducerId much less than
// fluss.request_timeout (franz-go gives a request its own 10 s overhead),
// and while ZooKeeper or the coordinator is down every InitWriter waits out
// that timeout or fails at once, for every producer's retry. So one call
// waits at most timeout; after a failure the answer for the next backoff
// (1 s, doubling up to backoffMax) is that cached failure without asking
// Fluss, then one request probes Fluss again while the others keep the
// cached answer. Failures are answered with a code every idempotent
// producer retries (writerIDError) and logged through one
// outage.Log.
type producerIDs struct {
	src     produce.WriterIDs
	timeout time.Duration
	now     func() time.Time
	outage  *outage.Log

	mu         sync.Mutex       // guards the fields below
	failure    error            // the cached answer while failing; nil when healthy
	retryAt    time.Time        // the next probe of Fluss, while failing
	retryDelay backoff.Sequence // the wait before the next probe, doubling while Fluss keeps failing
	probing    bool             // a probe is in flight
}

// initialWriterIDBackoff is the first pause after a failure.
const initialWriterIDBackoff = time.Second

func newProducerIDs(src produce.WriterIDs, timeout, backoffMax time.Duration, outage *outage.Log, now func() time.Time) *producerIDs {
	if now == nil {
		now = time.Now
	}
	return &producerIDs{
		src: src, timeout: timeout, now: now, outage: outage,
		retryDelay: backoff.Policy{Initial: initialWriterIDBackoff, Max: max(backoffMax, initialWriterIDBackoff)}.Sequence(),
	}
}

var _ produce.WriterIDs = (*producerIDs)(nil)

// InitWriter implements writerIDs. It returns an error matching a
// kafkaproto sentinel: kafkaproto.ErrCoordinatorLoadInProgress while
// Fluss cannot hand out ids (retriable in every client, see
// 22_init_producer_id.go), kafkaproto.ErrClusterAuthorizationFailed when
// Fluss refuses the gateway's own credentials.
func (p *producerIDs) InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error) {
	p.mu.Lock()
	if p.failure != nil && (p.probing || p.now().Before(p.retryAt)) {
		err := p.failure
		p.mu.Unlock()
		p.outage.Fail(err)
		return 0, err
	}
	probe := p.failure != nil
	p.probing = p.probing || probe
	p.mu.Unlock()

	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	id, err := p.src.InitWriter(cctx, tables...)
	cancel()
	if err == nil && id < 0 {
		err = fmt.Errorf("fluss returned writer id %d", id)
	}
	if err != nil && ctx.Err() != nil {
		// The producer went away (its connection closed): says nothing
		// about Fluss.
		p.endProbe(probe)
		return 0, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, ctx.Err())
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("fluss init_writer did not answer within %s: %w", p.timeout, err)
		}
		return 0, p.failed(probe, err)
	}
	p.mu.Lock()
	p.failure, p.probing = nil, false
	p.retryDelay.Reset()
	p.mu.Unlock()
	p.outage.OK()
	return id, nil
}

func (p *producerIDs) endProbe(probe bool) {
	if probe {
		p.mu.Lock()
		p.probing = false
		p.mu.Unlock()
	}
}

// failed records a failed call and returns the answer for it. Only the
// first failure and a failed probe move the back-off: calls that were in
// flight when Fluss went away fail together and count as one.
func (p *producerIDs) failed(probe bool, cause error) error {
	answer := writerIDError(cause)
	p.mu.Lock()
	if probe || p.failure == nil {
		p.failure, p.retryAt = answer, p.now().Add(p.retryDelay.Next())
	}
	if probe {
		p.probing = false
	}
	p.mu.Unlock()
	p.outage.Fail(cause)
	return answer
}

// writerIDError is the Kafka answer to a failed InitWriter.
func writerIDError(cause error) error {
	if errors.Is(cause, fluss.ErrAuthenticate) || errors.Is(cause, fluss.ErrAuthorization) {
		// The gateway's own Fluss credentials: no retry helps, and every
		// client reports this code as a permission problem.
		return fmt.Errorf("%w: fluss refused the gateway a writer id: %w", kafkaproto.ErrClusterAuthorizationFailed, cause)
	}
	return fmt.Errorf("%w: fluss writer ids unavailable, retry later: %w", kafkaproto.ErrCoordinatorLoadInProgress, cause)
}
