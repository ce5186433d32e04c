package fluss

// PRODUCE_LOG (1014), version 0. Tablet server only, to the leader of every
// bucket in the request.
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
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// BucketRecords is the payload for one bucket of a write request. Records
// is not retained after the call (ProduceLog, PutKv, or SendProduceLog and
// SendPutKv) returns.
type BucketRecords struct {
	PartitionID int64 // NoPartition for a non-partitioned table
	Bucket      int32
	Records     []byte
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
	preq := &pb.ProduceLogRequest{
		Acks:       proto.Int32(int32(req.Acks)),
		TableId:    proto.Int64(req.TableID),
		TimeoutMs:  proto.Int32(int32(timeout.Milliseconds())),
		BucketsReq: make([]*pb.PbProduceLogReqForBucket, len(req.Buckets)),
	}
	for i, b := range req.Buckets {
		pbb := &pb.PbProduceLogReqForBucket{BucketId: proto.Int32(b.Bucket), Records: b.Records}
		if b.PartitionID != NoPartition {
			pbb.PartitionId = proto.Int64(b.PartitionID)
		}
		preq.BucketsReq[i] = pbb
	}
	what := fmt.Sprintf("produce_log table %d", req.TableID)
	p, err := c.startServer(ctx, what, serverID, apiProduceLog, preq, timeout+c.cfg.RequestTimeout)
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
			got[i] = bucketReply{r.PartitionId, r.GetBucketId(), r.ErrorCode, r.GetErrorMessage(), r.BaseOffset}
		}
		return c.matchResults(tableID, keys, got), nil
	}), nil
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
}

// errNoBucketResponse is the result of a requested bucket the response left out.
var errNoBucketResponse = errors.New("fluss: response has no result for this bucket")

// matchResults orders per-bucket replies as the request's buckets, and
// drops the table's cached leaders after a metadata-class error.
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
	for i, b := range reqs {
		res := BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, Offset: -1}
		r, ok := byKey[key{b.PartitionID, b.Bucket}]
		switch {
		case !ok:
			res.Err = errNoBucketResponse
		case r.errorCode != nil && *r.errorCode != 0:
			res.Err = ErrorForCode(*r.errorCode, r.errorMsg)
			refresh = refresh || NeedsMetadataRefresh(res.Err)
		case r.offset != nil:
			res.Offset = *r.offset
		}
		out[i] = res
	}
	if refresh {
		c.InvalidateTableMetadata(tableID)
	}
	return out
}
