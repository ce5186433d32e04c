package fluss

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

func bucketMeta(id int32, leader *int32) *pb.PbBucketMetadata {
	return &pb.PbBucketMetadata{BucketId: proto.Int32(id), LeaderId: leader, ReplicaId: []int32{1, 2}}
}

func TestLeadersOf(t *testing.T) {
	got := leadersOf([]*pb.PbBucketMetadata{
		bucketMeta(2, proto.Int32(7)),
		bucketMeta(0, proto.Int32(5)),
		bucketMeta(1, nil), // no leader elected yet
		bucketMeta(-3, proto.Int32(1)),
		bucketMeta(1<<20, proto.Int32(1)), // hostile id: ignored
	})
	assert.Equal(t, []int32{5, -1, 7}, got)
}

// metadataServer answers GET_METADATA for one table "db.t" (id 42, 2
// buckets) and its partition "p1" (id 9), with the leader of bucket 1 taken
// from leader1; it counts the metadata requests naming the table.
type metadataServer struct {
	*testServer
	leader1  atomic.Int32 // -1 = none
	requests atomic.Int32
}

func newMetadataServer(t *testing.T) *metadataServer {
	ms := &metadataServer{}
	ms.leader1.Store(-1)
	ms.testServer = newTestServer(t, func(sc *testServerConn, req frame.Request) {
		require.Equal(t, apiGetMetadata, req.APIKey)
		var in pb.MetadataRequest
		require.NoError(t, proto.Unmarshal(req.Payload, &in))
		host, port := splitTestAddr(t, ms.addr())
		resp := &pb.MetadataResponse{
			CoordinatorServer: &pb.PbServerNode{NodeId: proto.Int32(0), Host: proto.String(host), Port: proto.Int32(port)},
			TabletServers: []*pb.PbServerNode{
				{NodeId: proto.Int32(1), Host: proto.String(host), Port: proto.Int32(port)},
				{NodeId: proto.Int32(2), Host: proto.String(host), Port: proto.Int32(port)},
			},
		}
		var leader *int32
		if l := ms.leader1.Load(); l >= 0 {
			leader = proto.Int32(l)
		}
		for _, p := range in.GetTablePath() {
			if p.GetDatabaseName() != "db" || p.GetTableName() != "t" {
				sc.reply(frame.ErrorResponse, req.RequestID, &pb.ErrorResponse{ErrorCode: proto.Int32(7)})
				return
			}
			ms.requests.Add(1)
			resp.TableMetadata = append(resp.TableMetadata, &pb.PbTableMetadata{
				TablePath: p, TableId: proto.Int64(42), SchemaId: proto.Int32(1), TableJson: []byte("{}"),
				CreatedTime: proto.Int64(1), ModifiedTime: proto.Int64(1),
				BucketMetadata: []*pb.PbBucketMetadata{bucketMeta(0, proto.Int32(1)), bucketMeta(1, leader)},
			})
		}
		if len(in.GetPartitionsId()) > 0 || len(in.GetPartitionsPath()) > 0 {
			resp.PartitionMetadata = append(resp.PartitionMetadata, &pb.PbPartitionMetadata{
				TableId: proto.Int64(42), PartitionName: proto.String("p1"), PartitionId: proto.Int64(9),
				BucketMetadata: []*pb.PbBucketMetadata{bucketMeta(0, proto.Int32(2)), bucketMeta(1, proto.Int32(2))},
			})
		}
		sc.reply(frame.SuccessResponse, req.RequestID, resp)
	})
	return ms
}

func TestBucketLeaderFromMetadata(t *testing.T) {
	ms := newMetadataServer(t)
	c := newTestClient(t, ms.addr(), Config{})
	ctx := t.Context()
	path := TablePath{"db", "t"}

	_, err := c.BucketLeader(ctx, 42, NoPartition, 0)
	require.Error(t, err, "table id unknown before any metadata about it")

	require.NoError(t, c.RefreshMetadata(ctx, path))
	require.Equal(t, int32(1), ms.requests.Load())

	n, err := c.BucketLeader(ctx, 42, NoPartition, 0)
	require.NoError(t, err)
	assert.Equal(t, int32(1), n.ID)
	assert.Equal(t, int32(1), ms.requests.Load(), "served from the cache")

	// bucket 1 has no leader: one refresh, then ErrNoLeader (retriable)
	_, err = c.BucketLeader(ctx, 42, NoPartition, 1)
	require.ErrorIs(t, err, ErrNoLeader)
	assert.True(t, IsRetriable(err))
	assert.Equal(t, int32(2), ms.requests.Load())

	// the leader is elected: the next call refreshes and finds it
	ms.leader1.Store(2)
	n, err = c.BucketLeader(ctx, 42, NoPartition, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(2), n.ID)
	assert.Equal(t, int32(3), ms.requests.Load())

	// leader error: invalidate, next call refreshes
	ms.leader1.Store(1)
	c.InvalidateTableMetadata(42)
	n, err = c.BucketLeader(ctx, 42, NoPartition, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(1), n.ID)
	assert.Equal(t, int32(4), ms.requests.Load())

	// partitions: by id
	n, err = c.BucketLeader(ctx, 42, 9, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(2), n.ID)

	// unknown table: typed error for the whole request
	require.ErrorIs(t, c.RefreshMetadata(ctx, TablePath{"db", "nope"}), ErrTableNotExist)

	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	assert.Len(t, servers, 2)
	co, err := c.Coordinator(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(0), co.ID)
}

func TestSnapshotIsCopyOnWrite(t *testing.T) {
	c, err := NewClient(Config{Bootstrap: []string{"127.0.0.1:1"}})
	require.NoError(t, err)
	before := c.meta.Load()
	c.update(func(s *clusterSnapshot) {
		s.leaders[physicalKey{1, NoPartition}] = []int32{3}
		s.servers[3] = ServerNode{ID: 3, Host: "h", Port: 1}
	})
	after := c.meta.Load()
	assert.Empty(t, before.leaders, "published snapshots never change")
	n, ok := after.leader(physicalKey{1, NoPartition}, 0)
	require.True(t, ok)
	assert.Equal(t, "h:1", n.Addr())
	c.InvalidateTableMetadata(1)
	_, ok = c.meta.Load().leader(physicalKey{1, NoPartition}, 0)
	assert.False(t, ok)
	_, ok = after.leader(physicalKey{1, NoPartition}, 0)
	assert.True(t, ok)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"ok", Config{Bootstrap: []string{"127.0.0.1:9123", "[::1]:9123", "fluss:1"}}, true},
		{"no bootstrap", Config{}, false},
		{"no port", Config{Bootstrap: []string{"host"}}, false},
		{"bad port", Config{Bootstrap: []string{"host:0"}}, false},
		{"no host", Config{Bootstrap: []string{":9123"}}, false},
		{"password without user", Config{Bootstrap: []string{"h:1"}, Password: "x"}, false},
		{"negative timeout", Config{Bootstrap: []string{"h:1"}, RequestTimeout: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(tt.cfg)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
	d := Config{Bootstrap: []string{"h:1"}}.withDefaults()
	assert.Equal(t, DefaultRequestTimeout, d.RequestTimeout)
	assert.Equal(t, DefaultDialTimeout, d.DialTimeout)
	assert.Equal(t, DefaultClientID, d.ClientID)
}
