package fluss

// LIST_TABLES (1008), version 0. Any server.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// ListTables returns the names of a database's tables.
func (c *Client) ListTables(ctx context.Context, database string) ([]string, error) {
	var resp pb.ListTablesResponse
	if err := c.callAnyServer(ctx, apiListTables, &pb.ListTablesRequest{DatabaseName: proto.String(database)}, &resp); err != nil {
		return nil, fmt.Errorf("list_tables %s: %w", database, err)
	}
	return resp.GetTableName(), nil
}
