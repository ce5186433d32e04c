package flusstest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

// TestBootstrapReachable runs against the real cluster of this test binary
// (FLUSS_BOOTSTRAP or one started through the script).
func TestBootstrapReachable(t *testing.T) {
	addr := Bootstrap(t)
	require.NotEmpty(t, addr)
	assert.Equal(t, addr, Bootstrap(t), "one cluster per binary")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
}

// TestStartClusterRestartTablet starts a private 1-tablet cluster through the
// script, restarts its tablet server and sends it each signal.
func TestStartClusterRestartTablet(t *testing.T) {
	// A crashed server registers again once ZooKeeper has expired its old
	// session: 6 s, not Fluss's default 60 s.
	c := StartCluster(t, ServerSetting("zookeeper.client.session-timeout", "6s"))
	require.NotEqual(t, c.Bootstrap(), "")
	ctx, cancel := context.WithTimeout(context.Background(), tabletTimeout)
	defer cancel()
	require.NoError(t, c.RestartTabletServer(ctx, 0))
	require.NoError(t, c.StopTabletServer(ctx, 0))
	require.NoError(t, c.StartTabletServer(ctx, 0))
	require.NoError(t, c.SignalTabletServer(ctx, 0, Pause))
	require.NoError(t, c.SignalTabletServer(ctx, 0, Resume))
	require.NoError(t, c.SignalTabletServer(ctx, 0, Crash))
	err := c.SignalTabletServer(ctx, 0, Resume)
	require.Error(t, err, "a crashed server cannot be resumed")
	assert.Contains(t, err.Error(), "is not running")
	require.NoError(t, c.StartTabletServer(ctx, 0))
	require.NoError(t, c.SignalTabletServer(ctx, 0, Stop))
	require.NoError(t, c.StartTabletServer(ctx, 0))
	err = c.SignalTabletServer(ctx, 0, "HUP")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KILL, TERM, STOP or CONT")
	err = c.RestartTabletServer(ctx, 5)
	require.Error(t, err, "no tablet server 5")
	assert.Contains(t, err.Error(), "has no tablet server 5")
	conn, err := net.DialTimeout("tcp", c.Bootstrap(), 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
}

// TestPyFlussRoundTrip writes and reads a log table through the pyfluss CLI.
func TestPyFlussRoundTrip(t *testing.T) {
	addr := Bootstrap(t)
	table := fmt.Sprintf("flusstest.pyfluss_%d", time.Now().UnixNano())
	PyFluss(t, addr, "create-table", "--table", table, "--buckets", "2",
		"--schema-json", `[{"name":"id","type":"bigint"},{"name":"b","type":"bytes"},{"name":"ts","type":"timestamp(6)"}]`)
	t.Cleanup(func() { PyFluss(t, addr, "drop-table", "--table", table) })

	PyFluss(t, addr, "append", "--table", table,
		"--rows-json", `[{"id":9007199254740993,"b":"AP8=","ts":"2024-01-02T03:04:05.123456"},{"id":2}]`)
	var scan struct {
		Rows []struct {
			Bucket     int32          `json:"bucket"`
			Offset     int64          `json:"offset"`
			ChangeType string         `json:"change_type"`
			Row        map[string]any `json:"row"`
		} `json:"rows"`
	}
	PyFlussJSON(t, &scan, addr, "scan-log", "--table", table)
	require.Len(t, scan.Rows, 2)
	byID := map[string]map[string]any{}
	for _, r := range scan.Rows {
		assert.Equal(t, "+A", r.ChangeType)
		byID[r.Row["id"].(json.Number).String()] = r.Row
	}
	require.Contains(t, byID, "9007199254740993")
	assert.Equal(t, "AP8=", byID["9007199254740993"]["b"])
	assert.Equal(t, "2024-01-02T03:04:05.123456000", byID["9007199254740993"]["ts"])
	require.Contains(t, byID, "2")
	assert.Nil(t, byID["2"]["b"])

	var offs struct {
		Offsets []struct {
			Bucket int32 `json:"bucket"`
			Offset int64 `json:"offset"`
		} `json:"offsets"`
	}
	PyFlussJSON(t, &offs, addr, "list-offsets", "--table", table)
	require.Len(t, offs.Offsets, 2)
	assert.Equal(t, int64(2), offs.Offsets[0].Offset+offs.Offsets[1].Offset)
}
