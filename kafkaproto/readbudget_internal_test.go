package kafkaproto

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

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
