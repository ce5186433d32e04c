package fluss

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// newClusterClient returns a client of the real cluster, closed at cleanup.
func newClusterClient(t *testing.T) *Client {
	t.Helper()
	addr := flusstest.Bootstrap(t)
	c, err := NewClient(Config{Bootstrap: strings.Split(addr, ","), RequestTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// testContext returns a context bounded for one integration test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// uniqueName returns a Fluss-valid name unique to this run.
func uniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// newTestDatabase creates a database dropped (with its tables) at cleanup.
func newTestDatabase(t *testing.T, c *Client) string {
	t.Helper()
	name := uniqueName("rpc")
	require.NoError(t, c.CreateDatabase(testContext(t), name, false))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.DropDatabase(ctx, name, true, true))
	})
	return name
}
