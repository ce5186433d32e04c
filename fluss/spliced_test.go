package fluss

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// TestSplicedWriteMatchesMarshal: a write request sent in pieces is byte for
// byte the frame proto.Marshal gives for the whole message, for both write
// APIs, with and without the optional fields before and after the batches,
// and the batches themselves go out as the caller's slices (not copies).
func TestSplicedWriteMatchesMarshal(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	batch := func() []byte {
		b := make([]byte, r.IntN(3)*r.IntN(70_000)) // some empty, some over a varint byte
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	h := frame.RequestHeader{APIKey: apiProduceLog, APIVersion: 1, RequestID: 77}
	for n := range 40 {
		buckets := r.IntN(5)
		batches := make([][]byte, buckets)
		logFull := &pb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(int64(n) << 40), TimeoutMs: proto.Int32(30_000)}
		logTop := proto.Clone(logFull).(*pb.ProduceLogRequest)
		kvFull := &pb.PutKvRequest{Acks: proto.Int32(1), TableId: proto.Int64(int64(n)), TimeoutMs: proto.Int32(5000)}
		if n%2 == 0 {
			kvFull.TargetColumns = []int32{0, 2, 5}
		}
		if n%3 != 0 {
			kvFull.AggMode = proto.Int32(int32(n % 3))
		}
		kvTop := proto.Clone(kvFull).(*pb.PutKvRequest)
		logW := &splicedWrite{top: logTop, list: 4, records: 3, batches: batches}
		kvW := &splicedWrite{top: kvTop, list: 5, records: 3, batches: batches}
		for i := range buckets {
			batches[i] = batch()
			lb := &pb.PbProduceLogReqForBucket{BucketId: proto.Int32(int32(i))}
			kb := &pb.PbPutKvReqForBucket{BucketId: proto.Int32(int32(i))}
			if r.IntN(2) == 0 {
				lb.PartitionId, kb.PartitionId = proto.Int64(int64(r.IntN(1e6))), proto.Int64(int64(r.IntN(1e6)))
			}
			if r.IntN(2) == 0 {
				lb.RoutingBucketCount, kb.RoutingBucketCount = proto.Int32(int32(1+r.IntN(300))), proto.Int32(8)
			}
			if r.IntN(4) == 0 {
				lb.OriginalPartitionName, kb.OriginalPartitionName = proto.String("2026-12-01"), proto.String("p")
			}
			logW.buckets = append(logW.buckets, proto.Clone(lb))
			kvW.buckets = append(kvW.buckets, proto.Clone(kb))
			lb.Records, kb.Records = batches[i], batches[i]
			logFull.BucketsReq = append(logFull.BucketsReq, lb)
			kvFull.BucketsReq = append(kvFull.BucketsReq, kb)
		}
		for _, c := range []struct {
			w    *splicedWrite
			full proto.Message
		}{{logW, logFull}, {kvW, kvFull}} {
			want, err := frame.AppendRequestMessage(nil, h, c.full)
			require.NoError(t, err)
			segs, err := c.w.segments(h)
			require.NoError(t, err)
			require.Equal(t, want, bytes.Join(segs, nil), "request %d, %d buckets", n, buckets)
			var shared int
			for _, s := range segs {
				for _, b := range batches {
					if len(b) > 0 && len(s) == len(b) && &s[0] == &b[0] {
						shared++
					}
				}
			}
			nonEmpty := 0
			for _, b := range batches {
				if len(b) > 0 {
					nonEmpty++
				}
			}
			assert.Equal(t, nonEmpty, shared, "every non-empty batch is sent as the caller's slice")
		}
	}
}
