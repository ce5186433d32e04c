package fluss

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The RPC side of the write path against the real cluster: ProduceLog and
// FetchLog (with the records engineer's Arrow builder and decoder), PutKv and
// Lookup, and the server's duplicate detection for a batch re-sent with the
// same writer id and sequence. Bulk and per-type coverage lives with the
// record encoders' own integration tests.

func TestProduceLogFetchLogRoundTrip(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	schema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}, {Name: "s", Type: String()}}}
	_, info := createTestTable(t, c, TableDescriptor{Schema: schema, BucketCount: 2})

	build := func(from, n int) []byte {
		b, err := NewArrowLogBuilder(&info.Descriptor.Schema, info.SchemaID, info.Descriptor.ArrowCompression(), 3)
		require.NoError(t, err)
		for i := from; i < from+n; i++ {
			require.NoError(t, b.Append(Row{IntDatum(int64(i)), StringDatum("row")}))
		}
		out, err := b.AppendTo(nil)
		require.NoError(t, err)
		return out
	}
	leader, err := c.BucketLeader(ctx, info.TableID, NoPartition, 1)
	require.NoError(t, err)
	for round, acks := range []int{-1, 1} {
		res, err := c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{
			TableID: info.TableID, Acks: acks, Timeout: 10 * time.Second,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 1, Records: build(round*10, 10)}},
		})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err)
		assert.Equal(t, int32(1), res[0].Bucket)
		assert.Equal(t, int64(round*10), res[0].Offset, "base offset")
	}

	offs, err := c.ListOffsets(ctx, info.TableID, NoPartition, []int32{0, 1}, LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 0, 1: 20}, offs)

	fetched, err := c.FetchLog(ctx, &FetchLogRequest{TableID: info.TableID, Buckets: []FetchBucket{{PartitionID: NoPartition, Bucket: 1, Offset: 0}}})
	require.NoError(t, err)
	require.NoError(t, fetched[0].Err)
	assert.Equal(t, int64(20), fetched[0].HighWatermark)
	recs, err := DecodeLogBatches(fetched[0].Records, &info.Descriptor.Schema)
	require.NoError(t, err)
	require.Len(t, recs, 20)
	for i, r := range recs {
		assert.Equal(t, int64(i), r.Offset)
		assert.Equal(t, int64(i), r.Row[0].I)
	}

	// Wrong server: the bucket's leader is the only one that accepts it.
	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	for _, s := range servers {
		if s.ID == leader.ID {
			continue
		}
		res, err := c.ProduceLog(ctx, s.ID, &ProduceLogRequest{TableID: info.TableID, Acks: -1,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 1, Records: build(0, 1)}}})
		require.NoError(t, err)
		require.Error(t, res[0].Err)
		assert.True(t, NeedsMetadataRefresh(res[0].Err), "%v", res[0].Err)
	}
}

func TestProduceLogDuplicateBatchStoredOnce(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	schema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}}}
	path, info := createTestTable(t, c, TableDescriptor{Schema: schema, BucketCount: 1})
	writerID, err := c.InitWriter(ctx, path)
	require.NoError(t, err)

	b, err := NewIndexedLogBuilder(&info.Descriptor.Schema, info.SchemaID)
	require.NoError(t, err)
	require.NoError(t, b.Append(Row{IntDatum(7)}))
	require.NoError(t, b.Append(Row{IntDatum(8)}))
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	SetLogBatchWriter(batch, writerID, 0)

	leader, err := c.BucketLeader(ctx, info.TableID, NoPartition, 0)
	require.NoError(t, err)
	var offsets []int64
	for range 2 {
		res, err := c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{TableID: info.TableID, Acks: -1,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: batch}}})
		require.NoError(t, err)
		require.NoError(t, res[0].Err, "a duplicate is answered as success")
		offsets = append(offsets, res[0].Offset)
	}
	assert.Equal(t, []int64{0, 0}, offsets, "the duplicate reports the original offsets")
	offs, err := c.ListOffsets(ctx, info.TableID, NoPartition, []int32{0}, LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, int64(2), offs[0], "stored once")

	// A gap in the sequence is refused.
	SetLogBatchWriter(batch, writerID, 5)
	res, err := c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{TableID: info.TableID, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: batch}}})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrOutOfOrderSequence)
}

func TestPutKvLookupRoundTrip(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	schema := Schema{Columns: []Column{{Name: "k", Type: Int()}, {Name: "v", Type: String()}}, PrimaryKey: []string{"k"}}
	_, info := createTestTable(t, c, TableDescriptor{Schema: schema, BucketCount: 3})
	s := &info.Descriptor.Schema
	enc, err := NewKeyEncoder(s, info.Descriptor.Schema.PrimaryKey, info.Descriptor.Properties[PropDataLakeFormat])
	require.NoError(t, err)

	type kv struct {
		key    []byte
		bucket int32
	}
	keys := map[int64]kv{}
	builders := map[int32]*KvBatchBuilder{}
	for k := range int64(30) {
		row := Row{IntDatum(k), StringDatum("v")}
		key, err := enc.Encode(nil, row)
		require.NoError(t, err)
		bucket := BucketForKey(key, info.Descriptor.BucketCount)
		keys[k] = kv{key, bucket}
		if builders[bucket] == nil {
			builders[bucket], err = NewKvBatchBuilder(s, info.SchemaID, info.Descriptor.KvFormat())
			require.NoError(t, err)
		}
		require.NoError(t, builders[bucket].Upsert(key, row))
	}
	for bucket, b := range builders {
		records, err := b.AppendTo(nil)
		require.NoError(t, err)
		leader, err := c.BucketLeader(ctx, info.TableID, NoPartition, bucket)
		require.NoError(t, err)
		res, err := c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: info.TableID, Acks: -1,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: bucket, Records: records}}})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		assert.Equal(t, int64(b.Len()), res[0].Offset, "changelog end offset after %d inserts", b.Len())
	}
	for k, e := range keys {
		vals, err := c.Lookup(ctx, info.TableID, NoPartition, e.bucket, [][]byte{e.key})
		require.NoError(t, err)
		require.NotNil(t, vals[0], "key %d", k)
		schemaID, row, err := DecodeValueRow(vals[0], s, info.Descriptor.KvFormat())
		require.NoError(t, err)
		assert.Equal(t, int16(info.SchemaID), schemaID)
		assert.Equal(t, k, row[0].I)
		assert.Equal(t, "v", string(row[1].B))
	}
}

func TestPartitionedWrites(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)

	t.Run("log table", func(t *testing.T) {
		schema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}, {Name: "day", Type: String()}}}
		path, info := createTestTable(t, c, TableDescriptor{Schema: schema, PartitionKeys: []string{"day"}, BucketCount: 1})
		pid, err := c.EnsurePartition(ctx, path, PartitionSpec{{Key: "day", Value: "20260105"}})
		require.NoError(t, err)
		require.NoError(t, c.WaitForTableLeaders(ctx, path, pid))

		b, err := NewIndexedLogBuilder(&info.Descriptor.Schema, info.SchemaID)
		require.NoError(t, err)
		for i := range int64(5) {
			require.NoError(t, b.Append(Row{IntDatum(i), StringDatum("20260105")}))
		}
		records, err := b.AppendTo(nil)
		require.NoError(t, err)
		leader, err := c.BucketLeader(ctx, info.TableID, pid, 0)
		require.NoError(t, err)
		res, err := c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{TableID: info.TableID, Acks: -1,
			Buckets: []BucketRecords{{PartitionID: pid, Bucket: 0, Records: records}}})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		assert.Equal(t, pid, res[0].PartitionID)

		offs, err := c.ListOffsets(ctx, info.TableID, pid, []int32{0}, LatestOffset)
		require.NoError(t, err)
		assert.Equal(t, int64(5), offs[0])
		fetched, err := c.FetchLog(ctx, &FetchLogRequest{TableID: info.TableID, Buckets: []FetchBucket{{PartitionID: pid, Bucket: 0}}})
		require.NoError(t, err)
		require.NoError(t, fetched[0].Err)
		recs, err := DecodeLogBatchesFormat(fetched[0].Records, &info.Descriptor.Schema, LogFormatIndexed)
		require.NoError(t, err)
		require.Len(t, recs, 5)
		assert.Equal(t, "20260105", string(recs[4].Row[1].B))

		// A write without the partition id is refused for the bucket.
		res, err = c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{TableID: info.TableID, Acks: -1,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: records}}})
		require.NoError(t, err)
		require.Error(t, res[0].Err)
	})

	t.Run("primary key table", func(t *testing.T) {
		schema := Schema{Columns: []Column{{Name: "k", Type: Int()}, {Name: "day", Type: String()}, {Name: "v", Type: BigInt()}},
			PrimaryKey: []string{"k", "day"}}
		path, info := createTestTable(t, c, TableDescriptor{Schema: schema, PartitionKeys: []string{"day"}, BucketCount: 2})
		pid, err := c.EnsurePartition(ctx, path, PartitionSpec{{Key: "day", Value: "d1"}})
		require.NoError(t, err)
		require.NoError(t, c.WaitForTableLeaders(ctx, path, pid))
		s := &info.Descriptor.Schema
		// the physical key leaves the partition column out
		enc, err := NewKeyEncoder(s, []string{"k"}, "")
		require.NoError(t, err)
		for k := range int64(6) {
			row := Row{IntDatum(k), StringDatum("d1"), IntDatum(k * 10)}
			key, err := enc.Encode(nil, row)
			require.NoError(t, err)
			bucket := BucketForKey(key, info.Descriptor.BucketCount)
			kb, err := NewKvBatchBuilder(s, info.SchemaID, info.Descriptor.KvFormat())
			require.NoError(t, err)
			require.NoError(t, kb.Upsert(key, row))
			records, err := kb.AppendTo(nil)
			require.NoError(t, err)
			leader, err := c.BucketLeader(ctx, info.TableID, pid, bucket)
			require.NoError(t, err)
			res, err := c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: info.TableID, Acks: -1,
				Buckets: []BucketRecords{{PartitionID: pid, Bucket: bucket, Records: records}}})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)

			vals, err := c.Lookup(ctx, info.TableID, pid, bucket, [][]byte{key})
			require.NoError(t, err)
			require.NotNil(t, vals[0])
			_, got, err := DecodeValueRow(vals[0], s, info.Descriptor.KvFormat())
			require.NoError(t, err)
			assert.Equal(t, k*10, got[2].I)
		}
	})
}
