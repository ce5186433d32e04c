package kafkaproto

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// readBudget bounds the memory of the request frames being read and handled
// over all connections (Config.MaxReadBytes). It charges what has arrived,
// not what a frame's size field claims, so a connection that declares
// 100 MiB and sends one byte a second holds 64 KiB of it, not 100 MiB:
//
//   - a frame of at most readAhead bytes reserves its size before its body
//     is read (the most one connection can reserve ahead of its bytes);
//   - a larger frame reserves as its buffer grows, the buffer doubling each
//     time it is full, so never more than max(received, 64 KiB) ahead.
//
// Admission is fair in size: every reservation asks for at most readAhead
// bytes (a large frame's growth is reserved in such pieces), so the
// semaphore's FIFO order makes a small request wait behind at most 1 MiB of
// asks, never behind a 100 MiB one.
//
// A large frame waits for its pieces with its read deadline running. If
// partly read large frames have taken all the memory (more large requests
// arriving at once than MaxReadBytes holds), the ones that cannot go on are
// disconnected at their deadline, releasing memory for the others, instead
// of waiting for each other forever.
type readBudget struct {
	mem       *semaphore.Weighted
	readAhead int64
	// inUse is the memory reserved, for the gauge and tests.
	inUse atomic.Int64
}

// largeFrameStep is a large frame's first buffer (and smallest growth).
const largeFrameStep = 64 << 10

func newReadBudget(maxReadBytes int64, maxFrameBytes int) *readBudget {
	return &readBudget{
		mem:       semaphore.NewWeighted(maxReadBytes),
		readAhead: min(1<<20, int64(maxFrameBytes)),
	}
}

// tryAcquire reserves n bytes if they are free now.
func (b *readBudget) tryAcquire(n int64) bool {
	if !b.mem.TryAcquire(n) {
		return false
	}
	b.inUse.Add(n)
	return true
}

// acquire reserves n (at most readAhead) bytes, waiting until they are free
// or ctx ends.
func (b *readBudget) acquire(ctx context.Context, n int64) error {
	if err := b.mem.Acquire(ctx, n); err != nil {
		return err
	}
	b.inUse.Add(n)
	return nil
}

func (b *readBudget) release(n int64) {
	if n > 0 {
		b.inUse.Add(-n)
		b.mem.Release(n)
	}
}
