package fluss

// TABLE_EXISTS (1010), version 0. Any server.

import (
	"context"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// TableExists reports whether a table exists.
func (c *Client) TableExists(ctx context.Context, path TablePath) (bool, error) {
	var resp pb.TableExistsResponse
	if err := c.callAnyServer(ctx, apiTableExists, &pb.TableExistsRequest{TablePath: pbTablePath(path)}, &resp); err != nil {
		return false, fmt.Errorf("table_exists %s: %w", path, err)
	}
	return resp.GetExists(), nil
}
