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
	cn, err := c.metadataConn(ctx)
	if err != nil {
		return false, fmt.Errorf("database_exists %s: %w", name, err)
	}
	var resp pb.DatabaseExistsResponse
	if err := cn.call(ctx, apiDatabaseExists, &pb.DatabaseExistsRequest{DatabaseName: proto.String(name)}, &resp, 0); err != nil {
		return false, fmt.Errorf("database_exists %s on %s: %w", name, cn.addr, err)
	}
	return resp.GetExists(), nil
}
