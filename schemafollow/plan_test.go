package schemafollow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

func TestCreateDescriptorShapesTheTable(t *testing.T) {
	spec := mapping.RouteSpec{Name: "r", Topic: "t", Table: fluss.TablePath{Database: "db", Table: "orders"},
		Value:        mapping.ValueSpec{Format: mapping.ValueAvro},
		Key:          mapping.KeySpec{Format: mapping.KeyJSON},
		Metadata:     mapping.MetadataSpec{Timestamp: "ts", Offset: "off"},
		FollowSchema: mapping.FollowSchemaSpec{PrimaryKey: []string{"id"}, Buckets: 3, Properties: map[string]string{"table.log.ttl": "7d"}},
	}.WithDefaults()
	cols := []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "name", Type: fluss.String()}}
	d, problems := createDescriptor(spec, cols, nil)
	require.Empty(t, problems)
	assert.Equal(t, []fluss.Column{{Name: "id", Type: fluss.BigInt().NonNull()}, {Name: "name", Type: fluss.String()},
		{Name: "ts", Type: fluss.TimestampLTZ(3)}, {Name: "off", Type: fluss.BigInt()}}, d.Schema.Columns)
	assert.Equal(t, []string{"id"}, d.Schema.PrimaryKey)
	assert.Equal(t, 3, d.BucketCount)
	require.NoError(t, checkBinds(t.Context(), spec, d, nil), "the route binds to the table it plans")
	p := &TablePlan{Route: "r", Table: spec.Table, Subject: "s", SchemaID: 7, Create: d}
	assert.Equal(t, `-- route r: subject "s", schema id 7
CREATE TABLE db.orders (
  id BIGINT NOT NULL,
  name STRING,
  ts TIMESTAMP_WITH_LOCAL_TIME_ZONE(3),
  off BIGINT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH ('bucket.num' = '3', 'table.log.ttl' = '7d');
`, p.String())

	spec.FollowSchema.PrimaryKey = []string{"order_id"}
	_, problems = createDescriptor(spec, cols, nil)
	assert.Equal(t, []string{"follow_schema names column order_id, which neither the writer schema nor the route fills"}, problems)
}

// follow_schema.primary_key_from_key: the key writer schema's fields lead
// the table as its NOT NULL primary key; a field the value shares keeps
// one column, and a field the two type differently is a problem.
func TestCreateDescriptorPrimaryKeyFromKey(t *testing.T) {
	spec := mapping.RouteSpec{Name: "r", Topic: "t", Table: fluss.TablePath{Database: "db", Table: "people"},
		Value:        mapping.ValueSpec{Format: mapping.ValueAvro},
		Key:          mapping.KeySpec{Format: mapping.KeyAvro},
		FollowSchema: mapping.FollowSchemaSpec{PrimaryKeyFromKey: true, Buckets: 2},
	}.WithDefaults()
	keyCols := []fluss.Column{{Name: "tenant", Type: fluss.String()}, {Name: "id", Type: fluss.BigInt()}}
	cols := []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "name", Type: fluss.String()}}
	d, problems := createDescriptor(spec, cols, keyCols)
	require.Empty(t, problems)
	assert.Equal(t, []fluss.Column{{Name: "tenant", Type: fluss.String().NonNull()}, {Name: "id", Type: fluss.BigInt().NonNull()},
		{Name: "name", Type: fluss.String()}}, d.Schema.Columns)
	assert.Equal(t, []string{"tenant", "id"}, d.Schema.PrimaryKey)
	require.NoError(t, checkBinds(t.Context(), spec, d, nil), "the key fills the primary key, so the route binds")

	_, problems = createDescriptor(spec, []fluss.Column{{Name: "id", Type: fluss.String()}}, keyCols)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "field id is BIGINT in the key's writer schema but STRING in the value's")
}

// A plan lists the writer fields no column is made for, and still applies.
func TestTablePlanListsFieldsNotAdded(t *testing.T) {
	p := &TablePlan{Route: "r", Table: fluss.TablePath{Database: "db", Table: "t"}, Subject: "s", SchemaID: 3,
		Add:      []fluss.Column{{Name: "channel", Type: fluss.String()}},
		NotAdded: []mapping.FieldNotAdded{{Field: "addr.zip", Type: "STRING", Reason: "new inside ROW column addr"}}}
	assert.False(t, p.Empty())
	assert.Equal(t, `-- route r: subject "s", schema id 3
ALTER TABLE db.t ADD COLUMN channel STRING;
-- not added (records are written without it, or refused under unknown_fields: reject): field "addr.zip" (STRING): new inside ROW column addr
`, p.String())
}
