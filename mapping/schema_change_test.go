package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// A v2 writer schema with a new top-level field and a new field inside a
// record: the top-level one is added, the nested one (in a ROW, and in a
// ROW inside an ARRAY) is a field Fluss cannot add; a type change is not
// ColumnsToAdd's to judge.
func TestColumnsToAdd(t *testing.T) {
	have := []fluss.Column{
		{Name: "id", Type: fluss.BigInt()},
		{Name: "addr", Type: fluss.RowType(fluss.RowField("city", fluss.String()))},
		{Name: "items", Type: fluss.Array(fluss.RowType(fluss.RowField("sku", fluss.String())))},
		{Name: "score", Type: fluss.Double()},
	}
	want := []fluss.Column{
		{Name: "id", Type: fluss.BigInt()},
		{Name: "addr", Type: fluss.RowType(fluss.RowField("city", fluss.String()), fluss.RowField("zip", fluss.String()))},
		{Name: "items", Type: fluss.Array(fluss.RowType(fluss.RowField("sku", fluss.String()), fluss.RowField("qty", fluss.Int())))},
		{Name: "score", Type: fluss.String()},
		{Name: "channel", Type: fluss.String()},
	}
	add, notAdded := ColumnsToAdd(have, want)
	assert.Equal(t, []fluss.Column{{Name: "channel", Type: fluss.String()}}, add)
	require.Len(t, notAdded, 2)
	assert.Equal(t, "addr.zip", notAdded[0].Field)
	assert.Contains(t, notAdded[0].String(), "new inside ROW column addr")
	assert.Equal(t, "items[].qty", notAdded[1].Field)
	assert.Contains(t, notAdded[1].String(), "new inside ROW column items")

	add, notAdded = ColumnsToAdd(want, want)
	assert.Empty(t, add)
	assert.Empty(t, notAdded)
}

// A top-level field no column type holds is left out with its reason;
// the other fields still make columns.
func TestWriterColumnsLeaveOutFieldsWithoutType(t *testing.T) {
	w := newAvroWriter(t, `{"type": "record", "name": "R", "fields": [
		{"name": "id", "type": "long"},
		{"name": "u", "type": ["int", "string"]},
		{"name": "note", "type": ["null", "string"], "default": null}]}`)
	cols, notAdded, err := WriterColumns("avro", w.reg, "")
	require.NoError(t, err)
	assert.Equal(t, []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "note", Type: fluss.String()}}, cols)
	require.Len(t, notAdded, 1)
	assert.Equal(t, "u", notAdded[0].Field)
	assert.Contains(t, notAdded[0].String(), "a union of several types")

	js := &schemaregistry.Schema{Type: "JSON", Text: `{"type": "object", "properties": {"id": {"type": "integer"}, "any": {"description": "untyped"}}}`}
	cols, notAdded, err = WriterColumns("json_schema", js, "")
	require.NoError(t, err)
	assert.Equal(t, []fluss.Column{{Name: "id", Type: fluss.BigInt()}}, cols)
	require.Len(t, notAdded, 1)
	assert.Equal(t, "any", notAdded[0].Field)
}

const multiMessageProto = `syntax = "proto3";
package shop;
message Meta { string source = 1; }
message Event { int64 id = 1; string name = 2; Meta meta = 3; }
`

// A .proto file of several messages: the columns are those of the message
// named (as a record's message indexes name it), never of the first; with
// no name it is refused, naming the candidates.
func TestWriterColumnsProtobufMessage(t *testing.T) {
	s := &schemaregistry.Schema{Type: "PROTOBUF", ID: 31, Text: multiMessageProto}
	msg, err := ProtobufMessage(s, schemaregistry.Ref{MessageIndexes: []int{1}})
	require.NoError(t, err)
	assert.Equal(t, "shop.Event", msg)
	msg, err = ProtobufMessage(s, schemaregistry.Ref{MessageName: "Event"})
	require.NoError(t, err, "Apicurio's simple name")
	assert.Equal(t, "shop.Event", msg)
	msg, err = ProtobufMessage(s, schemaregistry.Ref{})
	require.NoError(t, err)
	assert.Equal(t, "shop.Meta", msg, "no indexes: the first message, as the decoder reads it")

	cols, _, err := WriterColumns("protobuf", s, "shop.Event")
	require.NoError(t, err)
	assert.Equal(t, []string{"id", "name", "meta"}, []string{cols[0].Name, cols[1].Name, cols[2].Name})
	_, _, err = WriterColumns("protobuf", s, "")
	assert.ErrorContains(t, err, "declares 2 messages (shop.Meta, shop.Event)")
	_, _, err = WriterColumns("protobuf", s, "shop.Nope")
	assert.ErrorContains(t, err, `message "shop.Nope" is not in writer schema`)

	// The route's value.message is what validate checks: Meta's source
	// (a string) cannot fill a ROW column; Event has no source.
	withSource := append(cols, fluss.Column{Name: "source", Type: fluss.RowType(fluss.RowField("x", fluss.String()))})
	r := pbRoute(t, withSource, RouteSpec{Value: ValueSpec{Format: ValueProtobuf, Message: "shop.Event"}})
	require.NoError(t, r.Converter().CheckWriterSchema(s, false))
	r = pbRoute(t, withSource, RouteSpec{})
	assert.ErrorContains(t, r.Converter().CheckWriterSchema(s, false), "source", "without value.message the first message (Meta) is checked")
}

// A field new inside a nested record is an unknown field: left out under
// unknown_fields: ignore, the record's error under reject, in every
// registry format.
func TestNestedNewFieldIsUnknownField(t *testing.T) {
	cols := []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "addr", Type: fluss.RowType(fluss.RowField("city", fluss.String()))}}
	reject := func(s *RouteSpec) { s.Value.UnknownFields = FieldReject }

	t.Run("avro", func(t *testing.T) {
		w := newAvroWriter(t, `{"type": "record", "name": "P", "fields": [{"name": "id", "type": "long"},
			{"name": "addr", "type": {"type": "record", "name": "A", "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": null}]}}]}`)
		payload := w.encode(t, map[string]any{"id": int64(2), "addr": map[string]any{"city": "Nice", "zip": "06000"}})
		out, err := convert(t, avroRoute(t, tableInfo("db", "t", cols, nil)), w.record(payload))
		require.NoError(t, err)
		assertRow(t, fluss.Row{{I: 2}, fluss.RowDatum(str("Nice"))}, out.Row)
		_, err = convert(t, avroRoute(t, tableInfo("db", "t", cols, nil), reject), w.record(payload))
		requireRecordError(t, err, "addr", `unknown field "zip"`)
	})
	t.Run("protobuf", func(t *testing.T) {
		f := pbFixtureOf(t, `syntax = "proto3"; message A { string city = 1; string zip = 2; } message P { int64 id = 1; A addr = 2; }`, nil)
		payload := f.encode(t, "P", `{"id": "2", "addr": {"city": "Nice", "zip": "06000"}}`)
		out, err := convert(t, pbRoute(t, cols, RouteSpec{}), pbRecord(f.schema, []int{1}, payload))
		require.NoError(t, err)
		assertRow(t, fluss.Row{{I: 2}, fluss.RowDatum(str("Nice"))}, out.Row)
		_, err = convert(t, pbRoute(t, cols, RouteSpec{Value: ValueSpec{Format: ValueProtobuf, UnknownFields: FieldReject}}), pbRecord(f.schema, []int{1}, payload))
		pbRequireErr(t, err, "addr", "zip")
	})
	t.Run("json_schema", func(t *testing.T) {
		s := &schemaregistry.Schema{Type: "JSON", ID: 41, Text: `{"type": "object", "properties": {"id": {"type": "integer"},
			"addr": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}}}}`}
		rec := Record{Topic: "t", Value: []byte("framed"), SerializedValue: Serialized{Schema: s, Payload: []byte(`{"id": 2, "addr": {"city": "Nice", "zip": "06000"}}`)}}
		info := tableInfo("db", "t", cols, nil)
		out, err := convert(t, bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueJSONSchema}}, info), rec)
		require.NoError(t, err)
		assertRow(t, fluss.Row{{I: 2}, fluss.RowDatum(str("Nice"))}, out.Row)
		_, err = convert(t, bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueJSONSchema, UnknownFields: FieldReject}}, info), rec)
		requireRecordError(t, err, "addr", `unknown field "zip"`)
	})
}
