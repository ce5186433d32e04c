package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/internal/metrictest"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// TestConnectionLimitsWiring: kafka.max_connections_per_ip counts a client
// address over every listener together, listeners[].max_connections each
// listener on its own, and both are counted under the listener's name.
func TestConnectionLimitsWiring(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	// Two loopback addresses, since two listeners may not share a bind;
	// the client always dials from 127.0.0.1.
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners:
  - {name: a, bind: '127.0.0.1:0', max_connections: 5}
  - {name: b, bind: '127.0.0.2:0', max_connections: 1}
kafka: {max_connections_per_ip: 2}
admin: {address: ''}
fluss: {bootstrap: ['%s']}
routes: [{topic: events, table: db.t, value: {format: raw, column: payload}}]
`, cl.Bootstrap())))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)

	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: time.Minute}
	dial := func(listener int) net.Conn {
		nc, err := dialer.DialContext(ctx, "tcp", g.kafkaListeners[listener].Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = nc.Close() })
		return nc
	}
	served := func(nc net.Conn) {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 2
		assert.Equal(t, int16(0), kafkaRoundTrip(t, nc, 1, req).(*kmsg.ApiVersionsResponse).ErrorCode)
	}
	served(dial(1)) // b is full now
	served(dial(0)) // and 127.0.0.1 at its limit, over both listeners

	refused := dial(0)
	require.NoError(t, refused.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = io.Copy(io.Discard, refused)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "a's second connection is refused: the address has one on b")
	assert.Equal(t, 1.0, metrictest.Value(t, g.reg, "fluss_gateway_kafka_connections_refused_total", "listener", "a", "reason", "per_ip"))

	require.Eventually(t, func() bool {
		return metrictest.Value(t, g.reg, "fluss_gateway_kafka_listener_full_total", "listener", "b") == 1
	}, time.Minute, 5*time.Millisecond, "b is at its max_connections")
	assert.Zero(t, metrictest.Value(t, g.reg, "fluss_gateway_kafka_listener_full_total", "listener", "a"), "a counts its own connections only")
}

// TestReloadKeepsConnectionLimits: the connection limits are not
// reloaded: a reload that changes them warns that they apply after a
// restart, and the limits in force stay.
func TestReloadKeepsConnectionLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	write := func(perIP int) {
		doc := routeConfig(cl.Bootstrap(), "events", "db.t") + fmt.Sprintf("kafka: {max_connections_per_ip: %d}\n", perIP)
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	}
	write(3)
	g, h := loadedGateway(t, ctx, path)
	inForce := g.set.connLimits

	write(1)
	require.True(t, g.Reload(ctx, path), "the routes still reload")
	assert.True(t, slices.ContainsFunc(h.lines(slog.LevelWarn), func(w string) bool { return strings.Contains(w, "after a restart") }),
		"a changed connection limit needs a restart")
	assert.Same(t, inForce, g.set.connLimits)
	want, err := kafkaproto.NewConnectionLimits(3, nil)
	require.NoError(t, err)
	assert.Equal(t, want, g.set.connLimits, "still the start-up limits")
}
