package fluss

// GET_TABLE_INFO (1007), version 0. Any server; asked of the coordinator.

import (
	"context"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// GetTableInfo fetches a table's id, schema id and descriptor (with the
// server's defaults applied) from the server, bypassing the cache. An
// unknown table is TABLE_NOT_EXIST (7). See also Client.TableInfo (cached).
func (c *Client) GetTableInfo(ctx context.Context, path TablePath) (*TableInfo, error) {
	var resp pb.GetTableInfoResponse
	what := "get_table_info " + path.String()
	if err := c.callAnyServer(ctx, apiGetTableInfo, &pb.GetTableInfoRequest{TablePath: pbTablePath(path)}, &resp); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	d, err := ParseTableJSON(resp.GetTableJson())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &TableInfo{
		Path:         path,
		TableID:      resp.GetTableId(),
		SchemaID:     resp.GetSchemaId(),
		Descriptor:   d,
		CreatedTime:  resp.GetCreatedTime(),
		ModifiedTime: resp.GetModifiedTime(),
	}, nil
}
