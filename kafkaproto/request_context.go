package kafkaproto

import (
	"context"
	"sync"
	"time"
)

// requestContext is a Produce request's context: the connection's context
// with the request's deadline. context.WithDeadline arms a timer and joins
// its parent's children for every request, 12 % of the extra CPU that 200
// small producers cost over 10 at the same record rate. The sink reads the
// deadline on every request but waits on the context only when it must (a
// full memory budget, a queued batch), so the deadline's timer is armed by
// the first Done alone.
type requestContext struct {
	parent   context.Context
	deadline time.Time

	mu       sync.Mutex
	timed    context.Context // made by the first Done
	cancel   context.CancelFunc
	released bool
}

func newRequestContext(parent context.Context, deadline time.Time) *requestContext {
	return &requestContext{parent: parent, deadline: deadline}
}

func (r *requestContext) Deadline() (time.Time, bool) { return r.deadline, true }

func (r *requestContext) Value(key any) any { return r.parent.Value(key) }

func (r *requestContext) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timed == nil {
		r.timed, r.cancel = context.WithDeadline(r.parent, r.deadline)
		if r.released {
			r.cancel()
		}
	}
	return r.timed.Done()
}

// Err agrees with what Done would report: a released context is canceled,
// then the parent's error, then the deadline's.
func (r *requestContext) Err() error {
	r.mu.Lock()
	timed, released := r.timed, r.released
	r.mu.Unlock()
	switch {
	case timed != nil:
		return timed.Err()
	case released:
		return context.Canceled
	}
	if err := r.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(r.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// release ends the context, as the CancelFunc of context.WithDeadline does.
func (r *requestContext) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	if r.cancel != nil {
		r.cancel()
	}
}
