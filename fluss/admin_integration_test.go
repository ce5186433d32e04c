package fluss

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterMetadata(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	require.NoError(t, c.WaitForTabletServers(ctx, 1))
	servers, err := c.TabletServers(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, servers)
	for _, s := range servers {
		assert.NotEmpty(t, s.Host)
		assert.Positive(t, s.Port)
	}
	co, err := c.Coordinator(ctx)
	require.NoError(t, err)
	assert.Positive(t, co.Port)
}

func TestCreateTableRoundTrip(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	db := newTestDatabase(t, c)

	logSchema := Schema{Columns: []Column{
		{Name: "id", Type: BigInt()},
		{Name: "name", Type: String(), Comment: "a comment with \"quotes\" and ünïcode"},
		{Name: "price", Type: Decimal(10, 2)},
		{Name: "ts", Type: TimestampLTZ(3)},
	}}
	tests := []struct {
		name string
		desc TableDescriptor
		// want is what GetTableInfo should return: desc plus server defaults.
		want func(d TableDescriptor) TableDescriptor
	}{
		{
			name: "log table",
			desc: TableDescriptor{
				Schema: logSchema, Comment: "log table", BucketCount: 3, BucketKeys: []string{"id"},
				Properties:       map[string]string{PropLogFormat: "INDEXED"},
				CustomProperties: map[string]string{"owner": "gateway"},
			},
		},
		{
			name: "log table without distribution",
			desc: TableDescriptor{Schema: logSchema},
		},
		{
			name: "primary key table",
			desc: TableDescriptor{
				Schema: Schema{Columns: []Column{
					{Name: "k1", Type: Int()},
					{Name: "k2", Type: String()},
					{Name: "v", Type: Bytes()},
				}, PrimaryKey: []string{"k1", "k2"}},
				BucketCount: 4,
			},
		},
		{
			name: "partitioned primary key table",
			desc: TableDescriptor{
				Schema: Schema{Columns: []Column{
					{Name: "k", Type: BigInt()},
					{Name: "day", Type: String()},
					{Name: "v", Type: Double()},
				}, PrimaryKey: []string{"k", "day"}},
				PartitionKeys: []string{"day"},
				BucketCount:   2,
			},
		},
		{
			name: "partitioned log table",
			desc: TableDescriptor{
				Schema:        logSchema,
				PartitionKeys: []string{"name"},
				BucketCount:   2,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := TablePath{Database: db, Table: uniqueName("t")}
			require.NoError(t, c.CreateTable(ctx, path, &tt.desc, false))

			info, err := c.GetTableInfo(ctx, path)
			require.NoError(t, err)
			assert.Equal(t, path, info.Path)
			assert.GreaterOrEqual(t, info.TableID, int64(0))
			assert.Positive(t, info.CreatedTime)
			got := info.Descriptor

			want := expectedAfterServerDefaults(tt.desc)
			// replication factor and kv format version are the server's
			// choice; check they are present, then compare the rest.
			assert.NotEmpty(t, got.Properties[PropReplicationFactor])
			delete(got.Properties, PropReplicationFactor)
			if tt.desc.HasPrimaryKey() {
				assert.Equal(t, "2", got.Properties[PropKvFormatVersion])
				delete(got.Properties, PropKvFormatVersion)
			}
			if want.BucketCount == 0 {
				assert.Positive(t, got.BucketCount)
				want.BucketCount = got.BucketCount
			}
			assert.Equal(t, want, got)

			// Creating it again fails with a typed error, unless ignored.
			err = c.CreateTable(ctx, path, &tt.desc, false)
			require.ErrorIs(t, err, ErrTableAlreadyExist)
			require.NoError(t, c.CreateTable(ctx, path, &tt.desc, true))

			exists, err := c.TableExists(ctx, path)
			require.NoError(t, err)
			assert.True(t, exists)
		})
	}
}

// expectedAfterServerDefaults applies to d what the Fluss builders and the
// coordinator do: ids assigned, PK columns NOT NULL, default bucket key, empty
// maps instead of nil.
func expectedAfterServerDefaults(d TableDescriptor) TableDescriptor {
	out := d
	out.Schema.Columns = assignColumnIDs(d.Schema.Columns)
	for i, col := range out.Schema.Columns {
		for _, k := range d.Schema.PrimaryKey {
			if col.Name == k {
				out.Schema.Columns[i].Type.NotNull = true
			}
		}
	}
	if len(out.BucketKeys) == 0 && d.HasPrimaryKey() {
		for _, k := range d.Schema.PrimaryKey {
			part := false
			for _, p := range d.PartitionKeys {
				part = part || p == k
			}
			if !part {
				out.BucketKeys = append(out.BucketKeys, k)
			}
		}
	}
	if out.PartitionKeys == nil {
		out.PartitionKeys = []string{}
	}
	if out.BucketKeys == nil {
		out.BucketKeys = []string{}
	}
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	if out.CustomProperties == nil {
		out.CustomProperties = map[string]string{}
	}
	return out
}

func TestUnknownTableIsTypedError(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	db := newTestDatabase(t, c)
	path := TablePath{Database: db, Table: "does_not_exist"}

	_, err := c.GetTableInfo(ctx, path)
	require.ErrorIs(t, err, ErrTableNotExist)
	var fe *Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, int32(7), fe.Code)
	assert.Equal(t, "TABLE_NOT_EXIST", fe.Name)
	assert.False(t, fe.Retriable)
	assert.False(t, IsRetriable(err))

	require.ErrorIs(t, c.RefreshMetadata(ctx, path), ErrTableNotExist)
	require.ErrorIs(t, c.DropTable(ctx, path, false), ErrTableNotExist)
	require.NoError(t, c.DropTable(ctx, path, true))

	_, err = c.GetTableInfo(ctx, TablePath{Database: uniqueName("nodb"), Table: "t"})
	require.Error(t, err)
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, []int32{4, 7}, fe.Code, "unknown database: %v", err)
}
