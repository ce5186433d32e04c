package fluss

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// writeServer lists itself as tablet server 1 and answers PRODUCE_LOG and
// PUT_KV: buckets in reverse order, bucket 0 fails with NOT_LEADER, a bucket
// numbered 99 is left out; every request it saw is sent on got.
func newWriteServer(t *testing.T, got chan<- proto.Message) *testServer {
	var srv *testServer
	srv = newTestServer(t, func(sc *testServerConn, req frame.Request) {
		switch req.APIKey {
		case apiGetMetadata:
			host, port := splitTestAddr(t, srv.addr())
			sc.reply(frame.SuccessResponse, req.RequestID, &pb.MetadataResponse{TabletServers: []*pb.PbServerNode{
				{NodeId: proto.Int32(1), Host: proto.String(host), Port: proto.Int32(port)},
			}})
		case apiProduceLog:
			var in pb.ProduceLogRequest
			require.NoError(t, proto.Unmarshal(req.Payload, &in))
			got <- &in
			resp := &pb.ProduceLogResponse{}
			bs := in.GetBucketsReq()
			for i := len(bs) - 1; i >= 0; i-- {
				b := bs[i]
				r := &pb.PbProduceLogRespForBucket{PartitionId: b.PartitionId, BucketId: b.BucketId}
				switch b.GetBucketId() {
				case 0:
					r.ErrorCode, r.ErrorMessage = proto.Int32(12), proto.String("moved")
				case 99:
					continue
				default:
					r.BaseOffset = proto.Int64(int64(100 + b.GetBucketId()))
				}
				resp.BucketsResp = append(resp.BucketsResp, r)
			}
			sc.reply(frame.SuccessResponse, req.RequestID, resp)
		case apiPutKv:
			var in pb.PutKvRequest
			require.NoError(t, proto.Unmarshal(req.Payload, &in))
			got <- &in
			resp := &pb.PutKvResponse{}
			for _, b := range in.GetBucketsReq() {
				resp.BucketsResp = append(resp.BucketsResp, &pb.PbPutKvRespForBucket{
					PartitionId: b.PartitionId, BucketId: b.BucketId, LogEndOffset: proto.Int64(7),
				})
			}
			sc.reply(frame.SuccessResponse, req.RequestID, resp)
		default:
			t.Errorf("unexpected api %d", req.APIKey)
		}
	})
	return srv
}

func TestProduceLogMatchesBucketResults(t *testing.T) {
	got := make(chan proto.Message, 1)
	srv := newWriteServer(t, got)
	c := newTestClient(t, srv.addr(), Config{})
	c.update(func(s *clusterSnapshot) { s.leaders[physicalKey{5, NoPartition}] = []int32{1, 1} })

	res, err := c.ProduceLog(t.Context(), 1, &ProduceLogRequest{
		TableID: 5, Acks: -1, Timeout: 3 * time.Second,
		Buckets: []BucketRecords{
			{PartitionID: NoPartition, Bucket: 0, Records: []byte("a")},
			{PartitionID: 3, Bucket: 1, Records: []byte("b")},
			{PartitionID: NoPartition, Bucket: 2, Records: []byte("c")},
			{PartitionID: NoPartition, Bucket: 99, Records: []byte("d")},
		},
	})
	require.NoError(t, err)
	req := (<-got).(*pb.ProduceLogRequest)
	assert.Equal(t, int32(-1), req.GetAcks())
	assert.Equal(t, int64(5), req.GetTableId())
	assert.Equal(t, int32(3000), req.GetTimeoutMs())
	require.Len(t, req.GetBucketsReq(), 4)
	assert.Nil(t, req.GetBucketsReq()[0].PartitionId, "no partition id for a non-partitioned table")
	assert.Equal(t, int64(3), req.GetBucketsReq()[1].GetPartitionId())
	assert.Equal(t, []byte("c"), req.GetBucketsReq()[2].GetRecords())

	require.Len(t, res, 4)
	require.ErrorIs(t, res[0].Err, ErrNotLeaderOrFollower)
	assert.Equal(t, int64(-1), res[0].Offset)
	assert.Equal(t, BucketResult{PartitionID: 3, Bucket: 1, Offset: 101}, res[1])
	assert.Equal(t, BucketResult{PartitionID: NoPartition, Bucket: 2, Offset: 102}, res[2])
	require.ErrorIs(t, res[3].Err, errNoBucketResponse)

	_, ok := c.meta.Load().leaders[physicalKey{5, NoPartition}]
	assert.False(t, ok, "a NOT_LEADER bucket drops the table's cached leaders")
}

func TestPutKvRequestFields(t *testing.T) {
	got := make(chan proto.Message, 1)
	srv := newWriteServer(t, got)
	c := newTestClient(t, srv.addr(), Config{})
	res, err := c.PutKv(t.Context(), 1, &PutKvRequest{
		TableID: 8, Acks: 1, TargetColumns: []int32{0, 2},
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 3, Records: []byte("kv")}},
	})
	require.NoError(t, err)
	req := (<-got).(*pb.PutKvRequest)
	assert.Equal(t, int32(1), req.GetAcks())
	assert.Equal(t, int32(30000), req.GetTimeoutMs(), "default server-side timeout")
	assert.Equal(t, []int32{0, 2}, req.GetTargetColumns())
	require.NotNil(t, req.AggMode, "agg_mode is always sent")
	assert.Equal(t, int32(0), req.GetAggMode())
	assert.Equal(t, []BucketResult{{PartitionID: NoPartition, Bucket: 3, Offset: 7}}, res)

	cn, err := c.connTo(t.Context(), srv.addr())
	require.NoError(t, err)
	v, err := cn.version(apiPutKv)
	require.NoError(t, err)
	assert.Equal(t, putKvRoutingVersion, v, "highest version both sides know")
	assert.Nil(t, req.GetBucketsReq()[0].RoutingBucketCount, "a zero routing count is not sent")
}
