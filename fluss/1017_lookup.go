package fluss

// LOOKUP (1017), versions 0–1. Tablet server only, to the bucket's leader.
//
// v1: keys of lake tables whose bucket key differs from the primary key are
// encoded with CompactedKeyEncoder (same as v0 otherwise). Values come back
// as int16 LE schema id + row bytes in the table's kv format; an absent
// value means the key was not found. insert_if_not_exists is not used.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// Lookup looks up encoded primary keys in one bucket and returns, per key in
// the same order, the raw value (schema id + row; decode with
// DecodeValueRow) or nil when the key does not exist.
func (c *Client) Lookup(ctx context.Context, tableID, partitionID int64, bucket int32, keys [][]byte) ([][]byte, error) {
	what := fmt.Sprintf("lookup table %d partition %d bucket %d", tableID, partitionID, bucket)
	leader, err := c.BucketLeader(ctx, tableID, partitionID, bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	b := &pb.PbLookupReqForBucket{BucketId: proto.Int32(bucket), Keys: keys}
	if partitionID != NoPartition {
		b.PartitionId = proto.Int64(partitionID)
	}
	req := &pb.LookupRequest{TableId: proto.Int64(tableID), BucketsReq: []*pb.PbLookupReqForBucket{b}}
	var resp pb.LookupResponse
	if err := c.callServer(ctx, what, leader.ID, apiLookup, req, &resp, 0); err != nil {
		return nil, err
	}
	for _, r := range resp.GetBucketsResp() {
		if r.GetBucketId() != bucket || (partitionID != NoPartition && r.GetPartitionId() != partitionID) {
			continue
		}
		if r.ErrorCode != nil && r.GetErrorCode() != 0 {
			ferr := ErrorForCode(r.GetErrorCode(), r.GetErrorMessage())
			if NeedsMetadataRefresh(ferr) {
				c.InvalidateTableMetadata(tableID)
			}
			return nil, fmt.Errorf("%s: %w", what, ferr)
		}
		vals := r.GetValues()
		if len(vals) != len(keys) {
			return nil, fmt.Errorf("%s: %d values for %d keys", what, len(vals), len(keys))
		}
		out := make([][]byte, len(keys))
		for i, v := range vals {
			if v.Values != nil {
				out[i] = v.Values
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: %w", what, errNoBucketResponse)
}
