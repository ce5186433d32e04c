package fluss

// LIST_PARTITION_INFOS (1009), version 0. Any server.
//
// Also home of the partition types and of name-to-id resolution through
// GET_METADATA (partitions_path), which fails with PARTITION_NOT_EXISTS (36)
// for an unknown name.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// PartitionValue is one partition column's value, already converted to the
// string Fluss uses in partition names (PartitionUtils.convertValueOfType).
type PartitionValue struct {
	Key, Value string
}

// PartitionSpec lists a partition's values in the table's partition-key
// order.
type PartitionSpec []PartitionValue

// PartitionSeparator joins partition values into a partition name
// (ResolvedPartitionSpec.PARTITION_SPEC_SEPARATOR).
const PartitionSeparator = "$"

// Name returns the partition name: the values joined with "$".
func (s PartitionSpec) Name() string {
	vals := make([]string, len(s))
	for i, v := range s {
		vals[i] = v.Value
	}
	return strings.Join(vals, PartitionSeparator)
}

func (s PartitionSpec) pb() *pb.PbPartitionSpec {
	out := &pb.PbPartitionSpec{PartitionKeyValues: make([]*pb.PbKeyValue, len(s))}
	for i, v := range s {
		out.PartitionKeyValues[i] = &pb.PbKeyValue{Key: proto.String(v.Key), Value: proto.String(v.Value)}
	}
	return out
}

// PartitionInfo is one partition of a table.
type PartitionInfo struct {
	ID   int64
	Name string
	Spec PartitionSpec
	// BucketCount is the partition's bucket count as the server reported
	// it (Fluss 1.0 wire: per-partition bucket count); 0 = not reported
	// (0.9.1 servers), in which case Client.BucketCount finds it.
	BucketCount int32
	// RemoteDataDir is the partition's remote data directory, empty when
	// not reported.
	RemoteDataDir string
}

// ListPartitionInfos is ListPartitions under the RPC's name.
func (c *Client) ListPartitionInfos(ctx context.Context, path TablePath) ([]PartitionInfo, error) {
	return c.ListPartitions(ctx, path)
}

// ListPartitions returns the partitions of a partitioned table. Bucket
// counts it reports are cached for BucketCount (they never change).
func (c *Client) ListPartitions(ctx context.Context, path TablePath) ([]PartitionInfo, error) {
	var resp pb.ListPartitionInfosResponse
	if err := c.callAnyServer(ctx, apiListPartitions, &pb.ListPartitionInfosRequest{TablePath: pbTablePath(path)}, &resp); err != nil {
		return nil, fmt.Errorf("list_partition_infos %s: %w", path, err)
	}
	out := make([]PartitionInfo, 0, len(resp.GetPartitionsInfo()))
	for _, p := range resp.GetPartitionsInfo() {
		spec := make(PartitionSpec, 0, len(p.GetPartitionSpec().GetPartitionKeyValues()))
		for _, kv := range p.GetPartitionSpec().GetPartitionKeyValues() {
			spec = append(spec, PartitionValue{Key: kv.GetKey(), Value: kv.GetValue()})
		}
		out = append(out, PartitionInfo{
			ID: p.GetPartitionId(), Name: spec.Name(), Spec: spec,
			BucketCount: p.GetBucketCount(), RemoteDataDir: p.GetRemoteDataDir(),
		})
	}
	c.cachePartitionCounts(path, out)
	return out, nil
}

// cachePartitionCounts remembers the bucket counts a partition listing
// reported, when the table's id is known to the client.
func (c *Client) cachePartitionCounts(path TablePath, parts []PartitionInfo) {
	tm, ok := c.meta.Load().tables[path]
	if !ok {
		return
	}
	var known bool
	for _, p := range parts {
		known = known || (p.BucketCount > 0 && p.BucketCount <= maxBuckets)
	}
	if !known {
		return
	}
	c.update(func(s *clusterSnapshot) {
		if s.tables[path].id != tm.id {
			return // re-created meanwhile
		}
		for _, p := range parts {
			if p.BucketCount > 0 && p.BucketCount <= maxBuckets {
				s.bucketCounts[physicalKey{tm.id, p.ID}] = p.BucketCount
			}
		}
	})
}

// PartitionID resolves a partition name of a table to its id, from the
// cache or through metadata (which also caches the partition's bucket
// leaders). An unknown partition is PARTITION_NOT_EXISTS (36).
func (c *Client) PartitionID(ctx context.Context, path TablePath, name string) (int64, error) {
	info, err := c.TableInfo(ctx, path)
	if err != nil {
		return 0, err
	}
	k := partitionNameKey{info.TableID, name}
	if id, ok := c.meta.Load().partitions[k]; ok {
		return id, nil
	}
	if err := c.getMetadata(ctx, []TablePath{path}, []physicalName{{path, name}}, nil); err != nil {
		return 0, fmt.Errorf("resolve partition %q of %s: %w", name, path, err)
	}
	if id, ok := c.meta.Load().partitions[k]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("resolve partition %q of %s: %w", name, path, newError(36))
}

// EnsurePartitionInfo is EnsurePartition returning the partition's id, name,
// spec and bucket count (as BucketCount finds it: usually from the metadata
// that resolved the partition; 0 when it cannot be had).
func (c *Client) EnsurePartitionInfo(ctx context.Context, path TablePath, spec PartitionSpec) (PartitionInfo, error) {
	id, err := c.EnsurePartition(ctx, path, spec)
	if err != nil {
		return PartitionInfo{}, err
	}
	pi := PartitionInfo{ID: id, Name: spec.Name(), Spec: spec}
	if tm, ok := c.meta.Load().tables[path]; ok {
		// a failure leaves 0: the partition exists, its count can be asked later
		pi.BucketCount, _ = c.BucketCount(ctx, tm.id, id)
	}
	return pi, nil
}

// EnsurePartition returns the id of the partition named by spec, creating it
// first (ignoring a concurrent creation) when it does not exist, as the Java
// writer's DynamicPartitionCreator does.
func (c *Client) EnsurePartition(ctx context.Context, path TablePath, spec PartitionSpec) (int64, error) {
	id, err := c.PartitionID(ctx, path, spec.Name())
	if err == nil {
		return id, nil
	}
	if !errorsIsCode(err, 36) {
		return 0, err
	}
	if err := c.CreatePartition(ctx, path, spec, true); err != nil {
		return 0, err
	}
	// The new partition reaches metadata asynchronously; wait for it.
	err = c.poll(ctx, func() (bool, error) {
		id, err = c.PartitionID(ctx, path, spec.Name())
		if errorsIsCode(err, 36) {
			return false, nil
		}
		return err == nil, err
	})
	return id, err
}

func errorsIsCode(err error, code int32) bool {
	return err != nil && errors.Is(err, newError(code))
}
