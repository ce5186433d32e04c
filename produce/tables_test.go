package produce

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// exampleTables are the tables configs/gateway.yaml's comments create.
func exampleTables() map[fluss.TablePath]*fluss.TableInfo {
	c := func(name string, t fluss.DataType) fluss.Column { return fluss.Column{Name: name, Type: t} }
	info := func(db, table string, cols []fluss.Column, pk []string, part ...string) *fluss.TableInfo {
		return &fluss.TableInfo{
			Path: fluss.TablePath{Database: db, Table: table},
			Descriptor: fluss.TableDescriptor{
				Schema:        fluss.Schema{Columns: cols, PrimaryKey: pk},
				PartitionKeys: part,
				BucketCount:   3,
			},
		}
	}
	tables := []*fluss.TableInfo{
		info("shop", "orders", []fluss.Column{c("order_id", fluss.BigInt()), c("customer", fluss.String()),
			c("amount", fluss.Decimal(10, 2)), c("created_at", fluss.TimestampLTZ(3)),
			c("kafka_ts", fluss.TimestampLTZ(3)), c("kafka_partition", fluss.Int())}, nil),
		info("shop", "customers", []fluss.Column{c("id", fluss.String().NonNull()), c("name", fluss.String()),
			c("email", fluss.String()), c("updated_at", fluss.BigInt())}, []string{"id"}),
		info("shop", "clicks", []fluss.Column{c("user_id", fluss.BigInt()), c("url", fluss.String()), c("dt", fluss.String())}, nil, "dt"),
		info("ops", "raw_logs", []fluss.Column{c("payload", fluss.Bytes()), c("topic", fluss.String()),
			c("headers", fluss.String()), c("kafka_key", fluss.Bytes())}, nil),
		info("shop", "dead_letters", []fluss.Column{c(mapping.DLQColumnTopic, fluss.String()), c(mapping.DLQColumnValue, fluss.Bytes()),
			c(mapping.DLQColumnReason, fluss.String())}, nil),
	}
	m := map[fluss.TablePath]*fluss.TableInfo{}
	for _, t := range tables {
		m[t.Path] = t
	}
	return m
}

func TestExampleConfigRoutesBind(t *testing.T) {
	t.Parallel()
	cfg, err := configs.Load(filepath.Join("..", "configs", "gateway.yaml"))
	require.NoError(t, err)
	rs, err := mapping.NewRoutes(cfg.Routes)
	require.NoError(t, err)
	tables := exampleTables()
	for _, p := range rs.Tables() {
		assert.Contains(t, tables, p)
	}
	bound, err := rs.Bind(tables)
	require.NoError(t, err)

	tests := []struct {
		topic string
		rec   mapping.Record
		check func(t *testing.T, out *mapping.Converted)
	}{
		{"orders", mapping.Record{Partition: 1, Timestamp: 1000, Value: []byte(`{"order_id": 1, "customer": {"name": "ann"}, "amount": "9.99"}`)},
			func(t *testing.T, out *mapping.Converted) {
				assert.Equal(t, "ann", string(out.Row[1].B))
				assert.Equal(t, int64(999), out.Row[2].I)
				assert.Equal(t, int64(1000), out.Row[4].I)
				assert.Equal(t, int32(1), out.Bucket)
			}},
		{"customers", mapping.Record{Key: []byte("c1"), Value: []byte(`{"name": "ann"}`)},
			func(t *testing.T, out *mapping.Converted) { assert.Equal(t, fluss.WriteUpsert, out.Op) }},
		{"customers", mapping.Record{Key: []byte("c1")},
			func(t *testing.T, out *mapping.Converted) { assert.Equal(t, fluss.WriteDelete, out.Op) }},
		{"clicks", mapping.Record{Timestamp: 1_704_164_645_000, Value: []byte(`{"user_id": 7}`)},
			func(t *testing.T, out *mapping.Converted) { assert.Equal(t, "20240102", out.Partition) }},
		{"logs.app", mapping.Record{Value: []byte("line")},
			func(t *testing.T, out *mapping.Converted) {
				assert.Equal(t, "line", string(out.Row[0].B))
				assert.Equal(t, "logs.app", string(out.Row[1].B))
			}},
	}
	for _, tc := range tests {
		r, ok := bound.Resolve(tc.topic)
		require.True(t, ok, tc.topic)
		tc.rec.Topic = tc.topic
		out := &mapping.Converted{}
		require.NoError(t, r.Converter().Convert(&tc.rec, out), tc.topic)
		tc.check(t, out)
	}
	// The orders route sends bad records to its DLQ.
	r, _ := bound.Resolve("orders")
	require.NotNil(t, r.DLQ())
	assert.Equal(t, fluss.TablePath{Database: "shop", Table: "dead_letters"}, r.DLQ().Table())
}
