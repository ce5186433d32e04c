package fluss

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// A write waiting on a tablet server that stopped answering (a paused
// process) keeps waiting while the cluster still lists the server, and
// fails with ErrConnectionClosed (retriable: the sender retries on the new
// leader) once metadata drops it (Fluss expired its ZooKeeper session and
// moved its buckets), long before its request timeout. A write waiting as
// long on another server (a leader waiting for the gone server as its
// follower) is failed for a retry too; that server's connection stays.
func TestWriteToSilentServerFailsOnceItLeftTheCluster(t *testing.T) {
	silent := newTestServer(t, func(*testServerConn, frame.Request) {})  // reads, never answers
	waiting := newTestServer(t, func(*testServerConn, frame.Request) {}) // its writes wait for a follower
	var listed atomic.Bool
	listed.Store(true)
	var metadataCalls atomic.Int32
	var coord *testServer
	coord = newTestServer(t, func(sc *testServerConn, req frame.Request) {
		require.Equal(t, apiGetMetadata, req.APIKey)
		metadataCalls.Add(1)
		ch, cp := splitTestAddr(t, coord.addr())
		resp := &pb.MetadataResponse{CoordinatorServer: &pb.PbServerNode{NodeId: proto.Int32(0), Host: proto.String(ch), Port: proto.Int32(cp)}}
		wh, wp := splitTestAddr(t, waiting.addr())
		resp.TabletServers = []*pb.PbServerNode{{NodeId: proto.Int32(2), Host: proto.String(wh), Port: proto.Int32(wp)}}
		if listed.Load() {
			sh, sp := splitTestAddr(t, silent.addr())
			resp.TabletServers = append(resp.TabletServers, &pb.PbServerNode{NodeId: proto.Int32(1), Host: proto.String(sh), Port: proto.Int32(sp)})
		}
		sc.reply(frame.SuccessResponse, req.RequestID, resp)
	})
	const requestTimeout = 5 * time.Minute // a failure by timeout would be a different error
	c := newTestClient(t, coord.addr(), Config{RequestTimeout: requestTimeout})
	require.NoError(t, c.refreshCluster(t.Context()))

	write := func(server int32) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.ProduceLog(t.Context(), server, &ProduceLogRequest{TableID: 42, Acks: -1,
				Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: []byte{1}}}})
			done <- err
		}()
		return done
	}
	done, other := write(1), write(2)

	// Still listed: checked at least twice, and still waiting.
	require.Eventually(t, func() bool { return metadataCalls.Load() >= 3 }, time.Minute, 10*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the write ended while its server was still in the cluster: %v", err)
	default:
	}

	listed.Store(false)
	// Both fail for a retry, the first as its server's connection closed,
	// the other as a timeout of that write alone.
	for _, w := range []struct {
		done chan error
		want error
	}{{done, ErrConnectionClosed}, {other, ErrRequestTimeout}} {
		select {
		case err := <-w.done:
			require.Error(t, err)
			assert.ErrorIs(t, err, w.want)
			assert.Contains(t, err.Error(), "left the cluster")
			assert.True(t, IsRetriable(err), "%v", err)
		case <-time.After(requestTimeout / 2):
			t.Fatalf("a write still waits (%v) after its server or its follower left the cluster", w.want)
		}
	}
	c.poolMu.Lock()
	slot := c.conns[waiting.addr()]
	c.poolMu.Unlock()
	require.NotNil(t, slot)
	assert.True(t, slot.c.alive(), "the other server's connection stays")
	assert.Len(t, waiting.accepts, 1, "one connection to the other server, never redialled")
}

// A coordinator that has just started answers every request with
// UNKNOWN_SERVER_ERROR for seconds; metadata is then read from the next
// server instead of failing (the readiness probe and every refresh depend
// on it). An answer about the request itself is returned as is.
func TestMetadataSkipsServerNotServingYet(t *testing.T) {
	var code atomic.Int32
	code.Store(-1)
	starting := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		sc.reply(frame.ErrorResponse, req.RequestID, &pb.ErrorResponse{ErrorCode: proto.Int32(code.Load()),
			ErrorMessage: proto.String("java.lang.IllegalStateException: CoordinatorEventProcessor is not initialized yet.")})
	})
	var served atomic.Int32
	serving := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		served.Add(1)
		h, p := splitTestAddr(t, sc.nc.LocalAddr().String())
		sc.reply(frame.SuccessResponse, req.RequestID, &pb.MetadataResponse{
			TabletServers: []*pb.PbServerNode{{NodeId: proto.Int32(1), Host: proto.String(h), Port: proto.Int32(p)}}})
	})
	c, err := NewClient(Config{Bootstrap: []string{starting.addr(), serving.addr()}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })

	require.NoError(t, c.RefreshMetadata(t.Context()))
	assert.Equal(t, int32(1), served.Load(), "read from the next server")

	code.Store(7) // TABLE_NOT_EXIST: about the request
	err = c.RefreshMetadata(t.Context())
	require.ErrorIs(t, err, ErrTableNotExist)
	assert.Equal(t, int32(1), served.Load(), "not asked again")
}
