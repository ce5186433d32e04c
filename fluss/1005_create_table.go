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
	"time"

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

// readyTimeout bounds one wait for a new table's leaders in CreateTableReady.
const readyTimeout = 30 * time.Second

// CreateTableReady creates a non-partitioned table and waits until every
// bucket has a serving leader. Under load a Fluss 0.9.1 tablet server can
// receive a new bucket's leadership before it sees the table's schema in
// ZooKeeper; it then logs "Error while checking and creating replica ...
// SchemaNotExistException" and never retries, so the bucket stays without a
// leader for good. When the leaders do not come within 30 s, the table this
// call just created is dropped and created again (at most attempts times,
// default 3). Only for tables nobody else writes yet: use it right after
// deciding to create the table.
func (c *Client) CreateTableReady(ctx context.Context, path TablePath, d *TableDescriptor, attempts int) error {
	if d.IsPartitioned() {
		return fmt.Errorf("create_table %s: CreateTableReady is for non-partitioned tables", path)
	}
	if attempts <= 0 {
		attempts = 3
	}
	var lastErr error
	for i := range attempts {
		if i > 0 {
			if err := c.DropTable(ctx, path, true); err != nil {
				return fmt.Errorf("drop table %s whose buckets got no leader: %w", path, err)
			}
		}
		if err := c.CreateTable(ctx, path, d, false); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, readyTimeout)
		lastErr = c.WaitForTableLeaders(wctx, path)
		cancel()
		if lastErr == nil || ctx.Err() != nil {
			return lastErr
		}
	}
	return fmt.Errorf("create_table %s: buckets got no leader after %d attempts: %w", path, attempts, lastErr)
}
