package accumulator

import "sync"

// busyQueues lists the queues that hold batches, so that the sender's
// drain visits those rather than every queue: with 500 tables of 4 buckets
// (and their sealed queues) a drain pass walked 4,000 queues, nearly all
// empty, and the walk was a seventh of the gateway's CPU.
//
// A queue is listed when its batch count goes from zero to one (under its
// lock, Queue.listed set by whoever lists it) and dropped lazily, by the
// next Busy that finds it empty. Queue.listed is true exactly while the
// queue is in the list (or about to be, by the appender that set it), so a
// queue that holds batches is always listed.
type busyQueues struct {
	mu     sync.Mutex
	queues []*Queue
}

// listed is called after q's batch count was raised.
func (l *busyQueues) listed(q *Queue) {
	if !q.listed.CompareAndSwap(false, true) {
		return // listed already
	}
	l.mu.Lock()
	l.queues = append(l.queues, q)
	l.mu.Unlock()
}

// Busy appends to dst the queues that may hold batches (every queue that
// does, and some that were emptied since: the caller checks) and returns
// it, in the order they became busy. The sender drains them round robin.
func (a *Accumulator) Busy(dst []*Queue) []*Queue {
	l := &a.busy
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.queues[:0]
	for _, q := range l.queues {
		if q.Empty() {
			// Unlist, then look again: an appender that raised the count
			// meanwhile either saw listed still set (then keep it here) or
			// set it itself and lists it once this returns.
			q.listed.Store(false)
			if q.Empty() || !q.listed.CompareAndSwap(false, true) {
				continue
			}
		}
		kept = append(kept, q)
		dst = append(dst, q)
	}
	clear(l.queues[len(kept):])
	l.queues = kept
	return dst
}
