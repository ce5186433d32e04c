package kafkaproto

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type readResult struct {
	frame   []byte
	charged int64
	err     error
}

// newPipeConn is a conn on one end of a pipe that has already sent a
// request (no first-request cap); the other end is returned.
func newPipeConn(t *testing.T, cfg Config) (*Server, *conn, net.Conn) {
	t.Helper()
	s, err := New(cfg, fuzzBackend{}, WithRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = s.Close() })
	c := newConn(s, a)
	c.spoke = true
	return s, c, b
}

func readAsync(c *conn) chan readResult {
	done := make(chan readResult, 1)
	go func() {
		f, charged, err := c.readRequest()
		done <- readResult{f, charged, err}
	}()
	return done
}

// TestLargeFrameReservesWhatArrived: a frame above the 1 MiB read-ahead
// holds budget for what it received (at most twice that, or 64 KiB), not
// for its declared size, and gives it all back when the client goes away.
func TestLargeFrameReservesWhatArrived(t *testing.T) {
	t.Parallel()
	s, c, client := newPipeConn(t, Config{})
	const size = 10 << 20
	done := readAsync(c)
	_, err := client.Write(binary.BigEndian.AppendUint32(nil, size))
	require.NoError(t, err)
	received := 0
	for _, upTo := range []int{100, 64 << 10, 300 << 10, 3 << 20} {
		_, err := client.Write(make([]byte, upTo-received))
		require.NoError(t, err)
		received = upTo
		inUse := s.budget.inUse.Load()
		assert.LessOrEqual(t, inUse, int64(max(2*received, largeFrameStep)), "after %d of %d bytes", received, size)
	}
	require.NoError(t, client.Close())
	r := <-done
	require.ErrorIs(t, r.err, io.ErrUnexpectedEOF)
	assert.Zero(t, s.budget.inUse.Load())
}

// TestFrameBudgetCharges: a complete large frame holds exactly its size
// once read; a small one reserves its size before its body arrives (the
// most one connection reserves ahead).
func TestFrameBudgetCharges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		size int
		sent int
	}{
		{"large frame fully read", 3<<20 + 5, 3<<20 + 5},
		{"small frame reserved ahead", 512 << 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, c, client := newPipeConn(t, Config{})
			done := readAsync(c)
			_, err := client.Write(binary.BigEndian.AppendUint32(nil, uint32(tc.size)))
			require.NoError(t, err)
			_, err = client.Write(make([]byte, tc.sent))
			require.NoError(t, err)
			if tc.sent == tc.size {
				r := <-done
				require.NoError(t, r.err)
				assert.Len(t, r.frame, tc.size)
				assert.Equal(t, int64(tc.size), r.charged)
				assert.Equal(t, int64(tc.size), s.budget.inUse.Load())
				s.budget.release(r.charged)
				return
			}
			// A pipe write returns once read, and the body is read only
			// after its reservation.
			assert.Equal(t, int64(tc.size), s.budget.inUse.Load())
			require.NoError(t, client.Close())
			r := <-done
			require.True(t, errors.Is(r.err, io.ErrUnexpectedEOF), "err %v", r.err)
			assert.Zero(t, s.budget.inUse.Load())
		})
	}
}

// TestMemoryLimit: the private budget grants in arrival order, lets Force
// go past its limit, and holds later reservations until enough is back.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	m := newMemoryLimit(100)
	require.True(t, m.TryAcquire(60))
	m.Force(80) // 140 of 100
	assert.False(t, m.TryAcquire(1))

	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- m.Acquire(t.Context(), 50) }()
	waitWaiters(t, m, 1)
	go func() { second <- m.Acquire(t.Context(), 10) }()
	waitWaiters(t, m, 2)
	assert.False(t, m.TryAcquire(1), "no overtaking the waiters")

	m.Release(60) // 80: the first (50) does not fit yet, nor may the second pass it
	assert.Equal(t, 2, waiters(m))
	m.Release(40) // 40: both fit, in order
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	assert.Equal(t, int64(100), used(m))

	ctx, cancel := context.WithCancel(t.Context())
	blocked := make(chan error, 1)
	go func() { blocked <- m.Acquire(ctx, 60) }()
	waitWaiters(t, m, 1)
	behind := make(chan error, 1)
	go func() { behind <- m.Acquire(t.Context(), 30) }()
	waitWaiters(t, m, 2)
	m.Release(40) // 60 used: the head (60) does not fit, the 30 behind it waits
	cancel()
	require.ErrorIs(t, <-blocked, context.Canceled)
	require.NoError(t, <-behind, "the head giving up lets the next one in")
	assert.Equal(t, int64(90), used(m))

	assert.Error(t, m.Acquire(t.Context(), 101), "more than the limit can never be granted")
	m.Release(90)
	assert.Zero(t, used(m))
	assert.Panics(t, func() { m.Release(1) })
}

func used(m *memoryLimit) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

func waiters(m *memoryLimit) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waiters.Len()
}

// waitWaiters waits until n reservations are queued.
func waitWaiters(t *testing.T, m *memoryLimit, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for waiters(m) != n {
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("%d waiters, want %d", waiters(m), n)
		}
	}
}

// TestDecodedBatchCharge: a batch the server decodes is charged what it
// pins (the decompressed records, or the wire bytes for codec none, plus
// the decoded records) until Release, once; a Decoder charges nothing.
func TestDecodedBatchCharge(t *testing.T) {
	t.Parallel()
	const plain = 100 << 10
	recs := []Record{{Value: make([]byte, plain)}, {Key: []byte("k"), Headers: []Header{{Key: "h"}}}}
	for _, codec := range []Codec{CodecNone, CodecLZ4, CodecZstd, CodecGzip, CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			s, err := New(Config{}, fuzzBackend{}, WithRegisterer(prometheus.NewRegistry()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			data := TestBatch{ProducerID: -1, BaseSequence: -1, Codec: codec, Records: recs}.Build()
			b, err := s.dec.decode(data, 9)
			require.NoError(t, err)
			charged := s.budget.inUse.Load()
			assert.GreaterOrEqual(t, charged, int64(plain)+2*decodedRecordBytes)
			assert.Equal(t, b.MemoryBytes()+int64(len(data))*boolInt(codec == CodecNone), charged)
			pp := &PartitionProduce{Records: b.Records, batch: b}
			pp.Release()
			assert.Zero(t, s.budget.inUse.Load())
			pp.Release()
			assert.Zero(t, s.budget.inUse.Load(), "released once")

			d, err := NewDecoder(1 << 20)
			require.NoError(t, err)
			defer d.Close()
			b, err = d.Decode(data, 9)
			require.NoError(t, err)
			assert.Zero(t, b.charge.n, "a Decoder has no budget")
			b.Release()
		})
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestDroppedBatchChargeCollected: a batch nobody releases gives its
// charge back once it is garbage-collected, and is counted.
func TestDroppedBatchChargeCollected(t *testing.T) {
	t.Parallel()
	s, err := New(Config{}, fuzzBackend{}, WithRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	decodeAndDrop(t, s)
	require.Positive(t, s.budget.inUse.Load())
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for s.budget.inUse.Load() != 0 {
		runtime.GC()
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("%d bytes still charged", s.budget.inUse.Load())
		}
	}
	assert.Equal(t, int64(1), s.budget.collected.Load())
}

func decodeAndDrop(t *testing.T, s *Server) {
	t.Helper()
	data := TestBatch{ProducerID: -1, BaseSequence: -1, Codec: CodecLZ4, Records: SimpleRecords(10)}.Build()
	_, err := s.dec.decode(data, 9)
	require.NoError(t, err)
}
