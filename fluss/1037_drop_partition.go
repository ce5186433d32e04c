package fluss

// DROP_PARTITION (1037), version 0. Coordinator only.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// DropPartition drops a partition; without ignoreIfNotExists a missing one
// is PARTITION_NOT_EXISTS (36).
func (c *Client) DropPartition(ctx context.Context, path TablePath, spec PartitionSpec, ignoreIfNotExists bool) error {
	req := &pb.DropPartitionRequest{
		TablePath:         pbTablePath(path),
		PartitionSpec:     spec.pb(),
		IgnoreIfNotExists: proto.Bool(ignoreIfNotExists),
	}
	what := fmt.Sprintf("drop_partition %q of %s", spec.Name(), path)
	if err := c.callCoordinator(ctx, what, apiDropPartition, req, &pb.DropPartitionResponse{}); err != nil {
		return err
	}
	c.update(func(s *clusterSnapshot) {
		if tm, ok := s.tables[path]; ok {
			k := partitionNameKey{tm.id, spec.Name()}
			if id, ok := s.partitions[k]; ok {
				delete(s.partitions, k)
				delete(s.partNames, physicalKey{tm.id, id})
				delete(s.leaders, physicalKey{tm.id, id})
			}
		}
	})
	return nil
}
