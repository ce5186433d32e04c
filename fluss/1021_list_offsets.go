package fluss

// LIST_OFFSETS (1021), version 0. Tablet server only, to each bucket's
// leader. offset_type: 0 EARLIEST, 1 LATEST (the high watermark), 2
// TIMESTAMP (first offset with a timestamp >= startTimestamp), as in
// fluss-server ListOffsetsParam.java.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// OffsetSpec selects which offset ListOffsets returns.
type OffsetSpec struct {
	kind      int32
	timestamp int64
}

// Offset specs.
var (
	EarliestOffset = OffsetSpec{kind: 0}
	LatestOffset   = OffsetSpec{kind: 1}
)

// OffsetAtTimestamp selects the first offset whose record timestamp is at or
// after millis (epoch milliseconds).
func OffsetAtTimestamp(millis int64) OffsetSpec { return OffsetSpec{kind: 2, timestamp: millis} }

// ListOffsets returns the offset selected by spec for each bucket of a table
// (or of one partition; NoPartition otherwise), asking each bucket's leader.
// Any failed bucket fails the call with its *Error.
func (c *Client) ListOffsets(ctx context.Context, tableID, partitionID int64, buckets []int32, spec OffsetSpec) (map[int32]int64, error) {
	what := fmt.Sprintf("list_offsets table %d partition %d", tableID, partitionID)
	groups, err := c.groupByLeader(ctx, tableID, len(buckets), func(i int) (int64, int32) { return partitionID, buckets[i] })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make(map[int32]int64, len(buckets))
	for serverID, idx := range groups {
		req := &pb.ListOffsetsRequest{
			FollowerServerId: proto.Int32(-1),
			OffsetType:       proto.Int32(spec.kind),
			TableId:          proto.Int64(tableID),
		}
		if partitionID != NoPartition {
			req.PartitionId = proto.Int64(partitionID)
		}
		if spec.kind == 2 {
			req.StartTimestamp = proto.Int64(spec.timestamp)
		}
		for _, i := range idx {
			req.BucketId = append(req.BucketId, buckets[i])
		}
		var resp pb.ListOffsetsResponse
		if err := c.callServer(ctx, what, serverID, apiListOffsets, req, &resp, 0); err != nil {
			return nil, err
		}
		for _, r := range resp.GetBucketsResp() {
			if r.ErrorCode != nil && r.GetErrorCode() != 0 {
				ferr := ErrorForCode(r.GetErrorCode(), r.GetErrorMessage())
				if NeedsMetadataRefresh(ferr) {
					c.InvalidateTableMetadata(tableID)
				}
				return nil, fmt.Errorf("%s bucket %d: %w", what, r.GetBucketId(), ferr)
			}
			out[r.GetBucketId()] = r.GetOffset()
		}
	}
	for _, b := range buckets {
		if _, ok := out[b]; !ok {
			return nil, fmt.Errorf("%s bucket %d: %w", what, b, errNoBucketResponse)
		}
	}
	return out, nil
}
