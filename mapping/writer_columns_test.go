package mapping

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Columns derived from an Avro writer schema are what the avro format
// reads that schema into: a table made of them binds an avro route, the
// schema checks against it, and a record converts.
func TestWriterColumnsAvro(t *testing.T) {
	w := newAvroWriter(t, `{"type": "record", "name": "Order", "fields": [
		{"name": "id", "type": "long", "doc": "the order"},
		{"name": "qty", "type": "int"},
		{"name": "ok", "type": "boolean"},
		{"name": "f", "type": "float"},
		{"name": "d", "type": "double"},
		{"name": "note", "type": ["null", "string"], "default": null},
		{"name": "raw", "type": "bytes"},
		{"name": "hash", "type": {"type": "fixed", "name": "H", "size": 4}},
		{"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "DONE"]}},
		{"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
		{"name": "day", "type": {"type": "int", "logicalType": "date"}},
		{"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
		{"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
		{"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
		{"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
		{"name": "addr", "type": {"type": "record", "name": "A", "fields": [{"name": "city", "type": "string"}]}},
		{"name": "tags", "type": {"type": "array", "items": "string"}},
		{"name": "attrs", "type": {"type": "map", "values": "long"}}
	]}`)
	cols, _, err := WriterColumns("avro", w.reg, "")
	require.NoError(t, err)
	want := []fluss.Column{
		{Name: "id", Type: fluss.BigInt(), Comment: "the order"}, {Name: "qty", Type: fluss.Int()}, {Name: "ok", Type: fluss.Boolean()},
		{Name: "f", Type: fluss.Float()}, {Name: "d", Type: fluss.Double()}, {Name: "note", Type: fluss.String()},
		{Name: "raw", Type: fluss.Bytes()}, {Name: "hash", Type: fluss.Binary(4)}, {Name: "state", Type: fluss.String()},
		{Name: "price", Type: fluss.Decimal(10, 2)}, {Name: "day", Type: fluss.Date()}, {Name: "at", Type: fluss.TimestampLTZ(3)},
		{Name: "local", Type: fluss.Timestamp(6)}, {Name: "tod", Type: fluss.Time(3)}, {Name: "uid", Type: fluss.String()},
		{Name: "addr", Type: fluss.RowType(fluss.Field{Name: "city", Type: fluss.String()})},
		{Name: "tags", Type: fluss.Array(fluss.String())}, {Name: "attrs", Type: fluss.Map(fluss.String(), fluss.BigInt())},
	}
	assert.Equal(t, want, cols)

	r := avroRoute(t, tableInfo("db", "orders", cols, nil))
	require.NoError(t, r.Converter().CheckWriterSchema(w.reg, false), "the schema fills the table made from it")
	at := time.UnixMilli(1_700_000_000_123).UTC()
	v := map[string]any{"id": int64(7), "qty": int32(2), "ok": true, "f": float32(1.5), "d": 2.5, "note": "n",
		"raw": []byte{1}, "hash": [4]byte{1, 2, 3, 4}, "state": "DONE", "price": big.NewRat(1234, 100), "day": at,
		"at": at, "local": at, "tod": 3 * time.Second, "uid": "0b7d9a3e-1111-2222-3333-444455556666",
		"addr": map[string]any{"city": "Lyon"}, "tags": []string{"a"}, "attrs": map[string]int64{"k": 1}}
	out, err := convert(t, r, w.record(w.encode(t, v)))
	require.NoError(t, err)
	assert.Equal(t, int64(7), out.Row[0].I)
	assert.Equal(t, "DONE", string(out.Row[8].B))
	assert.Equal(t, int64(1_700_000_000_123), out.Row[11].I)
	assert.Equal(t, "Lyon", string(out.Row[15].Nested.Fields[0].B))
}

func TestWriterColumnsRefused(t *testing.T) {
	for _, c := range []struct{ name, schema, reason string }{
		{"not a record", `"long"`, "not a record"},
		{"union of several", `{"type": "record", "name": "R", "fields": [{"name": "u", "type": ["int", "string"]}]}`, `field "u"`},
		{"recursive", `{"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]}`, "nested too deeply"},
		{"wide decimal", `{"type": "record", "name": "R", "fields": [{"name": "x", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}}]}`, "precision 1 to 38"},
	} {
		w := newAvroWriter(t, c.schema)
		assert.Contains(t, columnsProblem(t, "avro", w.reg), c.reason, c.name)
	}
	_, _, err := WriterColumns("json", &schemaregistry.Schema{Type: "JSON", Text: "{}"}, "")
	assert.ErrorContains(t, err, "has no writer schema")
}

// columnsProblem is why a writer schema makes no columns, or why some of
// its fields make none: the error, else the fields not added.
func columnsProblem(t *testing.T, format string, s *schemaregistry.Schema) string {
	t.Helper()
	_, notAdded, err := WriterColumns(format, s, "")
	if err != nil {
		return err.Error()
	}
	require.NotEmpty(t, notAdded, "a field left out, or an error")
	var parts []string
	for _, f := range notAdded {
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}
