package fluss

// PUT_KV (1016), versions 0–3 (0.9.1 servers offer 0–1, 1.0 servers 0–3).
// Tablet server only, to the leader of every bucket in the request.
//
// v1 tells the server that primary keys of lake tables whose bucket key
// differs from the primary key are encoded with CompactedKeyEncoder (no
// difference for tables without a data-lake format); v2 that the client
// understands STORAGE_BACKPRESSURE_EXCEPTION (72) and reads the per-bucket
// pressure; v3 (Fluss 1.0) adds routing_bucket_count and
// original_partition_name per bucket, sent only at v3 (see PRODUCE_LOG).
// agg_mode is always sent, as the Java client does: 0 (AGGREGATE, the merge
// engine's normal path).

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// PutKvRequest upserts/deletes KvRecordBatches into buckets of one
// primary-key table that are all led by the same tablet server.
type PutKvRequest struct {
	TableID int64
	// Acks is -1 (all in-sync replicas), 0 or 1.
	Acks int
	// Timeout is the server-side wait for acks=-1; default 30s.
	Timeout time.Duration
	// TargetColumns are 0-based column indexes of a partial update; empty
	// means all columns.
	TargetColumns []int32
	Buckets       []BucketRecords
}

// clampPressure bounds a server's pressure to [0, 1] (NaN: 0), so that a
// throttle computed from it stays within its maximum.
func clampPressure(p float32) float32 {
	switch {
	case p > 1:
		return 1
	case p > 0:
		return p
	}
	return 0
}

// aggModeAggregate is PutKvRequest.agg_mode 0 (AGGREGATE).
const aggModeAggregate int32 = 0

// PutKv sends one PUT_KV request to a tablet server and returns a result per
// requested bucket, in request order; Offset is the changelog end offset
// (SendPutKv, then Wait).
func (c *Client) PutKv(ctx context.Context, serverID int32, req *PutKvRequest) ([]BucketResult, error) {
	pw, err := c.SendPutKv(ctx, serverID, req)
	if err != nil {
		return nil, err
	}
	return pw.Wait(ctx)
}

// SendPutKv queues one PUT_KV request on the tablet server's connection and
// returns as soon as it is queued, as SendProduceLog does.
func (c *Client) SendPutKv(ctx context.Context, serverID int32, req *PutKvRequest) (*PendingWrite, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = defaultWriteTimeout
	}
	what := fmt.Sprintf("put_kv table %d", req.TableID)
	cn, v, err := c.serverVersion(ctx, what, serverID, apiPutKv)
	if err != nil {
		return nil, err
	}
	preq := &pb.PutKvRequest{
		Acks:          proto.Int32(int32(req.Acks)),
		TableId:       proto.Int64(req.TableID),
		TimeoutMs:     proto.Int32(int32(timeout.Milliseconds())),
		TargetColumns: req.TargetColumns,
		AggMode:       proto.Int32(aggModeAggregate),
	}
	routing := v >= putKvRoutingVersion
	w := &splicedWrite{top: preq, list: 5, buckets: make([]proto.Message, len(req.Buckets)), records: 3, batches: make([][]byte, len(req.Buckets))}
	for i, b := range req.Buckets {
		pbb := &pb.PbPutKvReqForBucket{BucketId: proto.Int32(b.Bucket)}
		if b.PartitionID != NoPartition {
			pbb.PartitionId = proto.Int64(b.PartitionID)
		}
		if routing {
			pbb.RoutingBucketCount, pbb.OriginalPartitionName = routingFields(b.RoutingBucketCount, b.PartitionName)
		}
		w.buckets[i], w.batches[i] = pbb, b.Records
	}
	p, err := c.startWrite(ctx, what, serverID, cn, apiPutKv, v, w, timeout+c.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	tableID, keys := req.TableID, bucketKeys(req.Buckets)
	return NewPendingWrite(func(ctx context.Context) ([]BucketResult, error) {
		var resp pb.PutKvResponse
		if err := c.finishServer(ctx, what, serverID, p, &resp); err != nil {
			return nil, err
		}
		got := make([]bucketReply, len(resp.GetBucketsResp()))
		for i, r := range resp.GetBucketsResp() {
			got[i] = bucketReply{
				partitionID: r.PartitionId, bucket: r.GetBucketId(), errorCode: r.ErrorCode,
				errorMsg: r.GetErrorMessage(), offset: r.LogEndOffset, pressure: clampPressure(r.GetPressure()),
			}
		}
		return c.matchResults(tableID, keys, got), nil
	}), nil
}
