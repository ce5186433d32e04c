package fluss

// CREATE_TABLE (1005), version 0. Coordinator only.
//
// The descriptor travels as TableDescriptor JSON (table_json.go). The server
// fills defaults (bucket count, replication factor, table.kv.format-version
// for PK tables) and validates properties: an unknown "table.*" key is
// INVALID_CONFIG_EXCEPTION (39), a bad descriptor INVALID_TABLE_EXCEPTION (15).

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// CreateTable creates a table from a descriptor.
func (c *Client) CreateTable(ctx context.Context, path TablePath, d *TableDescriptor, ignoreIfExists bool) error {
	js, err := AppendTableJSON(nil, d)
	if err != nil {
		return fmt.Errorf("create_table %s: %w", path, err)
	}
	req := &pb.CreateTableRequest{
		TablePath:      pbTablePath(path),
		TableJson:      js,
		IgnoreIfExists: proto.Bool(ignoreIfExists),
	}
	if err := c.callCoordinator(ctx, "create_table "+path.String(), apiCreateTable, req, &pb.CreateTableResponse{}); err != nil {
		return err
	}
	c.InvalidateTableInfo(path)
	return nil
}
