package fluss

// GET_TABLE_SCHEMA (1011), version 0. Any server.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// GetTableSchema returns a table's schema with the given id, or its latest
// schema when schemaID < 0, together with the id.
func (c *Client) GetTableSchema(ctx context.Context, path TablePath, schemaID int32) (Schema, int32, error) {
	req := &pb.GetTableSchemaRequest{TablePath: pbTablePath(path)}
	if schemaID >= 0 {
		req.SchemaId = proto.Int32(schemaID)
	}
	var resp pb.GetTableSchemaResponse
	if err := c.callAnyServer(ctx, apiGetTableSchema, req, &resp); err != nil {
		return Schema{}, 0, fmt.Errorf("get_table_schema %s: %w", path, err)
	}
	s, err := ParseSchemaJSON(resp.GetSchemaJson())
	if err != nil {
		return Schema{}, 0, fmt.Errorf("get_table_schema %s: %w", path, err)
	}
	return s, resp.GetSchemaId(), nil
}
