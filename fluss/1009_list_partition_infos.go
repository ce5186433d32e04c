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
}

// ListPartitions returns the partitions of a partitioned table.
func (c *Client) ListPartitions(ctx context.Context, path TablePath) ([]PartitionInfo, error) {
	cn, err := c.metadataConn(ctx)
	if err != nil {
		return nil, fmt.Errorf("list_partition_infos %s: %w", path, err)
	}
	var resp pb.ListPartitionInfosResponse
	if err := cn.call(ctx, apiListPartitions, &pb.ListPartitionInfosRequest{TablePath: pbTablePath(path)}, &resp, 0); err != nil {
		return nil, fmt.Errorf("list_partition_infos %s on %s: %w", path, cn.addr, err)
	}
	out := make([]PartitionInfo, 0, len(resp.GetPartitionsInfo()))
	for _, p := range resp.GetPartitionsInfo() {
		spec := make(PartitionSpec, 0, len(p.GetPartitionSpec().GetPartitionKeyValues()))
		for _, kv := range p.GetPartitionSpec().GetPartitionKeyValues() {
			spec = append(spec, PartitionValue{Key: kv.GetKey(), Value: kv.GetValue()})
		}
		out = append(out, PartitionInfo{ID: p.GetPartitionId(), Name: spec.Name(), Spec: spec})
	}
	return out, nil
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
