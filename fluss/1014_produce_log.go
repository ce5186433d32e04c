package fluss

// PRODUCE_LOG (1014), versions 0–1 (0.9.1 servers offer 0). Tablet server
// only, to the leader of every bucket in the request.
//
// v1 (Fluss 1.0) adds routing_bucket_count and original_partition_name to
// each bucket; they are sent only when the server negotiated v1. A 1.0
// server whose partition was rescaled answers INVALID_BUCKET_ROUTING (74)
// for a bucket whose count is missing or differs; the client then forgets
// that partition's cached metadata so BucketCount asks again.
//
// One request carries one table and any number of its buckets (possibly of
// several partitions), each with one or more concatenated LogRecordBatches.
// Bucket-level failures come back per bucket; after a metadata-class error
// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TABLE_OR_BUCKET, ...) the table's cached
// leaders are dropped so the next BucketLeader call refreshes them.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// BucketRecords is the payload for one bucket of a write request. Records
// is written to the connection as it is, not copied into the request frame:
// do not change its bytes until the request's outcome is known (ProduceLog
// and PutKv return, or PendingWrite.Wait does), and after a failed request
// change a copy instead (the connection may still be writing it as it
// closes).
type BucketRecords struct {
	PartitionID int64 // NoPartition for a non-partitioned table
	Bucket      int32
	Records     []byte
	// RoutingBucketCount is the bucket count the rows were bucketed with
	// (BucketCount of the partition); 0 = not sent. Sent only to servers
	// that negotiated PRODUCE_LOG v1 / PUT_KV v3 (Fluss 1.0 wire: routing
	// bucket count); such a server refuses a mismatch with
	// ErrInvalidBucketRouting instead of storing misrouted rows.
	RoutingBucketCount int32
	// PartitionName is sent as original_partition_name at those versions;
	// empty = not sent. The 1.0 Java client sets it only when writing to a
	// historical (expired) partition.
	PartitionName string
}

// ProduceLogRequest appends log batches to buckets of one table that are all
// led by the same tablet server.
type ProduceLogRequest struct {
	TableID int64
	// Acks is -1 (all in-sync replicas), 0 or 1.
	Acks int
	// Timeout is the server-side wait for acks=-1 (timeout_ms); default 30s.
	// The client waits Timeout plus Config.RequestTimeout for the answer.
	Timeout time.Duration
	Buckets []BucketRecords
}

// BucketResult is the outcome of one bucket of a write request.
type BucketResult struct {
	PartitionID int64
	Bucket      int32
	// Err is an *Error, or nil on success.
	Err error
	// Offset is the base offset of the appended batch (ProduceLog) or the
	// changelog end offset after the write (PutKv); -1 when not reported.
	Offset int64
	// Pressure is the bucket's storage back-pressure a PUT_KV v2+ answer
	// reports: 0 none, (0,1) the delayed zone (Fluss 1.0 wire: KV
	// back-pressure; clients slow the bucket down by max_throttle·p²). 0 for
	// ProduceLog and older servers.
	Pressure float32
}

const defaultWriteTimeout = 30 * time.Second

// PendingWrite is a write request (PRODUCE_LOG or PUT_KV) queued on a
// tablet server's connection whose answer has not been read yet. Requests
// queued on one connection reach the server in the order they were queued:
// a caller that must keep several requests to one server in order (the
// batch sequences of a bucket) sends the next one once the previous
// SendProduceLog or SendPutKv has returned.
type PendingWrite struct {
	wait    func(ctx context.Context) ([]BucketResult, error)
	once    sync.Once
	results []BucketResult
	err     error
}

// NewPendingWrite returns a PendingWrite whose Wait returns what wait
// returns. For fakes of the client.
func NewPendingWrite(wait func(ctx context.Context) ([]BucketResult, error)) *PendingWrite {
	return &PendingWrite{wait: wait}
}

// Wait waits for the answer and returns a result per requested bucket, in
// request order. A returned error means the request as a whole failed
// (connection, timeout, ERROR_RESPONSE, ctx ended) and says nothing about
// whether it was applied. The request's own deadline (its Timeout plus
// Config.RequestTimeout) started when it was sent. Only the first call
// waits; later calls return its outcome.
func (p *PendingWrite) Wait(ctx context.Context) ([]BucketResult, error) {
	p.once.Do(func() { p.results, p.err = p.wait(ctx) })
	return p.results, p.err
}

// ProduceLog sends one PRODUCE_LOG request to a tablet server and returns a
// result per requested bucket, in request order (SendProduceLog, then
// Wait). A returned error means the request as a whole failed (connection,
// timeout, ERROR_RESPONSE) and says nothing about whether it was applied.
func (c *Client) ProduceLog(ctx context.Context, serverID int32, req *ProduceLogRequest) ([]BucketResult, error) {
	pw, err := c.SendProduceLog(ctx, serverID, req)
	if err != nil {
		return nil, err
	}
	return pw.Wait(ctx)
}

// SendProduceLog queues one PRODUCE_LOG request on the tablet server's
// connection (dialling it if need be) and returns as soon as it is queued;
// the answer comes from the returned PendingWrite. An error means the
// request was not sent.
func (c *Client) SendProduceLog(ctx context.Context, serverID int32, req *ProduceLogRequest) (*PendingWrite, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = defaultWriteTimeout
	}
	what := fmt.Sprintf("produce_log table %d", req.TableID)
	cn, v, err := c.serverVersion(ctx, what, serverID, apiProduceLog)
	if err != nil {
		return nil, err
	}
	preq := &pb.ProduceLogRequest{
		Acks:      proto.Int32(int32(req.Acks)),
		TableId:   proto.Int64(req.TableID),
		TimeoutMs: proto.Int32(int32(timeout.Milliseconds())),
	}
	routing := v >= produceLogRoutingVersion
	w := &splicedWrite{top: preq, list: 4, buckets: make([]proto.Message, len(req.Buckets)), records: 3, batches: make([][]byte, len(req.Buckets))}
	for i, b := range req.Buckets {
		pbb := &pb.PbProduceLogReqForBucket{BucketId: proto.Int32(b.Bucket)}
		if b.PartitionID != NoPartition {
			pbb.PartitionId = proto.Int64(b.PartitionID)
		}
		if routing {
			pbb.RoutingBucketCount, pbb.OriginalPartitionName = routingFields(b.RoutingBucketCount, b.PartitionName)
		}
		w.buckets[i], w.batches[i] = pbb, b.Records
	}
	p, err := c.startWrite(ctx, what, serverID, cn, apiProduceLog, v, w, timeout+c.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	tableID, keys := req.TableID, bucketKeys(req.Buckets)
	return NewPendingWrite(func(ctx context.Context) ([]BucketResult, error) {
		var resp pb.ProduceLogResponse
		if err := c.finishServer(ctx, what, serverID, p, &resp); err != nil {
			return nil, err
		}
		got := make([]bucketReply, len(resp.GetBucketsResp()))
		for i, r := range resp.GetBucketsResp() {
			got[i] = bucketReply{partitionID: r.PartitionId, bucket: r.GetBucketId(), errorCode: r.ErrorCode, errorMsg: r.GetErrorMessage(), offset: r.BaseOffset}
		}
		return c.matchResults(tableID, keys, got), nil
	}), nil
}

// routingFields returns the optional routing fields of a bucket item: unset
// for a zero count or an empty name.
func routingFields(count int32, partitionName string) (*int32, *string) {
	var n *int32
	var name *string
	if count > 0 {
		n = proto.Int32(count)
	}
	if partitionName != "" {
		name = proto.String(partitionName)
	}
	return n, name
}

// bucketKeys copies the partition and bucket of each request bucket, for
// matching the answer without retaining the records.
func bucketKeys(reqs []BucketRecords) []BucketRecords {
	keys := make([]BucketRecords, len(reqs))
	for i, b := range reqs {
		keys[i] = BucketRecords{PartitionID: b.PartitionID, Bucket: b.Bucket}
	}
	return keys
}

// bucketReply is the common shape of a per-bucket write response.
type bucketReply struct {
	partitionID *int64
	bucket      int32
	errorCode   *int32
	errorMsg    string
	offset      *int64
	pressure    float32
}

// errNoBucketResponse is the result of a requested bucket the response left out.
var errNoBucketResponse = errors.New("fluss: response has no result for this bucket")

// matchResults orders per-bucket replies as the request's buckets, drops
// the table's cached leaders after a metadata-class error, and a
// partition's cached bucket count and leaders after INVALID_BUCKET_ROUTING.
func (c *Client) matchResults(tableID int64, reqs []BucketRecords, got []bucketReply) []BucketResult {
	type key struct {
		p int64
		b int32
	}
	byKey := make(map[key]bucketReply, len(got))
	for _, r := range got {
		p := NoPartition
		if r.partitionID != nil {
			p = *r.partitionID
		}
		byKey[key{p, r.bucket}] = r
	}
	out := make([]BucketResult, len(reqs))
	refresh := false
	var rerouted []int64
	for i, b := range reqs {
		res := BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, Offset: -1}
		r, ok := byKey[key{b.PartitionID, b.Bucket}]
		if ok {
			res.Pressure = r.pressure
		}
		switch {
		case !ok:
			res.Err = errNoBucketResponse
		case r.errorCode != nil && *r.errorCode != 0:
			res.Err = ErrorForCode(*r.errorCode, r.errorMsg)
			refresh = refresh || NeedsMetadataRefresh(res.Err)
			if *r.errorCode == ErrInvalidBucketRouting.Code && !slices.Contains(rerouted, b.PartitionID) {
				rerouted = append(rerouted, b.PartitionID)
			}
		case r.offset != nil:
			res.Offset = *r.offset
		}
		out[i] = res
	}
	if refresh {
		c.InvalidateTableMetadata(tableID)
	}
	for _, p := range rerouted {
		c.InvalidatePartitionMetadata(tableID, p)
	}
	return out
}
