package flussfake_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

var schema = fluss.Schema{Columns: []fluss.Column{{Name: "id", Type: fluss.BigInt()}}}

func setup(t *testing.T, servers int) (*flussfake.Cluster, *fluss.Client, *fluss.TableInfo) {
	t.Helper()
	fc, err := flussfake.NewCluster(flussfake.NumTabletServers(servers))
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	path := fluss.TablePath{Database: "db", Table: "t"}
	_, err = fc.AddTable(path, fluss.TableDescriptor{Schema: schema, BucketCount: 2,
		Properties: map[string]string{fluss.PropLogFormat: "INDEXED"}})
	require.NoError(t, err)
	c, err := fluss.NewClient(fluss.Config{Bootstrap: []string{fc.Bootstrap()}, RequestTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	info, err := c.TableInfo(t.Context(), path)
	require.NoError(t, err)
	return fc, c, info
}

func batch(t *testing.T, rows int, writerID int64, seq int32) []byte {
	t.Helper()
	b, err := fluss.NewIndexedLogBuilder(&schema, 1)
	require.NoError(t, err)
	for i := range rows {
		require.NoError(t, b.Append(fluss.Row{fluss.IntDatum(int64(i))}))
	}
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	fluss.SetLogBatchWriter(out, writerID, seq)
	return out
}

func produce(t *testing.T, c *fluss.Client, info *fluss.TableInfo, bucket int32, records []byte) fluss.BucketResult {
	t.Helper()
	leader, err := c.BucketLeader(t.Context(), info.TableID, fluss.NoPartition, bucket)
	require.NoError(t, err)
	res, err := c.ProduceLog(t.Context(), leader.ID, &fluss.ProduceLogRequest{
		TableID: info.TableID, Acks: -1, Buckets: []fluss.BucketRecords{{PartitionID: fluss.NoPartition, Bucket: bucket, Records: records}},
	})
	require.NoError(t, err)
	require.Len(t, res, 1)
	return res[0]
}

func TestIdempotenceRules(t *testing.T) {
	t.Parallel()
	fc, c, info := setup(t, 2)
	wid, err := c.InitWriter(t.Context(), info.Path)
	require.NoError(t, err)

	tests := []struct {
		name    string
		seq     int32
		rows    int
		wantOff int64
		wantErr error
	}{
		{name: "first batch", seq: 0, rows: 3, wantOff: 0},
		{name: "next batch", seq: 1, rows: 2, wantOff: 3},
		{name: "duplicate answered with original offset", seq: 0, rows: 3, wantOff: 0},
		{name: "gap is out of order", seq: 5, rows: 1, wantErr: fluss.ErrOutOfOrderSequence},
		{name: "next after all that", seq: 2, rows: 1, wantOff: 5},
	}
	for _, tc := range tests {
		r := produce(t, c, info, 1, batch(t, tc.rows, wid, tc.seq))
		if tc.wantErr != nil {
			assert.ErrorIs(t, r.Err, tc.wantErr, tc.name)
			continue
		}
		require.NoError(t, r.Err, tc.name)
		assert.Equal(t, tc.wantOff, r.Offset, tc.name)
	}
	assert.Equal(t, int64(6), fc.LogEndOffset(info.TableID, fluss.NoPartition, 1))
	offs, err := c.ListOffsets(t.Context(), info.TableID, fluss.NoPartition, []int32{0, 1}, fluss.LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 0, 1: 6}, offs)
}

func TestInjectedErrorsAndLeaderMove(t *testing.T) {
	t.Parallel()
	fc, c, info := setup(t, 2)
	fc.FailBucket(info.TableID, fluss.NoPartition, 0, 29, 48)
	assert.ErrorIs(t, produce(t, c, info, 0, batch(t, 1, -1, -1)).Err, fluss.ErrorForCode(29, ""))
	assert.ErrorIs(t, produce(t, c, info, 0, batch(t, 1, -1, -1)).Err, fluss.ErrAuthorization)
	require.NoError(t, produce(t, c, info, 0, batch(t, 1, -1, -1)).Err)

	old, err := c.BucketLeader(t.Context(), info.TableID, fluss.NoPartition, 0)
	require.NoError(t, err)
	fc.SetLeader(info.TableID, 0, 1-old.ID)
	r := produce(t, c, info, 0, batch(t, 1, -1, -1)) // still cached: old leader
	require.ErrorIs(t, r.Err, fluss.ErrNotLeaderOrFollower)
	r = produce(t, c, info, 0, batch(t, 1, -1, -1)) // the client dropped its cache
	require.NoError(t, r.Err)
	assert.Equal(t, int64(1), r.Offset)
}

func TestHoldOneTableOverOneConnection(t *testing.T) {
	t.Parallel()
	fc, c, info := setup(t, 1)
	path2 := fluss.TablePath{Database: "db", Table: "t2"}
	_, err := fc.AddTable(path2, fluss.TableDescriptor{Schema: schema, BucketCount: 1,
		Properties: map[string]string{fluss.PropLogFormat: "INDEXED"}})
	require.NoError(t, err)
	info2, err := c.TableInfo(t.Context(), path2)
	require.NoError(t, err)

	hold := fc.HoldTable(info.TableID)
	held := make(chan fluss.BucketResult, 1)
	go func() { held <- produce(t, c, info, 0, batch(t, 1, -1, -1)) }()
	req := <-hold.Arrived()
	assert.Equal(t, info.TableID, req.ProduceTable())
	r := produce(t, c, info2, 0, batch(t, 2, -1, -1))
	require.NoError(t, r.Err)
	select {
	case <-held:
		t.Fatal("held response was sent")
	default:
	}
	hold.Release()
	require.NoError(t, (<-held).Err)
	assert.Equal(t, 1, fc.Connections(0), "one connection to the tablet server")
}

func TestControlAnswersFirst(t *testing.T) {
	t.Parallel()
	fc, c, info := setup(t, 1)
	remove := fc.Control(func(req *flussfake.Request) (flussfake.Response, bool) {
		if req.APIKey == flussfake.InitWriter {
			return flussfake.Response{ErrCode: 48, ErrMsg: "no"}, true
		}
		return flussfake.Response{}, false
	})
	_, err := c.InitWriter(context.Background(), info.Path)
	require.ErrorIs(t, err, fluss.ErrAuthorization)
	remove()
	_, err = c.InitWriter(context.Background(), info.Path)
	require.NoError(t, err)
}

// TestAdvertisedVersions pins the API version ranges of both releases.
func TestAdvertisedVersions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts []flussfake.Opt
		want map[int32]int32 // api key -> max version
	}{
		{"0.9.1", nil, map[int32]int32{1014: 0, 1016: 1, 1017: 1, 1012: 0}},
		{"1.0", []flussfake.Opt{flussfake.WithVersion10()}, map[int32]int32{1014: 1, 1016: 3, 1017: 1, 1012: 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc, err := flussfake.NewCluster(tt.opts...)
			require.NoError(t, err)
			t.Cleanup(fc.Close)
			c, err := fluss.NewClient(fluss.Config{Bootstrap: []string{fc.Bootstrap()}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			req, err := proto.Marshal(&pb.ApiVersionsRequest{ClientSoftwareName: proto.String("t"), ClientSoftwareVersion: proto.String("0")})
			require.NoError(t, err)
			raw, err := c.RawRequest(t.Context(), fc.ListenAddrs()[1], flussfake.APIVersions, 0, req, 0)
			require.NoError(t, err)
			var resp pb.ApiVersionsResponse
			require.NoError(t, proto.Unmarshal(raw.Payload, &resp))
			got := map[int32]int32{}
			for _, v := range resp.GetApiVersions() {
				if _, ok := tt.want[v.GetApiKey()]; ok {
					got[v.GetApiKey()] = v.GetMaxVersion()
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestPartitionWritesAndRecords: writes to a partition are checked against
// that partition's buckets and leaders, and every item is recorded.
func TestPartitionWritesAndRecords(t *testing.T) {
	t.Parallel()
	fc, err := flussfake.NewCluster(flussfake.WithVersion10(), flussfake.NumTabletServers(2))
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	path := fluss.TablePath{Database: "db", Table: "p"}
	ps := fluss.Schema{Columns: []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "day", Type: fluss.String()}}}
	id, err := fc.AddTable(path, fluss.TableDescriptor{Schema: ps, PartitionKeys: []string{"day"}, BucketCount: 1,
		Properties: map[string]string{fluss.PropLogFormat: "INDEXED"}})
	require.NoError(t, err)
	_, err = fc.AddPartition(id, fluss.PartitionSpec{{Key: "day", Value: "a"}}, 0)
	require.NoError(t, err)
	_, err = fc.AddPartition(id, fluss.PartitionSpec{{Key: "day", Value: "a"}}, 0)
	require.Error(t, err, "exists")
	pid, err := fc.AddPartition(id, fluss.PartitionSpec{{Key: "day", Value: "b"}}, 2)
	require.NoError(t, err)
	fc.SetPartitionLeader(id, pid, 1, 0)

	c, err := fluss.NewClient(fluss.Config{Bootstrap: []string{fc.Bootstrap()}, RequestTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.TableInfo(t.Context(), path)
	require.NoError(t, err)
	leader, err := c.BucketLeader(t.Context(), id, pid, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(0), leader.ID, "moved by SetPartitionLeader")

	b, err := fluss.NewIndexedLogBuilder(&ps, 1)
	require.NoError(t, err)
	require.NoError(t, b.Append(fluss.Row{fluss.IntDatum(1), fluss.StringDatum("b")}))
	records, err := b.AppendTo(nil)
	require.NoError(t, err)
	res, err := c.ProduceLog(t.Context(), 0, &fluss.ProduceLogRequest{TableID: id, Acks: -1, Buckets: []fluss.BucketRecords{
		{PartitionID: pid, Bucket: 1, Records: records, RoutingBucketCount: 2},
		{PartitionID: pid, Bucket: 2, Records: records, RoutingBucketCount: 2}, // no bucket 2
		{PartitionID: 77, Bucket: 0, Records: records},                         // no partition 77
	}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.ErrorIs(t, res[1].Err, fluss.ErrUnknownTableOrBucket)
	assert.ErrorIs(t, res[2].Err, fluss.ErrUnknownTableOrBucket)
	assert.Equal(t, int64(1), fc.LogEndOffset(id, pid, 1))

	ws := fc.Writes()
	require.Len(t, ws, 3)
	assert.Equal(t, flussfake.Write{Server: 0, APIKey: flussfake.ProduceLog, Version: 1, TableID: id, PartitionID: pid, Bucket: 1,
		HasRoutingBucketCount: true, RoutingBucketCount: 2}, ws[0])
	assert.Equal(t, int32(21), ws[2].ErrCode)
}
