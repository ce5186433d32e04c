package writer

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memoryBudget is a FIFO byte semaphore. Acquire blocks (with ctx and a
// deadline) while the budget is used up; force lets a batch that outgrew its
// reservation take the difference without blocking, so the bytes in use are
// real bytes, possibly above the limit for a moment.
type memoryBudget struct {
	limit int64

	mu      sync.Mutex
	used    int64
	waiters []*memoryWaiter // FIFO
	closed  bool
}

type memoryWaiter struct {
	n     int64
	ready chan struct{} // closed when granted (or when the budget closes)
	ok    bool          // granted; read after ready is closed
}

func newMemoryBudget(limit int64) *memoryBudget {
	return &memoryBudget{limit: limit}
}

// acquire reserves n bytes. It fails at once when n exceeds the whole budget,
// waits up to timeout (and ctx) otherwise, and returns ErrBufferFull at the
// deadline. onWait is called once, without locks, when the caller starts to
// wait (to wake the sender: a waiter makes every batch ready).
func (m *memoryBudget) acquire(ctx context.Context, n int64, timeout time.Duration, onWait func()) error {
	if n > m.limit {
		return fmt.Errorf("reserve %d bytes of a %d-byte buffer: %w", n, m.limit, ErrRecordTooLarge)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if len(m.waiters) == 0 && m.used+n <= m.limit {
		m.used += n
		m.mu.Unlock()
		return nil
	}
	w := &memoryWaiter{n: n, ready: make(chan struct{})}
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
	used := m.used
	m.mu.Unlock()
	if cause == ErrBufferFull {
		return fmt.Errorf("wait %v for %d bytes (%d of %d in use): %w", timeout, n, used, m.limit, ErrBufferFull)
	}
	return fmt.Errorf("wait for %d bytes of buffer memory: %w", n, cause)
}

// force takes n bytes (n may be negative) without waiting.
func (m *memoryBudget) force(n int64) {
	m.mu.Lock()
	m.used += n
	if n < 0 {
		m.grantLocked()
	}
	m.mu.Unlock()
}

// release returns n bytes and grants waiters in FIFO order.
func (m *memoryBudget) release(n int64) { m.force(-n) }

func (m *memoryBudget) grantLocked() {
	for len(m.waiters) > 0 {
		w := m.waiters[0]
		if m.used+w.n > m.limit {
			return
		}
		m.used += w.n
		w.ok = true
		close(w.ready)
		m.waiters = m.waiters[1:]
	}
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

func (m *memoryBudget) waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}
