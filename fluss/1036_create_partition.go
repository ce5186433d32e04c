package fluss

// CREATE_PARTITION (1036), version 0. Coordinator only.
//
// Field 3 is named ignore_if_not_exists upstream, but the coordinator reads
// it as "ignore if the partition already exists"
// (CoordinatorService.createPartition); ignoreIfExists is sent there.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// CreatePartition creates a partition of a partitioned table. Without
// ignoreIfExists an existing partition is PARTITION_ALREADY_EXISTS (42).
func (c *Client) CreatePartition(ctx context.Context, path TablePath, spec PartitionSpec, ignoreIfExists bool) error {
	req := &pb.CreatePartitionRequest{
		TablePath:         pbTablePath(path),
		PartitionSpec:     spec.pb(),
		IgnoreIfNotExists: proto.Bool(ignoreIfExists),
	}
	what := fmt.Sprintf("create_partition %q of %s", spec.Name(), path)
	return c.callCoordinator(ctx, what, apiCreatePartition, req, &pb.CreatePartitionResponse{})
}
