package writer

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

	mu      sync.Mutex
	used    int64
	waiters []*memoryWaiter // arrival order
	closed  bool
}

// tableMemory is one table's part of the budget (guarded by the budget's
// mutex).
type tableMemory struct {
	used int64
}

type memoryWaiter struct {
	n     int64
	table *tableMemory
	ready chan struct{} // closed when granted (or when the budget closes)
	ok    bool          // granted; read after ready is closed
}

// newMemoryBudget returns a budget of limit bytes of which one table holds
// at most tableCap (limit if tableCap is not positive or above it).
func newMemoryBudget(limit, tableCap int64) *memoryBudget {
	if tableCap <= 0 || tableCap > limit {
		tableCap = limit
	}
	return &memoryBudget{limit: limit, tableCap: tableCap}
}

// acquire reserves n bytes for table tm. It fails at once when n exceeds
// the table's share, waits up to timeout (and ctx) otherwise, and returns
// ErrBufferFull at the deadline. onWait is called once, without locks, when
// the caller starts to wait (to wake the sender: a waiter makes every batch
// ready).
func (m *memoryBudget) acquire(ctx context.Context, tm *tableMemory, n int64, timeout time.Duration, onWait func()) error {
	if n > m.tableCap {
		return fmt.Errorf("reserve %d bytes of a %d-byte buffer (%d per table): %w", n, m.limit, m.tableCap, ErrRecordTooLarge)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if m.fitsLocked(tm, n) && !m.aheadLocked(tm) {
		m.used += n
		tm.used += n
		m.mu.Unlock()
		return nil
	}
	w := &memoryWaiter{n: n, table: tm, ready: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	if onWait != nil {
		onWait()
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var cause error
	select {
	case <-w.ready:
		if w.ok {
			return nil
		}
		return ErrClosed
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timer.C:
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

func (m *memoryBudget) fitsLocked(tm *tableMemory, n int64) bool {
	return m.used+n <= m.limit && tm.used+n <= m.tableCap
}

// aheadLocked reports whether a waiter that could be granted before tm's
// request is queued: arrival order holds among those not held back by their
// table's cap.
func (m *memoryBudget) aheadLocked(tm *tableMemory) bool {
	for _, w := range m.waiters {
		if w.table == tm || w.table.used+w.n <= m.tableCap {
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

// grantLocked grants waiters in arrival order. A waiter held back by its
// table's cap is passed over (only its own table's releases can let it
// in); one held back by the whole budget stops the pass, so that big and
// small requests keep their order.
func (m *memoryBudget) grantLocked() {
	kept := m.waiters[:0]
	blocked := false
	var capped []*tableMemory // tables passed over: their later waiters too
	for _, w := range m.waiters {
		switch {
		case blocked || slices.Contains(capped, w.table):
			kept = append(kept, w)
		case w.table.used+w.n > m.tableCap:
			capped = append(capped, w.table)
			kept = append(kept, w)
		case m.used+w.n > m.limit:
			blocked = true
			kept = append(kept, w)
		default:
			m.used += w.n
			w.table.used += w.n
			w.ok = true
			close(w.ready)
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}

// close fails every waiter and every later acquire with ErrClosed.
func (m *memoryBudget) close() {
	m.mu.Lock()
	m.closed = true
	for _, w := range m.waiters {
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
