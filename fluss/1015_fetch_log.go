package fluss

// FETCH_LOG (1015), version 0. Tablet server only, to each bucket's leader.
//
// For verification reads: no projection, follower_server_id -1. Records come
// back as raw concatenated LogRecordBatches (decode with DecodeLogBatches);
// a bucket whose data lives only in remote storage is reported as an error,
// since this client does not read remote segments.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// FetchBucket is one bucket to read from.
type FetchBucket struct {
	PartitionID int64 // NoPartition for a non-partitioned table
	Bucket      int32
	Offset      int64
	// MaxBytes bounds this bucket's records; default 1 MiB.
	MaxBytes int32
}

// FetchLogRequest reads buckets of one table.
type FetchLogRequest struct {
	TableID int64
	Buckets []FetchBucket
	// MaxBytes bounds the whole response per tablet server; default 16 MiB.
	MaxBytes int32
	// MaxWait lets the server wait for MinBytes before answering; zero
	// means answer at once.
	MaxWait  time.Duration
	MinBytes int32
}

// FetchedBucket is the answer for one bucket.
type FetchedBucket struct {
	PartitionID    int64
	Bucket         int32
	Err            error // *Error, or nil
	HighWatermark  int64 // -1 when not reported
	LogStartOffset int64 // -1 when not reported
	// Records are concatenated LogRecordBatches starting at or before the
	// requested offset (a batch is never split); empty when there is none.
	Records []byte
}

// ErrRemoteLog is the error of a fetched bucket whose data is only in
// remote storage.
var ErrRemoteLog = errors.New("fluss: bucket data is in remote storage, which this client does not read")

const (
	defaultFetchBucketBytes = 1 << 20
	defaultFetchBytes       = 16 << 20
)

// FetchLog reads the requested buckets, sending one FETCH_LOG request to the
// leader of each group of buckets, and returns a result per bucket in request
// order.
func (c *Client) FetchLog(ctx context.Context, req *FetchLogRequest) ([]FetchedBucket, error) {
	groups, err := c.groupByLeader(ctx, req.TableID, len(req.Buckets), func(i int) (int64, int32) {
		return req.Buckets[i].PartitionID, req.Buckets[i].Bucket
	})
	if err != nil {
		return nil, fmt.Errorf("fetch_log table %d: %w", req.TableID, err)
	}
	out := make([]FetchedBucket, len(req.Buckets))
	for serverID, idx := range groups {
		if err := c.fetchFrom(ctx, serverID, req, idx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Client) fetchFrom(ctx context.Context, serverID int32, req *FetchLogRequest, idx []int, out []FetchedBucket) error {
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = defaultFetchBytes
	}
	table := &pb.PbFetchLogReqForTable{
		TableId:                   proto.Int64(req.TableID),
		ProjectionPushdownEnabled: proto.Bool(false),
	}
	for _, i := range idx {
		b := req.Buckets[i]
		mb := b.MaxBytes
		if mb <= 0 {
			mb = defaultFetchBucketBytes
		}
		pbb := &pb.PbFetchLogReqForBucket{
			BucketId:      proto.Int32(b.Bucket),
			FetchOffset:   proto.Int64(b.Offset),
			MaxFetchBytes: proto.Int32(mb),
		}
		if b.PartitionID != NoPartition {
			pbb.PartitionId = proto.Int64(b.PartitionID)
		}
		table.BucketsReq = append(table.BucketsReq, pbb)
	}
	preq := &pb.FetchLogRequest{
		FollowerServerId: proto.Int32(-1),
		MaxBytes:         proto.Int32(maxBytes),
		TablesReq:        []*pb.PbFetchLogReqForTable{table},
		MaxWaitMs:        proto.Int32(int32(req.MaxWait.Milliseconds())),
		MinBytes:         proto.Int32(req.MinBytes),
	}
	var resp pb.FetchLogResponse
	what := fmt.Sprintf("fetch_log table %d", req.TableID)
	if err := c.callServer(ctx, what, serverID, apiFetchLog, preq, &resp, req.MaxWait+c.cfg.RequestTimeout); err != nil {
		return err
	}
	type key struct {
		p int64
		b int32
	}
	got := make(map[key]*pb.PbFetchLogRespForBucket)
	for _, t := range resp.GetTablesResp() {
		if t.GetTableId() != req.TableID {
			continue
		}
		for _, r := range t.GetBucketsResp() {
			p := NoPartition
			if r.PartitionId != nil {
				p = r.GetPartitionId()
			}
			got[key{p, r.GetBucketId()}] = r
		}
	}
	refresh := false
	for _, i := range idx {
		b := req.Buckets[i]
		res := FetchedBucket{PartitionID: b.PartitionID, Bucket: b.Bucket, HighWatermark: -1, LogStartOffset: -1}
		r, ok := got[key{b.PartitionID, b.Bucket}]
		switch {
		case !ok:
			res.Err = errNoBucketResponse
		case r.ErrorCode != nil && r.GetErrorCode() != 0:
			res.Err = ErrorForCode(r.GetErrorCode(), r.GetErrorMessage())
			refresh = refresh || NeedsMetadataRefresh(res.Err)
		default:
			if r.HighWatermark != nil {
				res.HighWatermark = r.GetHighWatermark()
			}
			if r.LogStartOffset != nil {
				res.LogStartOffset = r.GetLogStartOffset()
			}
			res.Records = r.GetRecords()
			if r.RemoteLogFetchInfo != nil && len(res.Records) == 0 {
				res.Err = ErrRemoteLog
			}
		}
		out[i] = res
	}
	if refresh {
		c.InvalidateTableMetadata(req.TableID)
	}
	return nil
}

// groupByLeader maps each leader's server id to the indexes of the n items
// (partition, bucket) it leads.
func (c *Client) groupByLeader(ctx context.Context, tableID int64, n int, item func(int) (int64, int32)) (map[int32][]int, error) {
	groups := make(map[int32][]int)
	for i := range n {
		p, b := item(i)
		node, err := c.BucketLeader(ctx, tableID, p, b)
		if err != nil {
			return nil, err
		}
		groups[node.ID] = append(groups[node.ID], i)
	}
	return groups, nil
}

// FetchedLogBatch is one log batch of a bucket as read: its header and its
// bytes.
type FetchedLogBatch struct {
	Header LogBatchHeader
	Batch  []byte
}

// FetchLogBatches reads one bucket's log batches from offset at, in one
// fetch, dropping those that end before at (the fetch starts at the batch
// holding at). A partial last batch is dropped, as a fetch cut at its size
// limit ends in one; it is an error only when no batch is whole.
func (c *Client) FetchLogBatches(ctx context.Context, tableID, partitionID int64, bucket int32, at int64) ([]FetchedLogBatch, error) {
	got, err := c.FetchLog(ctx, &FetchLogRequest{TableID: tableID,
		Buckets: []FetchBucket{{PartitionID: partitionID, Bucket: bucket, Offset: at}}})
	if err == nil {
		err = got[0].Err
	}
	if err != nil {
		return nil, fmt.Errorf("read from offset %d: %w", at, err)
	}
	batches, err := LogBatches(got[0].Records)
	if err != nil && len(batches) == 0 {
		return nil, fmt.Errorf("read from offset %d: %w", at, err)
	}
	out := make([]FetchedLogBatch, 0, len(batches))
	for _, batch := range batches {
		h, err := ReadLogBatchHeader(batch)
		if err != nil {
			return nil, fmt.Errorf("read from offset %d: %w", at, err)
		}
		if h.NextOffset() <= at {
			continue
		}
		out = append(out, FetchedLogBatch{Header: h, Batch: batch})
	}
	return out, nil
}
