package fluss

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// createTestTable creates a table in a fresh database and waits until all
// its buckets have leaders.
func createTestTable(t *testing.T, c *Client, d TableDescriptor) (TablePath, *TableInfo) {
	t.Helper()
	ctx := testContext(t)
	path := TablePath{Database: newTestDatabase(t, c), Table: uniqueName("t")}
	if d.IsPartitioned() {
		require.NoError(t, c.CreateTable(ctx, path, &d, false))
	} else {
		require.NoError(t, c.CreateTableReady(ctx, path, &d, 0))
	}
	info, err := c.TableInfo(ctx, path)
	require.NoError(t, err)
	return path, info
}

func bucketIDs(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func TestMetadataLeadersAndEmptyOffsets(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	_, info := createTestTable(t, c, TableDescriptor{
		Schema:      Schema{Columns: []Column{{Name: "a", Type: Int()}, {Name: "b", Type: String()}}},
		BucketCount: 3,
	})
	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	ids := map[int32]bool{}
	for _, s := range servers {
		ids[s.ID] = true
	}
	for b := range int32(3) {
		leader, err := c.BucketLeader(ctx, info.TableID, NoPartition, b)
		require.NoError(t, err)
		assert.True(t, ids[leader.ID], "leader %d of bucket %d is a known tablet server", leader.ID, b)
	}
	_, err = c.BucketLeader(ctx, info.TableID, NoPartition, 3)
	require.ErrorIs(t, err, ErrNoLeader, "bucket 3 does not exist")

	for _, spec := range []OffsetSpec{EarliestOffset, LatestOffset, OffsetAtTimestamp(0)} {
		offs, err := c.ListOffsets(ctx, info.TableID, NoPartition, bucketIDs(3), spec)
		require.NoError(t, err)
		assert.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, offs, "spec %+v", spec)
	}

	fetched, err := c.FetchLog(ctx, &FetchLogRequest{TableID: info.TableID, Buckets: []FetchBucket{
		{PartitionID: NoPartition, Bucket: 0}, {PartitionID: NoPartition, Bucket: 2},
	}})
	require.NoError(t, err)
	require.Len(t, fetched, 2)
	for i, f := range fetched {
		require.NoError(t, f.Err)
		assert.Equal(t, int32(2*i), f.Bucket)
		assert.Equal(t, int64(0), f.HighWatermark)
		assert.Empty(t, f.Records)
	}

	// After invalidation the leaders come back through a refresh.
	c.InvalidateTableMetadata(info.TableID)
	_, err = c.BucketLeader(ctx, info.TableID, NoPartition, 1)
	require.NoError(t, err)
}

func TestInitWriterReturnsDistinctIDs(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	path, _ := createTestTable(t, c, TableDescriptor{Schema: Schema{Columns: []Column{{Name: "a", Type: Int()}}}})
	seen := map[int64]bool{}
	for range 5 {
		id, err := c.InitWriter(ctx, path)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, id, int64(0))
		assert.False(t, seen[id], "writer id %d handed out twice", id)
		seen[id] = true
	}
}

// A Fluss server never answers an API its role does not serve. Through the
// typed API the client refuses it up front (the server did not list it);
// sent raw, it times out and the connection keeps serving.
func TestUnservedAPITimesOutAndConnectionSurvives(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	addr := servers[0].Addr()

	cn, err := c.connTo(ctx, addr)
	require.NoError(t, err)
	require.Equal(t, serverTypeTabletServer, cn.serverType)
	err = cn.call(ctx, apiCreateTable, &pb.CreateTableRequest{}, &pb.CreateTableResponse{}, 0)
	require.ErrorIs(t, err, ErrAPINotSupported)

	payload, err := proto.Marshal(&pb.CreateDatabaseRequest{
		DatabaseName: proto.String(uniqueName("never")), IgnoreIfExists: proto.Bool(true),
	})
	require.NoError(t, err)
	start := time.Now()
	_, err = c.RawRequest(ctx, addr, apiCreateDatabase, 0, payload, 2*time.Second)
	require.ErrorIs(t, err, ErrRequestTimeout)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)

	// Same connection, next request answered.
	cn2, err := c.connTo(ctx, addr)
	require.NoError(t, err)
	assert.Same(t, cn, cn2)
	var resp pb.MetadataResponse
	require.NoError(t, cn.call(ctx, apiGetMetadata, &pb.MetadataRequest{}, &resp, 0))
	assert.NotEmpty(t, resp.GetTabletServers())
}

func TestPartitions(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	path, info := createTestTable(t, c, TableDescriptor{
		Schema: Schema{Columns: []Column{
			{Name: "k", Type: BigInt()}, {Name: "region", Type: String()}, {Name: "day", Type: String()},
		}, PrimaryKey: []string{"k", "region", "day"}},
		PartitionKeys: []string{"region", "day"},
		BucketCount:   2,
	})
	spec := PartitionSpec{{Key: "region", Value: "eu"}, {Key: "day", Value: "20260101"}}
	assert.Equal(t, "eu$20260101", spec.Name())

	_, err := c.PartitionID(ctx, path, spec.Name())
	require.ErrorIs(t, err, ErrPartitionNotExists)

	require.NoError(t, c.CreatePartition(ctx, path, spec, false))
	require.ErrorIs(t, c.CreatePartition(ctx, path, spec, false), ErrPartitionAlreadyExists)
	require.NoError(t, c.CreatePartition(ctx, path, spec, true), "ignore if exists")

	parts, err := c.ListPartitions(ctx, path)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, spec, parts[0].Spec)
	assert.Equal(t, "eu$20260101", parts[0].Name)

	var id int64
	require.NoError(t, c.poll(ctx, func() (bool, error) {
		id, err = c.PartitionID(ctx, path, spec.Name())
		return err == nil, nil
	}))
	assert.Equal(t, parts[0].ID, id)

	require.NoError(t, c.WaitForTableLeaders(ctx, path, id))
	for b := range int32(2) {
		_, err := c.BucketLeader(ctx, info.TableID, id, b)
		require.NoError(t, err)
	}
	offs, err := c.ListOffsets(ctx, info.TableID, id, bucketIDs(2), LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 0, 1: 0}, offs)

	// EnsurePartition creates what is missing and finds what exists.
	spec2 := PartitionSpec{{Key: "region", Value: "us"}, {Key: "day", Value: "20260102"}}
	id2, err := c.EnsurePartition(ctx, path, spec2)
	require.NoError(t, err)
	assert.NotEqual(t, id, id2)
	again, err := c.EnsurePartition(ctx, path, spec2)
	require.NoError(t, err)
	assert.Equal(t, id2, again)

	require.NoError(t, c.DropPartition(ctx, path, spec, false))
	require.ErrorIs(t, c.DropPartition(ctx, path, spec, false), ErrPartitionNotExists)
	parts, err = c.ListPartitions(ctx, path)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, id2, parts[0].ID)
}

func TestLookupMissingKeys(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	_, info := createTestTable(t, c, TableDescriptor{
		Schema:      Schema{Columns: []Column{{Name: "k", Type: Int()}, {Name: "v", Type: String()}}, PrimaryKey: []string{"k"}},
		BucketCount: 1,
	})
	// Any bytes are a well-formed key lookup; nothing was written.
	vals, err := c.Lookup(ctx, info.TableID, NoPartition, 0, [][]byte{{1, 2, 3, 4}, {5}})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{nil, nil}, vals)

	_, err = c.Lookup(ctx, info.TableID, NoPartition, 0, nil)
	require.NoError(t, err)
}

// Many requests in flight on one connection to a real tablet server.
func TestPipeliningAgainstRealServer(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	_, info := createTestTable(t, c, TableDescriptor{
		Schema: Schema{Columns: []Column{{Name: "a", Type: Int()}}}, BucketCount: 4,
	})
	const n = 64
	errs := make(chan error, n)
	for i := range n {
		go func() {
			offs, err := c.ListOffsets(ctx, info.TableID, NoPartition, []int32{int32(i % 4)}, EarliestOffset)
			if err == nil && offs[int32(i%4)] != 0 {
				err = assert.AnError
			}
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	c.poolMu.Lock()
	conns := len(c.conns)
	c.poolMu.Unlock()
	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, conns, len(servers)+2, "one connection per server (+ coordinator, bootstrap)")
}
