package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func TestConnectSchemaColumns(t *testing.T) {
	schema := ConnectEnvelopeSchema(envelope(`{"id": 1, "name": "a"}`))
	require.NotNil(t, schema)
	cols, _, err := ConnectSchemaColumns(schema)
	require.NoError(t, err)
	assert.Equal(t, []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "name", Type: fluss.String()}}, cols)

	// The columns take the envelope's records.
	r := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueConnectJSON}}, tableInfo("db", "people", cols, nil))
	out, err := convert(t, r, Record{Value: envelope(`{"id": 7, "name": "ann"}`)})
	require.NoError(t, err)
	assert.Equal(t, int64(7), out.Row[0].I)

	wide := []byte(`{"type": "struct", "fields": [
		{"field": "b", "type": "int8"}, {"field": "s", "type": "int16"}, {"field": "i", "type": "int32"},
		{"field": "f", "type": "float32"}, {"field": "d", "type": "float64"}, {"field": "ok", "type": "boolean"},
		{"field": "raw", "type": "bytes"},
		{"field": "day", "type": "int32", "name": "org.apache.kafka.connect.data.Date"},
		{"field": "tod", "type": "int32", "name": "org.apache.kafka.connect.data.Time"},
		{"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
		{"field": "price", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2", "connect.decimal.precision": "10"}},
		{"field": "tags", "type": "array", "items": {"type": "string"}},
		{"field": "attrs", "type": "map", "keys": {"type": "string"}, "values": {"type": "int64"}},
		{"field": "addr", "type": "struct", "fields": [{"field": "city", "type": "string", "optional": true}]}
	]}`)
	cols, _, err = ConnectSchemaColumns(wide)
	require.NoError(t, err)
	want := []fluss.DataType{fluss.TinyInt(), fluss.SmallInt(), fluss.Int(), fluss.Float(), fluss.Double(), fluss.Boolean(), fluss.Bytes(),
		fluss.Date(), fluss.Time(3), fluss.TimestampLTZ(3), fluss.Decimal(10, 2), fluss.Array(fluss.String()),
		fluss.Map(fluss.String(), fluss.BigInt()), fluss.RowType(fluss.Field{Name: "city", Type: fluss.String()})}
	require.Len(t, cols, len(want))
	for i, w := range want {
		assert.Equal(t, w, cols[i].Type, cols[i].Name)
	}

	for _, bad := range []struct{ schema, reason string }{
		{`{"type": "string"}`, "not a struct"},
		{`{"type": "struct", "fields": [{"field": "m", "type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}}]}`, `field "m"`},
		{`{"type": "struct", "fields": [{"field": "x", "type": "float128"}]}`, "no column type"},
		{`[`, "not a Connect schema"},
	} {
		_, _, err := ConnectSchemaColumns([]byte(bad.schema))
		assert.ErrorContains(t, err, bad.reason, bad.schema)
	}
	assert.Nil(t, ConnectEnvelopeSchema([]byte(`{"payload": {"id": 1}}`)), "no schema member")
	assert.Nil(t, ConnectEnvelopeSchema([]byte(`[1]`)))
	assert.Equal(t, `{"type": "string"}`, string(ConnectEnvelopeSchema([]byte(`{"payload": "x", "schema": {"type": "string"}}`))))
}
