package kafkaproto

import (
	"container/list"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// MemoryBudget is the memory that request frames and the record batches
// decoded from them are charged to (Config.Memory). Every method must be
// safe for concurrent use; n is always positive, and bytes may be released
// in other amounts than they were taken (the sums balance).
type MemoryBudget interface {
	// TryAcquire reserves n bytes if they are free now, without waiting.
	TryAcquire(n int64) bool
	// Acquire reserves n bytes, waiting until they are free or ctx ends;
	// on error nothing is reserved.
	Acquire(ctx context.Context, n int64) error
	// Force takes n bytes at once, even past the limit: they are already
	// in memory. Reservations after it wait until enough is released.
	Force(n int64)
	// Release gives back n bytes. It must not block: it runs on connection
	// goroutines, the sink's, and the runtime's cleanup goroutine.
	Release(n int64)
}

// readBudget charges the server's MemoryBudget for the request frames
// being read and handled over all connections, and for the batches decoded
// from them until they are released. For frames it charges what has
// arrived, not what a frame's size field claims, so a connection that
// declares 100 MiB and sends one byte a second holds 64 KiB of it, not
// 100 MiB:
//
//   - a frame of at most readAhead bytes reserves its size before its body
//     is read (the most one connection can reserve ahead of its bytes);
//   - a larger frame reserves as its buffer grows, the buffer doubling each
//     time it is full, so never more than max(received, 64 KiB) ahead.
//
// Admission is fair in size: every reservation asks for at most readAhead
// bytes (a large frame's growth is reserved in such pieces), so a FIFO
// budget (the default one is) makes a small request wait behind at most
// 1 MiB of asks, never behind a 100 MiB one.
//
// A frame's reservation is released once it is handled. A decoded batch is
// charged with force when it is decoded (see batchDecoder.decode): the
// frame is admitted already, and waiting then could deadlock. Its charge
// goes back with DecodedBatch.Release, or, for a batch a sink drops
// without releasing it, once the garbage collector finds it unreachable.
// Until then the next frames wait: a sink keeping batches stops the reads.
//
// A large frame waits for its pieces with its read deadline running. If
// partly read large frames have taken all the memory (more large requests
// arriving at once than the budget holds), the ones that cannot go on are
// disconnected at their deadline, releasing memory for the others, instead
// of waiting for each other forever.
type readBudget struct {
	mem       MemoryBudget
	readAhead int64
	// inUse is what this server has charged to mem and not released, for
	// the gauge and tests.
	inUse atomic.Int64
	// collected counts decoded batches whose charge the garbage collector
	// returned (a sink dropped them without Release).
	collected atomic.Int64
}

// largeFrameStep is a large frame's first buffer (and smallest growth).
const largeFrameStep = 64 << 10

// newReadBudget charges mem, or a private budget of maxReadBytes when mem
// is nil.
func newReadBudget(mem MemoryBudget, maxReadBytes int64, maxFrameBytes int) *readBudget {
	if mem == nil {
		mem = newMemoryLimit(maxReadBytes)
	}
	return &readBudget{mem: mem, readAhead: min(1<<20, int64(maxFrameBytes))}
}

// tryAcquire reserves n bytes if they are free now.
func (b *readBudget) tryAcquire(n int64) bool {
	if n <= 0 {
		return true
	}
	if !b.mem.TryAcquire(n) {
		return false
	}
	b.inUse.Add(n)
	return true
}

// acquire reserves n (at most readAhead) bytes, waiting until they are free
// or ctx ends.
func (b *readBudget) acquire(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if err := b.mem.Acquire(ctx, n); err != nil {
		return err
	}
	b.inUse.Add(n)
	return nil
}

// force charges n bytes without waiting.
func (b *readBudget) force(n int64) {
	if n > 0 {
		b.inUse.Add(n)
		b.mem.Force(n)
	}
}

func (b *readBudget) release(n int64) {
	if n > 0 {
		b.inUse.Add(-n)
		b.mem.Release(n)
	}
}

// batchCharge is what a decoded batch was charged, for the cleanup that
// returns it if the batch is dropped without Release. It must not point to
// the batch, or the batch would never be collected.
type batchCharge struct {
	budget *readBudget
	n      int64
}

// chargeBatch charges n bytes for batch until its Release, or until it is
// garbage-collected if nobody calls that.
func (b *readBudget) chargeBatch(batch *DecodedBatch, n int64) {
	if n <= 0 {
		return
	}
	b.force(n)
	batch.charge = batchCharge{budget: b, n: n}
	batch.cleanup = runtime.AddCleanup(batch, releaseCollected, batch.charge)
}

// releaseCollected returns the charge of a batch nobody released.
func releaseCollected(c batchCharge) {
	c.budget.collected.Add(1)
	c.budget.release(c.n)
}

// memoryLimit is the private MemoryBudget used without Config.Memory: a
// weighted semaphore of limit bytes, first come first served, whose Force
// may take it past the limit.
type memoryLimit struct {
	limit int64

	// mu guards the fields below.
	mu      sync.Mutex
	used    int64
	waiters list.List // *memoryWaiter, oldest first
}

type memoryWaiter struct {
	n     int64
	ready chan struct{} // closed once the bytes are granted
}

func newMemoryLimit(limit int64) *memoryLimit {
	return &memoryLimit{limit: limit}
}

// TryAcquire implements MemoryBudget. It never overtakes a waiter.
func (m *memoryLimit) TryAcquire(n int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiters.Len() > 0 || m.used+n > m.limit {
		return false
	}
	m.used += n
	return true
}

// Acquire implements MemoryBudget. An ended ctx fails it even if the bytes
// are free.
func (m *memoryLimit) Acquire(ctx context.Context, n int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.waiters.Len() == 0 && m.used+n <= m.limit {
		m.used += n
		m.mu.Unlock()
		return nil
	}
	if n > m.limit {
		m.mu.Unlock()
		return fmt.Errorf("reserve %d bytes from a memory budget of %d", n, m.limit)
	}
	w := &memoryWaiter{n: n, ready: make(chan struct{})}
	el := m.waiters.PushBack(w)
	m.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ready:
		// Granted as ctx ended: give it back, the caller gives up.
		m.used -= n
	default:
		m.waiters.Remove(el)
	}
	// Removing the head (or returning its bytes) may let the next ones in.
	m.grantLocked()
	return ctx.Err()
}

// Force implements MemoryBudget.
func (m *memoryLimit) Force(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used += n
}

// Release implements MemoryBudget.
func (m *memoryLimit) Release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
	if m.used < 0 {
		panic(fmt.Sprintf("kafkaproto: memory budget released %d bytes more than it holds", -m.used))
	}
	m.grantLocked()
}

// grantLocked hands free bytes to the waiters in arrival order, stopping
// at the first that does not fit, so a large ask is not starved by small
// ones behind it.
func (m *memoryLimit) grantLocked() {
	for el := m.waiters.Front(); el != nil; el = m.waiters.Front() {
		w := el.Value.(*memoryWaiter)
		if m.used+w.n > m.limit {
			return
		}
		m.used += w.n
		m.waiters.Remove(el)
		close(w.ready)
	}
}
