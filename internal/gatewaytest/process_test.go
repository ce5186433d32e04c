package gatewaytest

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaitPortFree: a successor waits while the port is held and goes
// ahead once it is released.
func TestWaitPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.Error(t, waitPortFree(t.Context(), port, 20*time.Millisecond), "port still held")
	released := make(chan error, 1)
	go func() { released <- waitPortFree(t.Context(), port, time.Minute) }()
	require.NoError(t, l.Close())
	require.NoError(t, <-released)
}
