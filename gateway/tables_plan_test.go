package gateway

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
	d, problems := createDescriptor(spec, cols)
	require.Empty(t, problems)
	assert.Equal(t, []fluss.Column{{Name: "id", Type: fluss.BigInt().NonNull()}, {Name: "name", Type: fluss.String()},
		{Name: "ts", Type: fluss.TimestampLTZ(3)}, {Name: "off", Type: fluss.BigInt()}}, d.Schema.Columns)
	assert.Equal(t, []string{"id"}, d.Schema.PrimaryKey)
	assert.Equal(t, 3, d.BucketCount)
	require.NoError(t, checkBinds(spec, d), "the route binds to the table it plans")
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
	_, problems = createDescriptor(spec, cols)
	assert.Equal(t, []string{"follow_schema names column order_id, which neither the writer schema nor the route fills"}, problems)
}
