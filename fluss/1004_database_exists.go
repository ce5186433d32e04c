package fluss

// DATABASE_EXISTS (1004), version 0. Any server.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// DatabaseExists reports whether a database exists.
func (c *Client) DatabaseExists(ctx context.Context, name string) (bool, error) {
	var resp pb.DatabaseExistsResponse
	if err := c.callAnyServer(ctx, apiDatabaseExists, &pb.DatabaseExistsRequest{DatabaseName: proto.String(name)}, &resp); err != nil {
		return false, fmt.Errorf("database_exists %s: %w", name, err)
	}
	return resp.GetExists(), nil
}
