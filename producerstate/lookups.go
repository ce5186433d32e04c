package producerstate

import (
	"context"
	"fmt"
	"sync"
)

// maxLookupKeys bounds the keys of one Lookup request; more wait for the
// next.
const maxLookupKeys = 1024

// groupedLookups puts the lookups of one bucket that arrive while a
// Lookup of it is in flight into the next request, all at once: thousands
// of producer-partitions starting together (a restart, a new fleet) cost
// a few round trips per bucket, not one each. The first lookup of a quiet
// bucket goes out at once (no linger).
type groupedLookups struct {
	mu      sync.Mutex
	buckets map[bucketRef]*bucketLookups
}

// bucketRef names one bucket of a table or of one of its partitions.
type bucketRef struct {
	TableID, PartitionID int64
	Bucket               int32
}

// bucketLookups is one bucket's request in flight and the keys waiting.
type bucketLookups struct {
	inflight bool
	waiting  []*lookupBatch // requests to send, in order; only the last takes more keys
}

// lookupBatch is the keys of one Lookup request and, once done is closed,
// their values (nil: no row) or the request's error.
type lookupBatch struct {
	keys [][]byte
	vals [][]byte
	err  error
	done chan struct{}
}

// lookup returns key's value in bucket (nil when there is none), sending
// it with the other keys of the bucket waiting meanwhile through send. ctx
// bounds the wait; a request goes on for the others when it ends.
func (g *groupedLookups) lookup(ctx context.Context, bucket bucketRef, key []byte, send func(context.Context, [][]byte) ([][]byte, error)) ([]byte, error) {
	g.mu.Lock()
	if g.buckets == nil {
		g.buckets = map[bucketRef]*bucketLookups{}
	}
	q := g.buckets[bucket]
	if q == nil {
		q = &bucketLookups{}
		g.buckets[bucket] = q
	}
	var b *lookupBatch
	if n := len(q.waiting); n > 0 && len(q.waiting[n-1].keys) < maxLookupKeys {
		b = q.waiting[n-1]
	} else {
		b = &lookupBatch{done: make(chan struct{})}
		q.waiting = append(q.waiting, b)
	}
	i := len(b.keys)
	b.keys = append(b.keys, key)
	lead := !q.inflight
	if lead {
		q.inflight = true
	}
	g.mu.Unlock()
	if lead {
		// Not bound by this caller's context: the requests carry others'
		// keys (the Fluss client's request timeout bounds each).
		go g.drain(context.WithoutCancel(ctx), q, send)
	}
	return b.value(ctx, i)
}

// drain sends the bucket's waiting batches one request at a time until
// none waits.
func (g *groupedLookups) drain(ctx context.Context, q *bucketLookups, send func(context.Context, [][]byte) ([][]byte, error)) {
	for {
		g.mu.Lock()
		if len(q.waiting) == 0 {
			q.inflight = false
			g.mu.Unlock()
			return
		}
		b := q.waiting[0]
		q.waiting = q.waiting[1:]
		g.mu.Unlock()
		g.send(ctx, b, send)
	}
}

func (g *groupedLookups) send(ctx context.Context, b *lookupBatch, send func(context.Context, [][]byte) ([][]byte, error)) {
	b.vals, b.err = send(ctx, b.keys)
	if b.err == nil && len(b.vals) != len(b.keys) {
		b.err = fmt.Errorf("%w: %d values for %d keys", errBadState, len(b.vals), len(b.keys))
	}
	close(b.done)
}

// value waits for the batch and returns key i's value.
func (b *lookupBatch) value(ctx context.Context, i int) ([]byte, error) {
	select {
	case <-b.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if b.err != nil {
		return nil, b.err
	}
	return b.vals[i], nil
}
