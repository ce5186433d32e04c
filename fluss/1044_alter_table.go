package fluss

// ALTER_TABLE (1044), version 0. Coordinator only.
//
// Fluss 0.9 changes a table's schema in one way only: nullable columns
// added at the end (the server refuses NOT NULL, other positions, drops,
// renames and type changes). Each change makes a new schema id; rows
// written with an older schema read null in the added columns.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// columnPositionLast is PbAddColumn.column_position_type LAST.
const columnPositionLast int32 = 0

// AddColumns appends nullable columns to a table, in order, and forgets
// what the client cached about it (its info and schema change). A column
// the table already has fails the whole call (ErrInvalidAlterTable, "Column
// name already exists."); a caller racing another writer reads the table again.
func (c *Client) AddColumns(ctx context.Context, path TablePath, cols []Column) error {
	req := &pb.AlterTableRequest{TablePath: pbTablePath(path), IgnoreIfNotExists: proto.Bool(false)}
	for _, col := range cols {
		if col.Type.NotNull {
			return fmt.Errorf("alter_table %s: column %s: an added column must be nullable", path, col.Name)
		}
		js, err := AppendDataTypeJSON(nil, col.Type)
		if err != nil {
			return fmt.Errorf("alter_table %s: column %s: %w", path, col.Name, err)
		}
		add := &pb.PbAddColumn{ColumnName: proto.String(col.Name), DataTypeJson: js, ColumnPositionType: proto.Int32(columnPositionLast)}
		if col.Comment != "" {
			add.Comment = proto.String(col.Comment)
		}
		req.AddColumns = append(req.AddColumns, add)
	}
	if err := c.callCoordinator(ctx, "alter_table "+path.String(), apiAlterTable, req, &pb.AlterTableResponse{}); err != nil {
		return err
	}
	c.InvalidateTableInfo(path)
	return nil
}
