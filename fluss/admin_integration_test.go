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
			if want.BucketCount == 0 {
				assert.Positive(t, got.BucketCount)
				want.BucketCount = got.BucketCount
			}
			// Ours must come back as we set them; the server adds
			// properties of its own, and which ones changes between
			// versions (1.0 adds table.kv.standby-replica.enabled to
			// primary-key tables).
			ours, added := splitServerProperties(want, got)
			assert.Equal(t, want, ours)
			t.Logf("properties the server added: %v", added)
			// Two server additions the client relies on: the replication
			// factor is always set, and a primary-key table's kv format
			// version decides how its keys are encoded.
			assert.NotEmpty(t, added[PropReplicationFactor])
			if tt.desc.HasPrimaryKey() {
				assert.Equal(t, "2", added[PropKvFormatVersion])
			}

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

// splitServerProperties splits got's table properties into those want has,
// left in ours (the rest of got unchanged), and those the server added on its
// own. A property of want that got lacks stays missing from ours, and one with
// another value keeps got's value, so ours equals want exactly when the server
// kept every property of want and the rest of the descriptor. Custom
// properties are the user's alone and are not split.
func splitServerProperties(want, got TableDescriptor) (ours TableDescriptor, added map[string]string) {
	ours = got
	ours.Properties = map[string]string{}
	added = map[string]string{}
	for k, v := range got.Properties {
		if _, mine := want.Properties[k]; mine {
			ours.Properties[k] = v
		} else {
			added[k] = v
		}
	}
	if got.Properties == nil && want.Properties == nil {
		ours.Properties = nil
	}
	return ours, added
}

// TestSplitServerProperties pins the tolerance of TestCreateTableRoundTrip:
// extra server properties pass, a lost or changed property of ours or any
// other difference fails.
func TestSplitServerProperties(t *testing.T) {
	base := func() TableDescriptor {
		return TableDescriptor{
			Schema:           Schema{Columns: []Column{{Name: "k", Type: Int().NonNull()}}, PrimaryKey: []string{"k"}},
			BucketKeys:       []string{"k"},
			PartitionKeys:    []string{},
			BucketCount:      3,
			Properties:       map[string]string{PropLogFormat: "INDEXED"},
			CustomProperties: map[string]string{"owner": "gateway"},
		}
	}
	const standby = "table.kv.standby-replica.enabled" // what a 1.0 coordinator adds to PK tables
	tests := []struct {
		name      string
		got       func(d *TableDescriptor)
		wantEqual bool
		wantAdded map[string]string
	}{
		{name: "as created", got: func(*TableDescriptor) {}, wantEqual: true, wantAdded: map[string]string{}},
		{name: "server adds properties", got: func(d *TableDescriptor) {
			d.Properties[standby] = "true"
			d.Properties[PropReplicationFactor] = "1"
		}, wantEqual: true, wantAdded: map[string]string{standby: "true", PropReplicationFactor: "1"}},
		{name: "our property lost", got: func(d *TableDescriptor) {
			delete(d.Properties, PropLogFormat)
			d.Properties[standby] = "true"
		}, wantAdded: map[string]string{standby: "true"}},
		{name: "our property changed", got: func(d *TableDescriptor) { d.Properties[PropLogFormat] = "ARROW" },
			wantAdded: map[string]string{}},
		{name: "custom property added", got: func(d *TableDescriptor) { d.CustomProperties["x"] = "y" },
			wantAdded: map[string]string{}},
		{name: "bucket count differs", got: func(d *TableDescriptor) {
			d.BucketCount = 4
			d.Properties[standby] = "true"
		}, wantAdded: map[string]string{standby: "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, got := base(), base()
			tt.got(&got)
			ours, added := splitServerProperties(want, got)
			assert.Equal(t, tt.wantEqual, assert.ObjectsAreEqual(want, ours), "ours %+v", ours)
			assert.Equal(t, tt.wantAdded, added)
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
