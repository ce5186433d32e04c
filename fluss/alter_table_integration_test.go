package fluss

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAddColumns: on a real server, columns added to a log and a
// primary-key table come last, nullable, under a new schema id; the older
// schema stays readable by id; adding a column the table has, or a NOT
// NULL one, is refused.
func TestAddColumns(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	db := newTestDatabase(t, c)
	for _, tc := range []struct {
		name string
		d    TableDescriptor
	}{
		{"log", TableDescriptor{Schema: Schema{Columns: []Column{{Name: "id", Type: BigInt()}}}, BucketCount: 1}},
		{"pk", TableDescriptor{Schema: Schema{Columns: []Column{{Name: "id", Type: BigInt().NonNull()}, {Name: "v", Type: String()}},
			PrimaryKey: []string{"id"}}, BucketCount: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := TablePath{Database: db, Table: "alter_" + tc.name}
			require.NoError(t, c.CreateTable(ctx, path, &tc.d, false))
			before, err := c.GetTableInfo(ctx, path)
			require.NoError(t, err)

			added := []Column{{Name: "name", Type: String(), Comment: "added"}, {Name: "score", Type: Decimal(10, 2)}}
			require.NoError(t, c.AddColumns(ctx, path, added))
			after, err := c.GetTableInfo(ctx, path)
			require.NoError(t, err)
			cols := after.Descriptor.Schema.Columns
			require.Len(t, cols, len(tc.d.Schema.Columns)+2)
			n := len(tc.d.Schema.Columns)
			assert.Equal(t, "name", cols[n].Name)
			assert.Equal(t, TypeString, cols[n].Type.Root)
			assert.False(t, cols[n].Type.NotNull)
			assert.Equal(t, "score", cols[n+1].Name)
			assert.Equal(t, Decimal(10, 2).Root, cols[n+1].Type.Root)
			assert.Equal(t, 10, cols[n+1].Type.Precision)
			assert.Greater(t, after.SchemaID, before.SchemaID, "a new schema id")
			old, id, err := c.GetTableSchema(ctx, path, before.SchemaID)
			require.NoError(t, err)
			assert.Equal(t, before.SchemaID, id)
			assert.Len(t, old.Columns, n, "the older schema is kept")

			err = c.AddColumns(ctx, path, []Column{{Name: "name", Type: String()}})
			require.ErrorIs(t, err, ErrInvalidAlterTable, "a column the table has")
			require.ErrorContains(t, c.AddColumns(ctx, path, []Column{{Name: "x", Type: Int().NonNull()}}), "nullable")
		})
	}
}
