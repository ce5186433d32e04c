package fluss

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reach succeeds against a listener that never answers a request (a
// server stalled behind a fault elsewhere is still reachable) and fails
// where nothing listens; it leaves no connection in the pool.
func TestReach(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_ = nc.Close()
		}
	}()
	c, err := NewClient(Config{Bootstrap: []string{ln.Addr().String()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	require.NoError(t, c.Reach(t.Context(), ln.Addr().String()))
	<-accepted
	c.poolMu.Lock()
	assert.Empty(t, c.conns, "no pooled connection")
	c.poolMu.Unlock()

	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	assert.Error(t, c.Reach(t.Context(), addr), "nothing listens")
}
