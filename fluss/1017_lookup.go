package fluss

// LOOKUP (1017), versions 0–1. Tablet server only, to the bucket's leader.
//
// v1: keys of lake tables whose bucket key differs from the primary key are
// encoded with CompactedKeyEncoder (same as v0 otherwise). Values come back
// as int16 LE schema id + row bytes in the table's kv format; an absent
// value means the key was not found. insert_if_not_exists is not used.
//
// Fluss 1.0 added routing_bucket_count and original_partition_name to the
// per-bucket item without a new LOOKUP version (1.0 still offers 0–1), so
// they are sent only to tablet servers that negotiated the 1.0 write
// versions (PRODUCE_LOG v1 or PUT_KV v3); a rescaled 1.0 partition answers
// INVALID_BUCKET_ROUTING (74) to a lookup without the right count.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// LookupBucket is the per-bucket item of a lookup.
type LookupBucket struct {
	PartitionID int64 // NoPartition for a non-partitioned table
	Bucket      int32
	// Keys are encoded primary keys.
	Keys [][]byte
	// RoutingBucketCount is the bucket count the keys were bucketed with;
	// 0 = not sent. PartitionName is sent as original_partition_name;
	// empty = not sent. Both reach Fluss 1.0 servers only.
	RoutingBucketCount int32
	PartitionName      string
}

// Lookup looks up encoded primary keys in one bucket and returns, per key in
// the same order, the raw value (schema id + row; decode with
// DecodeValueRow) or nil when the key does not exist. It sends no routing
// bucket count; see LookupBucketKeys.
func (c *Client) Lookup(ctx context.Context, tableID, partitionID int64, bucket int32, keys [][]byte) ([][]byte, error) {
	return c.LookupBucketKeys(ctx, tableID, LookupBucket{PartitionID: partitionID, Bucket: bucket, Keys: keys})
}

// LookupBucketKeys is Lookup with the bucket's routing fields.
func (c *Client) LookupBucketKeys(ctx context.Context, tableID int64, lb LookupBucket) ([][]byte, error) {
	partitionID, bucket, keys := lb.PartitionID, lb.Bucket, lb.Keys
	what := fmt.Sprintf("lookup table %d partition %d bucket %d", tableID, partitionID, bucket)
	leader, err := c.BucketLeader(ctx, tableID, partitionID, bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cn, _, err := c.serverVersion(ctx, what, leader.ID, apiLookup)
	if err != nil {
		return nil, err
	}
	b := &pb.PbLookupReqForBucket{BucketId: proto.Int32(bucket), Keys: keys}
	if partitionID != NoPartition {
		b.PartitionId = proto.Int64(partitionID)
	}
	if cn.speaksRouting() {
		b.RoutingBucketCount, b.OriginalPartitionName = routingFields(lb.RoutingBucketCount, lb.PartitionName)
	}
	req := &pb.LookupRequest{TableId: proto.Int64(tableID), BucketsReq: []*pb.PbLookupReqForBucket{b}}
	var resp pb.LookupResponse
	p, err := c.startOn(ctx, what, leader.ID, cn, apiLookup, req, 0)
	if err != nil {
		return nil, err
	}
	if err := c.finishServer(ctx, what, leader.ID, p, &resp); err != nil {
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
			if r.GetErrorCode() == ErrInvalidBucketRouting.Code {
				c.InvalidatePartitionMetadata(tableID, partitionID)
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
