package gatewaytest

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestTookChosenPort: only a bind failure on a port the harness chose
// makes a start worth retrying.
func TestTookChosenPort(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	proc := func(log string) *Process {
		path := filepath.Join(t.TempDir(), "gateway.log")
		require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
		return &Process{LogPath: path, kafkaPort: 4001, adminPort: 4002, exited: exited}
	}
	const inUse = "bind: address already in use"
	admin := proc(`level=ERROR msg=start err="listen admin 127.0.0.1:4002: listen tcp 127.0.0.1:4002: ` + inUse + `"`)
	assert.True(t, admin.tookChosenPort(false), "admin port is always chosen")
	kafka := proc(`level=ERROR msg=start err="listen 127.0.0.1:4001 (plain): listen tcp 127.0.0.1:4001: ` + inUse + `"`)
	assert.True(t, kafka.tookChosenPort(true))
	assert.False(t, kafka.tookChosenPort(false), "a Kafka port the caller gave is not retried")
	other := proc(`level=ERROR msg=start err="route t: table db.t does not exist"`)
	assert.False(t, other.tookChosenPort(true))

	running := &Process{LogPath: admin.LogPath, adminPort: 4002, exited: make(chan struct{})}
	assert.False(t, running.tookChosenPort(true), "a process that has not exited")
}
