package fluss

// Against the real cluster (0.9.1-incubating in CI): the Fluss 1.0 additions
// must leave it working as before.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTabletServerServesMetadata: a tablet server answers GET_METADATA,
// GET_TABLE_INFO and LIST_PARTITION_INFOS, so a bootstrap list of tablet
// servers only is enough for everything but DDL.
func TestTabletServerServesMetadata(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	schema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}, {Name: "day", Type: String()}}}
	path, info := createTestTable(t, c, TableDescriptor{Schema: schema, PartitionKeys: []string{"day"}, BucketCount: 2})
	pid, err := c.EnsurePartition(ctx, path, PartitionSpec{{Key: "day", Value: "d1"}})
	require.NoError(t, err)

	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	tc, err := NewClient(Config{Bootstrap: []string{servers[0].Addr()}, RequestTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tc.Close() })

	cn, err := tc.connTo(ctx, servers[0].Addr())
	require.NoError(t, err)
	assert.Equal(t, serverTypeTabletServer, cn.serverType)
	t.Logf("tablet server versions: produce_log %d, put_kv %d, lookup %d (routing fields sent: %v)",
		cn.versions[apiProduceLog], cn.versions[apiPutKv], cn.versions[apiLookup], cn.speaksRouting())

	require.NoError(t, tc.RefreshMetadata(ctx, path))
	co, err := tc.Coordinator(ctx)
	require.NoError(t, err)
	assert.NotZero(t, co.Port)
	got, err := tc.TableInfo(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, info.TableID, got.TableID)
	parts, err := tc.ListPartitionInfos(ctx, path)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, pid, parts[0].ID)
	assert.Contains(t, []int32{0, 2}, parts[0].BucketCount, "0.9.1 reports none, 1.0 the partition's")
	n, err := tc.BucketCount(ctx, info.TableID, pid)
	require.NoError(t, err)
	assert.Equal(t, int32(2), n, "from the buckets metadata lists (0.9.1) or the 1.0 field")
	pi, err := tc.EnsurePartitionInfo(ctx, path, PartitionSpec{{Key: "day", Value: "d1"}})
	require.NoError(t, err)
	assert.Equal(t, PartitionInfo{ID: pid, Name: "d1", Spec: PartitionSpec{{Key: "day", Value: "d1"}}, BucketCount: 2}, pi)
}

// TestRoutingFieldsKeepWritesWorking: writes and lookups whose items carry a
// routing bucket count and a partition name succeed on the real cluster,
// whether it negotiates the 1.0 versions or not.
func TestRoutingFieldsKeepWritesWorking(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)

	logSchema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}, {Name: "day", Type: String()}}}
	path, info := createTestTable(t, c, TableDescriptor{Schema: logSchema, PartitionKeys: []string{"day"}, BucketCount: 2})
	pid, err := c.EnsurePartition(ctx, path, PartitionSpec{{Key: "day", Value: "d1"}})
	require.NoError(t, err)
	require.NoError(t, c.WaitForTableLeaders(ctx, path, pid))
	n, err := c.BucketCount(ctx, info.TableID, pid)
	require.NoError(t, err)
	require.Equal(t, int32(2), n)
	b, err := NewIndexedLogBuilder(&info.Descriptor.Schema, info.SchemaID)
	require.NoError(t, err)
	require.NoError(t, b.Append(Row{IntDatum(1), StringDatum("d1")}))
	records, err := b.AppendTo(nil)
	require.NoError(t, err)
	leader, err := c.BucketLeader(ctx, info.TableID, pid, 1)
	require.NoError(t, err)
	res, err := c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{TableID: info.TableID, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: pid, Bucket: 1, Records: records, RoutingBucketCount: n}}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.Zero(t, res[0].Pressure)
	offs, err := c.ListOffsets(ctx, info.TableID, pid, []int32{1}, LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, int64(1), offs[1])

	kvSchema := Schema{Columns: []Column{{Name: "k", Type: Int()}, {Name: "v", Type: String()}}, PrimaryKey: []string{"k"}}
	_, kinfo := createTestTable(t, c, TableDescriptor{Schema: kvSchema, BucketCount: 3})
	kn, err := c.BucketCount(ctx, kinfo.TableID, NoPartition)
	require.NoError(t, err)
	require.Equal(t, int32(3), kn)
	enc, err := NewKeyEncoder(&kinfo.Descriptor.Schema, kvSchema.PrimaryKey, "")
	require.NoError(t, err)
	row := Row{IntDatum(7), StringDatum("x")}
	key, err := enc.Encode(nil, row)
	require.NoError(t, err)
	bucket := BucketForKey(key, int(kn))
	kb, err := NewKvBatchBuilder(&kinfo.Descriptor.Schema, kinfo.SchemaID, kinfo.Descriptor.KvFormat())
	require.NoError(t, err)
	require.NoError(t, kb.Upsert(key, row))
	krecords, err := kb.AppendTo(nil)
	require.NoError(t, err)
	kleader, err := c.BucketLeader(ctx, kinfo.TableID, NoPartition, bucket)
	require.NoError(t, err)
	kres, err := c.PutKv(ctx, kleader.ID, &PutKvRequest{TableID: kinfo.TableID, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: bucket, Records: krecords, RoutingBucketCount: kn}}})
	require.NoError(t, err)
	require.NoError(t, kres[0].Err)
	vals, err := c.LookupBucketKeys(ctx, kinfo.TableID, LookupBucket{PartitionID: NoPartition, Bucket: bucket, Keys: [][]byte{key}, RoutingBucketCount: kn})
	require.NoError(t, err)
	require.NotNil(t, vals[0])
}
