package accumulator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// memoryBudget is a byte semaphore shared by every table, with a cap per
// table. Acquire blocks (with ctx and a deadline) while the budget, or the
// caller's table share, is used up; force lets a batch that outgrew its
// reservation take the difference without blocking, so the bytes in use are
// real bytes, possibly above the limit for a moment.
//
// Waiters are granted in arrival order, except that a waiter whose table is
// at its cap is passed over: a table whose Fluss writes stall fills its
// share and waits for its own batches to complete, while the writes of
// other tables go on in the rest of the budget (no head-of-line blocking
// across tables).
type memoryBudget struct {
	limit    int64
	tableCap int64 // bytes one table may hold
	// reqCap is what requests outside the writer (the Kafka frames and
	// batches being decoded, see RequestMemory) may hold; 0: none.
	reqCap int64

	mu       sync.Mutex
	used     int64
	requests tableMemory     // the requests' part
	waiters  []*memoryWaiter // arrival order
	passes   uint64          // grant passes run (see tableMemory.pass)
	closed   bool
}

// tableMemory is one table's part of the budget (guarded by the budget's
// mutex).
type tableMemory struct {
	used    int64
	waiting int // its waiters in memoryBudget.waiters
	// Of grant pass number pass: its waiters when the pass came to the
	// first of them, and how many of them the pass has visited.
	pass        uint64
	passWaiting int
	seen        int
}

type memoryWaiter struct {
	n     int64
	table *tableMemory
	ready chan struct{} // closed when granted (or when the budget closes)
	ok    bool          // granted; read after ready is closed
}

// newMemoryBudget returns a budget of limit bytes of which one table holds
// at most tableCap (limit if tableCap is not positive or above it) and the
// requests at most reqCap.
func newMemoryBudget(limit, tableCap, reqCap int64) *memoryBudget {
	if tableCap <= 0 || tableCap > limit {
		tableCap = limit
	}
	return &memoryBudget{limit: limit, tableCap: tableCap, reqCap: max(reqCap, 0)}
}

func (m *memoryBudget) isRequests(tm *tableMemory) bool { return tm == &m.requests }

func (m *memoryBudget) capOf(tm *tableMemory) int64 {
	if m.isRequests(tm) {
		return m.reqCap
	}
	return m.tableCap
}

// acquire reserves n bytes for table tm. It fails at once when n exceeds
// the table's share, waits up to timeout (and ctx) otherwise, and returns
// ErrBufferFull at the deadline. onWait is called once, without locks, when
// the caller starts to wait (to wake the sender: a waiter makes every batch
// ready). A timeout of zero or less waits as long as ctx.
func (m *memoryBudget) acquire(ctx context.Context, tm *tableMemory, n int64, timeout time.Duration, onWait func()) error {
	if n > m.capOf(tm) {
		return fmt.Errorf("reserve %d bytes of a %d-byte buffer (%d per table, %d for requests): %w", n, m.limit, m.tableCap, m.reqCap, ErrRecordTooLarge)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if m.takeNowLocked(tm, n) {
		m.mu.Unlock()
		return nil
	}
	w := &memoryWaiter{n: n, table: tm, ready: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	tm.waiting++
	m.mu.Unlock()
	if onWait != nil {
		onWait()
	}

	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	var cause error
	select {
	case <-w.ready:
		if w.ok {
			return nil
		}
		return ErrClosed
	case <-ctx.Done():
		cause = ctx.Err()
	case <-expired:
		cause = ErrBufferFull
	}
	m.mu.Lock()
	select {
	case <-w.ready: // granted or closed while we were giving up
		m.mu.Unlock()
		if w.ok {
			return nil
		}
		return ErrClosed
	default:
	}
	for i, x := range m.waiters {
		if x == w {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			tm.waiting--
			break
		}
	}
	m.grantLocked() // our removal may let the next waiter in
	used, tableUsed := m.used, tm.used
	m.mu.Unlock()
	if cause == ErrBufferFull {
		return fmt.Errorf("wait %v for %d bytes (%d of %d in use, %d of this table's %d): %w",
			timeout, n, used, m.limit, tableUsed, m.tableCap, ErrBufferFull)
	}
	return fmt.Errorf("wait for %d bytes of buffer memory: %w", n, cause)
}

// tryAcquire reserves n bytes for tm if it can without waiting.
func (m *memoryBudget) tryAcquire(tm *tableMemory, n int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.closed && m.takeNowLocked(tm, n)
}

// takeNowLocked takes n bytes for tm if they fit and no waiter goes first.
func (m *memoryBudget) takeNowLocked(tm *tableMemory, n int64) bool {
	if !m.fitsLocked(tm, n) || m.aheadLocked(tm) {
		return false
	}
	m.used += n
	tm.used += n
	return true
}

// fitsLocked reports whether n more bytes of tm fit its cap and the budget.
// The requests' bytes above their cap (decoded batches are forced in) do
// not count against the tables: the writer frees its memory by itself (its
// batches complete), so it never waits for requests that wait for it.
func (m *memoryBudget) fitsLocked(tm *tableMemory, n int64) bool {
	if tm.used+n > m.capOf(tm) {
		return false
	}
	if m.isRequests(tm) {
		return m.used+n <= m.limit
	}
	return m.used-max(m.requests.used-m.reqCap, 0)+n <= m.limit
}

// aheadLocked reports whether a waiter that goes before tm's request is
// queued: arrival order holds within a table and among the tables not held
// back by their cap, and the tables' waiters go before the requests'.
func (m *memoryBudget) aheadLocked(tm *tableMemory) bool {
	for _, w := range m.waiters {
		if w.table == tm {
			return true
		}
		if !m.isRequests(w.table) && w.table.used+w.n <= m.tableCap {
			return true
		}
		if m.isRequests(tm) && m.isRequests(w.table) {
			return true
		}
	}
	return false
}

// force takes n bytes (n may be negative) for tm without waiting.
func (m *memoryBudget) force(tm *tableMemory, n int64) {
	m.mu.Lock()
	m.used += n
	tm.used += n
	if n < 0 {
		m.grantLocked()
	}
	m.mu.Unlock()
}

// release returns n bytes of tm and grants waiters.
func (m *memoryBudget) release(tm *tableMemory, n int64) { m.force(tm, -n) }

// grantLocked grants the tables' waiters in arrival order, then, if none of
// them is left waiting for the budget, the requests'. A waiter held back by
// its table's cap is passed over (only its own table's releases can let it
// in); one held back by the whole budget stops its class's pass, so that
// big and small requests keep their order.
func (m *memoryBudget) grantLocked() {
	tablesWaiting := m.grantPassLocked(false)
	if !tablesWaiting {
		m.grantPassLocked(true)
	}
}

// grantPassLocked grants the waiters of one class (requests or tables) and
// reports whether one of them still waits for the budget (not for its cap).
//
// Thousands of producers' batches can wait at once (most of them for their
// table's cap), and every release runs a pass: the pass stops as soon as
// no waiter left could be granted in it, the rest kept as they are. Those
// are the waiters after one held back by the whole budget, and the waiters
// of the other class and of the tables found at their cap (counted with
// tableMemory.waiting).
func (m *memoryBudget) grantPassLocked(requests bool) (blocked bool) {
	m.passes++
	pass := m.passes
	kept := m.waiters[:0]
	var capped []*tableMemory // tables passed over: their later waiters too
	// Waiters not visited yet that this pass cannot grant.
	stuck := m.requests.waiting
	if requests {
		stuck = len(m.waiters) - m.requests.waiting
	}
	for i, w := range m.waiters {
		if blocked {
			kept = append(kept, m.waiters[i:]...)
			break
		}
		t := w.table
		if t.pass != pass {
			t.pass, t.passWaiting, t.seen = pass, t.waiting, 0
		}
		t.seen++
		switch {
		case m.isRequests(t) != requests:
			stuck--
			kept = append(kept, w)
		case slices.Contains(capped, t):
			stuck--
			kept = append(kept, w)
		case t.used+w.n > m.capOf(t):
			capped = append(capped, t)
			stuck += t.passWaiting - t.seen // its later waiters
			kept = append(kept, w)
		case !m.fitsLocked(t, w.n):
			blocked = true
			kept = append(kept, w)
		default:
			m.used += w.n
			t.used += w.n
			t.waiting--
			w.ok = true
			close(w.ready)
		}
		if rest := m.waiters[i+1:]; len(rest) > 0 && len(rest) == stuck {
			kept = append(kept, rest...)
			break
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
	return blocked
}

// close fails every waiter and every later acquire with ErrClosed.
func (m *memoryBudget) close() {
	m.mu.Lock()
	m.closed = true
	for _, w := range m.waiters {
		w.table.waiting--
		close(w.ready)
	}
	m.waiters = nil
	m.mu.Unlock()
}

func (m *memoryBudget) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// tableInUse is the bytes table tm holds.
func (m *memoryBudget) tableInUse(tm *tableMemory) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return tm.used
}

func (m *memoryBudget) waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}

// RequestMemory is the part of the accumulator's buffer memory that
// requests feeding it hold while they are read and decoded (the gateway
// passes it to its Kafka server), so that one budget bounds the request
// frames, their decoded batches and the rows buffered for Fluss. Requests
// hold at most Config.RequestMemory of it, and wait while appends wait:
// appends go first, since completing their batches is what lets the
// requests go on. It is safe for concurrent use.
type RequestMemory struct {
	m    *memoryBudget
	wake func() // a waiting request makes every batch ready, as a waiting append does
}

// RequestMemory returns the requests' part of the buffer memory, or nil
// when Config.RequestMemory is 0.
func (a *Accumulator) RequestMemory() *RequestMemory {
	if a.mem.reqCap == 0 {
		return nil
	}
	return &RequestMemory{m: a.mem, wake: a.wake}
}

// TryAcquire reserves n bytes if they are free now.
func (r *RequestMemory) TryAcquire(n int64) bool { return r.m.tryAcquire(&r.m.requests, n) }

// Acquire reserves n bytes, waiting until they are free or ctx ends. It
// fails at once when n exceeds Config.RequestMemory, and with ErrClosed
// once the accumulator is closed.
func (r *RequestMemory) Acquire(ctx context.Context, n int64) error {
	return r.m.acquire(ctx, &r.m.requests, n, 0, r.wake)
}

// Force takes n bytes without waiting, over the limit if need be (a
// request already admitted that decodes its batches).
func (r *RequestMemory) Force(n int64) { r.m.force(&r.m.requests, n) }

// Release returns n bytes.
func (r *RequestMemory) Release(n int64) { r.m.release(&r.m.requests, n) }
