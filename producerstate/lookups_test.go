package producerstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldLookups is a Lookup that answers each key with its own bytes
// reversed, counts its requests and keys, and holds each request until
// the test releases it.
type heldLookups struct {
	mu       sync.Mutex
	requests [][][]byte
	started  chan int // keys of each request, as it starts
	release  chan struct{}
	err      error
}

func (h *heldLookups) send(_ context.Context, keys [][]byte) ([][]byte, error) {
	h.mu.Lock()
	h.requests = append(h.requests, keys)
	h.mu.Unlock()
	h.started <- len(keys)
	<-h.release
	if h.err != nil {
		return nil, h.err
	}
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		if string(k) == "missing" {
			continue
		}
		vals[i] = append([]byte("v:"), k...)
	}
	return vals, nil
}

// Lookups of one bucket that arrive while one is in flight go together in
// the next request: 1 + 1 requests for 51 keys, each key answered with its
// own value.
func TestLookupsGroupedPerBucket(t *testing.T) {
	h := &heldLookups{started: make(chan int, 10), release: make(chan struct{})}
	var g groupedLookups
	ctx := t.Context()
	type answer struct {
		v   []byte
		err error
	}
	first := make(chan answer, 1)
	go func() {
		v, err := g.lookup(ctx, bucketRef{Bucket: 3}, []byte("k-first"), h.send)
		first <- answer{v, err}
	}()
	require.Equal(t, 1, <-h.started, "a quiet bucket's first lookup goes out at once")

	const n = 50
	answers := make([]chan answer, n)
	var queued sync.WaitGroup
	for i := range n {
		answers[i] = make(chan answer, 1)
		key := []byte(fmt.Sprintf("k%02d", i))
		if i == 7 {
			key = []byte("missing")
		}
		queued.Go(func() {
			v, err := g.lookup(ctx, bucketRef{Bucket: 3}, key, h.send)
			answers[i] <- answer{v, err}
		})
	}
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		q := g.buckets[bucketRef{Bucket: 3}]
		return len(q.waiting) == 1 && len(q.waiting[0].keys) == n
	}, 10*time.Second, time.Millisecond, "every key waits behind the request in flight")
	h.release <- struct{}{}
	got := <-first
	require.NoError(t, got.err)
	assert.Equal(t, "v:k-first", string(got.v))
	require.Equal(t, n, <-h.started, "the waiting keys go in one request")
	h.release <- struct{}{}
	for i := range n {
		a := <-answers[i]
		require.NoError(t, a.err)
		if i == 7 {
			assert.Nil(t, a.v, "no row")
			continue
		}
		assert.Equal(t, fmt.Sprintf("v:k%02d", i), string(a.v))
	}
	queued.Wait()
	h.mu.Lock()
	assert.Len(t, h.requests, 2)
	h.mu.Unlock()
}

// A failed request fails every key in it; a waiter whose context ends
// stops waiting while the request goes on for the others.
func TestLookupsFailureAndCancel(t *testing.T) {
	h := &heldLookups{started: make(chan int, 10), release: make(chan struct{}), err: errors.New("tablet server gone")}
	var g groupedLookups
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := g.lookup(ctx, bucketRef{Bucket: 0}, []byte("a"), h.send)
		done <- err
	}()
	<-h.started
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	other := make(chan error, 1)
	go func() {
		_, err := g.lookup(t.Context(), bucketRef{}, []byte("b"), h.send)
		other <- err
	}()
	h.release <- struct{}{} // the first request fails
	<-h.started
	h.release <- struct{}{}
	require.ErrorContains(t, <-other, "tablet server gone")
}

// Past maxLookupKeys the waiting keys go in further requests, in order.
func TestLookupsSplitPastMaxKeys(t *testing.T) {
	h := &heldLookups{started: make(chan int, 10), release: make(chan struct{})}
	var g groupedLookups
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = g.lookup(ctx, bucketRef{Bucket: 1}, []byte("first"), h.send) })
	<-h.started
	const n = maxLookupKeys + 10
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			v, err := g.lookup(ctx, bucketRef{Bucket: 1}, []byte(fmt.Sprint(i)), h.send)
			if err == nil && string(v) != fmt.Sprintf("v:%d", i) {
				err = fmt.Errorf("key %d answered %q", i, v)
			}
			errs <- err
		})
	}
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		w := g.buckets[bucketRef{Bucket: 1}].waiting
		return len(w) == 2 && len(w[0].keys)+len(w[1].keys) == n
	}, 10*time.Second, time.Millisecond)
	h.release <- struct{}{}
	assert.Equal(t, maxLookupKeys, <-h.started)
	h.release <- struct{}{}
	assert.Equal(t, 10, <-h.started)
	h.release <- struct{}{}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
