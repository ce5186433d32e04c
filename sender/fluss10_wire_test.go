package sender

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
)

// The writer through the real fluss.Client against a flussfake speaking
// Fluss 1.0: negotiated versions, per-partition routing counts, a rescale
// answering INVALID_BUCKET_ROUTING, and KV pressure.

type wire10 struct {
	fc     *flussfake.Cluster
	client *fluss.Client
	w      *testWriter
	runErr chan error
}

func newWire10(t *testing.T) *wire10 {
	t.Helper()
	fc, err := flussfake.NewCluster(flussfake.WithVersion10())
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	c, err := fluss.NewClient(fluss.Config{Bootstrap: []string{fc.Bootstrap()}, RequestTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w, err := newTestWriter(testConfig(func(c *writerConfig) {
		c.Linger = time.Millisecond
		c.RetryBackoff, c.RetryBackoffMax = time.Millisecond, 2*time.Millisecond
		c.KvMaxThrottle = 400 * time.Millisecond
	}), c)
	require.NoError(t, err)
	h := &wire10{fc: fc, client: c, w: w, runErr: make(chan error, 1)}
	go func() { h.runErr <- w.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, w.Close(ctx))
		require.NoError(t, <-h.runErr)
	})
	return h
}

func row10(v int64) fluss.Row {
	return fluss.Row{fluss.IntDatum(v), fluss.IntDatum(0), fluss.StringDatum("d1")}
}

// TestWireFluss10PartitionCountsAndRescale: a partitioned log table with
// partitions of 2 and 3 buckets; every ProduceLog is v1 and carries the
// partition's own count. After a rescale, a partition written with a wrong
// count is refused with INVALID_BUCKET_ROUTING (nothing stored) and, once
// its layout is read anew, written with the right one.
func TestWireFluss10PartitionCountsAndRescale(t *testing.T) {
	t.Parallel()
	h := newWire10(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schema := itSchema
	path := fluss.TablePath{Database: "db", Table: uniqueName("p")}
	id, err := h.fc.AddTable(path, fluss.TableDescriptor{Schema: schema, BucketCount: 2, PartitionKeys: []string{"payload"},
		Properties: map[string]string{fluss.PropLogFormat: "INDEXED"}})
	require.NoError(t, err)
	p2, err := h.fc.AddPartition(id, fluss.PartitionSpec{{Key: "payload", Value: "d1"}}, 0)
	require.NoError(t, err)
	p3, err := h.fc.AddPartition(id, fluss.PartitionSpec{{Key: "payload", Value: "d2"}}, 3)
	require.NoError(t, err)
	info, err := h.client.TableInfo(ctx, path)
	require.NoError(t, err)

	// What the gateway does: ask each partition's count, write with it.
	counts := map[int64]int{}
	for _, p := range []int64{p2, p3} {
		n, err := h.client.BucketCount(ctx, id, p)
		require.NoError(t, err)
		counts[p] = int(n)
	}
	assert.Equal(t, map[int64]int{p2: 2, p3: 3}, counts)
	tbl, err := h.w.AddTable(TableSpec{ID: id, Path: path, NumBuckets: 2,
		NewLogBuilder:    func() (LogBuilder, error) { return fluss.NewIndexedLogBuilder(&schema, info.SchemaID) },
		PartitionBuckets: func(p int64) int { return counts[p] }})
	require.NoError(t, err)
	write := func(p int64, bucket int32, v int64) error {
		hd, err := h.w.Write(ctx, tbl, p, bucket, fluss.WriteAppend, nil, row10(v))
		require.NoError(t, err)
		_, err = hd.Wait(ctx)
		return err
	}
	require.NoError(t, write(p2, 1, 1))
	require.NoError(t, write(p3, 2, 2))
	for _, wr := range h.fc.Writes() {
		assert.Equal(t, int16(1), wr.Version, "ProduceLog v1")
		assert.True(t, wr.HasRoutingBucketCount)
		assert.Equal(t, int32(counts[wr.PartitionID]), wr.RoutingBucketCount, "partition %d", wr.PartitionID)
	}
	assert.Equal(t, int64(1), h.fc.LogEndOffset(id, p3, 2))

	// A rescale to 4; a new partition gets 4 buckets, but we believe 2.
	require.NoError(t, h.fc.Rescale(id, 4))
	p4, err := h.fc.AddPartition(id, fluss.PartitionSpec{{Key: "payload", Value: "d3"}}, 0)
	require.NoError(t, err)
	counts[p4] = 2 // stale: the table's count before the rescale
	err = write(p4, 1, 3)
	require.ErrorIs(t, err, fluss.ErrInvalidBucketRouting)
	assert.Equal(t, int64(0), h.fc.LogEndOffset(id, p4, 1), "nothing stored")
	n, err := h.client.BucketCount(ctx, id, p4)
	require.NoError(t, err)
	require.Equal(t, int32(4), n, "the count read anew after 74")
	counts[p4] = int(n)
	tbl.ForgetPartition(p4)
	require.NoError(t, write(p4, 3, 4), "bucket 3 exists in the new layout")
	ws := h.fc.Writes()
	assert.Equal(t, int32(4), ws[len(ws)-1].RoutingBucketCount)
	assert.Equal(t, int64(1), h.fc.LogEndOffset(id, p4, 3))
	// The old partitions still take writes with their own counts.
	require.NoError(t, write(p3, 0, 5))
}

// TestWireFluss10KvPressure: PutKv v3 answers carrying pressure reach the
// writer, which holds the bucket back (Table.Throttle); the rows land.
func TestWireFluss10KvPressure(t *testing.T) {
	t.Parallel()
	h := newWire10(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schema := fluss.Schema{Columns: itSchema.Columns, PrimaryKey: []string{"id"}}
	path := fluss.TablePath{Database: "db", Table: uniqueName("kv")}
	id, err := h.fc.AddTable(path, fluss.TableDescriptor{Schema: schema, BucketCount: 1})
	require.NoError(t, err)
	info, err := h.client.TableInfo(ctx, path)
	require.NoError(t, err)
	tbl, err := h.w.AddTable(TableSpec{ID: id, Path: path, NumBuckets: 1,
		NewKvBuilder: func() (KvBuilder, error) {
			return fluss.NewKvBatchBuilder(&schema, info.SchemaID, info.Descriptor.KvFormat())
		}})
	require.NoError(t, err)
	h.fc.SetPressure(id, fluss.NoPartition, 0, 0.5)
	upsert := func(v int64) error {
		hd, err := h.w.Write(ctx, tbl, NoPartition, 0, fluss.WriteUpsert, []byte{byte(v)}, row10(v))
		require.NoError(t, err)
		_, err = hd.Wait(ctx)
		return err
	}
	require.NoError(t, upsert(1))
	assert.Greater(t, tbl.Throttle(), time.Duration(0), "400ms · 0.5² = 100ms hold-back")
	assert.LessOrEqual(t, tbl.Throttle(), 100*time.Millisecond)
	require.NoError(t, upsert(2)) // held back, then written (the wait itself is pinned on a fake clock in fluss10_test.go)
	for _, wr := range h.fc.Writes() {
		assert.Equal(t, int16(3), wr.Version, "PutKv v3")
		assert.Equal(t, int32(1), wr.RoutingBucketCount)
	}
}
