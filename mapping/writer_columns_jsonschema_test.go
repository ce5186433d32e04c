package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// jsonSchemaWriterRoute binds a json_schema route to a table made of cols
// and returns a converter of payloads written with s.
func jsonSchemaWriterRoute(t *testing.T, cols []fluss.Column, s *schemaregistry.Schema) (*Route, func(string) (*Converted, error)) {
	t.Helper()
	r := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueJSONSchema}}, tableInfo("db", "orders", cols, nil))
	return r, func(payload string) (*Converted, error) {
		return convert(t, r, Record{Value: []byte("framed"), SerializedValue: Serialized{Schema: s, Payload: []byte(payload)}})
	}
}

// Columns derived from a JSON Schema writer schema are what json_schema
// reads that schema into: in the schema text's order, a table made of them
// binds a json_schema route, the schema checks against it, and a document
// valid for the schema converts.
func TestWriterColumnsJSONSchema(t *testing.T) {
	t.Parallel()
	s := &schemaregistry.Schema{Type: "JSON", ID: 9, Deps: map[string]string{
		"address.json": `{"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}, "required": ["city"]}`,
	}, Text: `{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"properties": {
			"id": {"type": "integer", "description": "the order"},
			"qty": {"type": "integer", "connect.type": "int32"},
			"ok": {"type": "boolean"},
			"f": {"type": "number", "connect.type": "float32"},
			"d": {"type": "number"},
			"note": {"type": ["null", "string"]},
			"alt": {"oneOf": [{"type": "null"}, {"type": "integer", "connect.type": "int16"}]},
			"raw": {"type": "string", "contentEncoding": "base64"},
			"day": {"type": "string", "format": "date"},
			"at": {"type": "string", "format": "date-time"},
			"tod": {"type": "string", "format": "time"},
			"mail": {"type": "string", "format": "email"},
			"addr": {"$ref": "address.json", "description": "where to"},
			"ship": {"$ref": "#/definitions/Ship"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
			"a": {"allOf": [{"$ref": "#/definitions/Ship"}]}
		},
		"required": ["id"],
		"definitions": {"Ship": {"type": "object", "properties": {"days": {"type": "integer"}, "by": {"type": "string", "description": "carrier"}}}}
	}`}
	cols, _, err := WriterColumns("json_schema", s, "")
	require.NoError(t, err)
	ship := fluss.RowType(fluss.Field{Name: "days", Type: fluss.BigInt()}, fluss.Field{Name: "by", Type: fluss.String(), Description: "carrier"})
	want := []fluss.Column{
		{Name: "id", Type: fluss.BigInt(), Comment: "the order"}, {Name: "qty", Type: fluss.Int()}, {Name: "ok", Type: fluss.Boolean()},
		{Name: "f", Type: fluss.Float()}, {Name: "d", Type: fluss.Double()}, {Name: "note", Type: fluss.String()},
		{Name: "alt", Type: fluss.SmallInt()}, {Name: "raw", Type: fluss.Bytes()}, {Name: "day", Type: fluss.Date()},
		{Name: "at", Type: fluss.TimestampLTZ(3)}, {Name: "tod", Type: fluss.String()}, {Name: "mail", Type: fluss.String()},
		{Name: "addr", Type: fluss.RowType(fluss.Field{Name: "city", Type: fluss.String()}, fluss.Field{Name: "zip", Type: fluss.String()}), Comment: "where to"},
		{Name: "ship", Type: ship}, {Name: "tags", Type: fluss.Array(fluss.String())},
		{Name: "attrs", Type: fluss.Map(fluss.String(), fluss.BigInt())}, {Name: "a", Type: ship},
	}
	assert.Equal(t, want, cols)

	r, conv := jsonSchemaWriterRoute(t, cols, s)
	require.NoError(t, r.Converter().CheckWriterSchema(s, false), "the schema fills the table made from it")
	out, err := conv(`{"id": 7, "qty": 2, "ok": true, "f": 1.5, "d": 2.5, "note": null, "alt": 3, "raw": "AQI=",
		"day": "2024-01-02", "at": "2023-11-14T23:13:20.123456+01:00", "tod": "12:34:56Z", "mail": "a@b.c",
		"addr": {"city": "Lyon", "zip": "69001"}, "ship": {"days": 3, "by": "sea"}, "tags": ["a", "b"],
		"attrs": {"k": 1}, "a": {"days": 1}}`)
	require.NoError(t, err, "a document valid for the schema converts")
	assertRow(t, fluss.Row{
		{I: 7}, {I: 2}, {I: 1}, {F: 1.5}, {F: 2.5}, null, {I: 3}, {B: []byte{1, 2}},
		{I: 19724}, fluss.TimestampDatum(1_700_000_000_123, 0), str("12:34:56Z"), str("a@b.c"),
		fluss.RowDatum(str("Lyon"), str("69001")), fluss.RowDatum(fluss.IntDatum(3), str("sea")),
		fluss.ArrayDatum(str("a"), str("b")), fluss.MapDatum([]fluss.Datum{str("k")}, []fluss.Datum{{I: 1}}),
		fluss.RowDatum(fluss.IntDatum(1), null),
	}, out.Row)

	// Every type takes the other spellings the schema allows: a leap-free
	// date-time in lower case with Z, base64 unpadded, nulls where nullable.
	out, err = conv(`{"id": -1, "at": "2024-01-02t00:00:00z", "raw": "AQI", "alt": null, "day": "2024-02-29", "tags": []}`)
	require.NoError(t, err)
	assert.Equal(t, int64(1_704_153_600_000), out.Row[9].I)
	assert.Equal(t, []byte{1, 2}, out.Row[7].B)
	assert.True(t, out.Row[6].Null)
	assert.Equal(t, int64(19782), out.Row[8].I)

	_, err = conv(`{"id": 1, "day": "2024-02-30"}`)
	assert.ErrorContains(t, err, "does not validate", "draft 7 asserts formats, so DATE never sees a bad date")
}

// Under draft 2020-12 formats are annotations the validator does not
// check, so a formatted string stays STRING; $defs and items are read.
func TestWriterColumnsJSONSchemaDraft2020(t *testing.T) {
	t.Parallel()
	s := &schemaregistry.Schema{Type: "JSON", ID: 10, Text: `{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": ["object", "null"],
		"properties": {
			"zeta": {"type": "string", "format": "date"},
			"p": {"$ref": "#/$defs/P", "description": "a p"},
			"xs": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}
		},
		"$defs": {"P": {"type": "object", "properties": {"b": {"type": "boolean"}, "c/d e~f": {"type": "integer", "connect.type": "int32"}}}}
	}`}
	cols, _, err := WriterColumns("json_schema", s, "")
	require.NoError(t, err)
	assert.Equal(t, []fluss.Column{
		{Name: "zeta", Type: fluss.String()},
		{Name: "p", Type: fluss.RowType(fluss.Field{Name: "b", Type: fluss.Boolean()}, fluss.Field{Name: "c/d e~f", Type: fluss.Int()}), Comment: "a p"},
		{Name: "xs", Type: fluss.Array(fluss.BigInt())},
	}, cols)

	r, conv := jsonSchemaWriterRoute(t, cols, s)
	require.NoError(t, r.Converter().CheckWriterSchema(s, false))
	out, err := conv(`{"zeta": "not a date", "p": {"b": false, "c/d e~f": 5}, "xs": [1, null]}`)
	require.NoError(t, err, "an unchecked format still converts")
	assertRow(t, fluss.Row{str("not a date"), fluss.RowDatum(fluss.BoolDatum(false), fluss.IntDatum(5)), fluss.ArrayDatum(fluss.IntDatum(1), null)}, out.Row)
}

func TestWriterColumnsJSONSchemaRefused(t *testing.T) {
	t.Parallel()
	obj := func(props string) string { return `{"type": "object", "properties": {` + props + `}}` }
	for _, c := range []struct {
		name, schema string
		deps         map[string]string
		reason       []string
	}{
		{name: "not an object", schema: `{"type": "string"}`, reason: []string{"type is [string], not an object"}},
		{name: "untyped top level", schema: `{"properties": {"u": {"type": "string"}}}`, reason: []string{"type is untyped, not an object"}},
		{name: "no properties", schema: `{"type": "object"}`, reason: []string{"object without properties"}},
		{name: "multi-type", schema: obj(`"u": {"type": ["integer", "string"]}`), reason: []string{`field "u"`, "several types"}},
		{name: "oneOf of two", schema: obj(`"u": {"oneOf": [{"type": "integer"}, {"type": "string"}]}`), reason: []string{`field "u"`, "several types"}},
		{name: "untyped", schema: obj(`"u": {"description": "anything"}`), reason: []string{`field "u"`, "no type"}},
		{name: "null only", schema: obj(`"u": {"type": "null"}`), reason: []string{`field "u"`, "null-only"}},
		{name: "free-form object", schema: obj(`"u": {"type": "object"}`), reason: []string{`field "u"`, "object without properties"}},
		{name: "tuple", schema: obj(`"u": {"type": "array", "items": [{"type": "integer"}]}`), reason: []string{`field "u"`, "tuple"}},
		{name: "array without items", schema: obj(`"u": {"type": "array"}`), reason: []string{`field "u"`, "without items"}},
		{name: "nested", schema: obj(`"u": {"type": "object", "properties": {"v": {"type": ["boolean", "number"]}}}`), reason: []string{`field "u": property "v"`}},
		{name: "recursive", schema: obj(`"next": {"$ref": "#"}`), reason: []string{`field "next"`, "recursive"}},
		{
			name:   "recursive definition",
			schema: `{"type": "object", "properties": {"tree": {"$ref": "#/definitions/N"}}, "definitions": {"N": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/N"}}}}}}`,
			reason: []string{`field "tree": property "kids": items`, "recursive"},
		},
		{name: "remote ref", schema: obj(`"ok": {"type": "string"}, "x": {"$ref": "https://example.com/x.json"}`), reason: []string{`property "x"`, `$ref "https://example.com/x.json"`}},
		{name: "reference not given", schema: obj(`"x": {"type": "array", "items": {"$ref": "other.json#/definitions/Y"}}`), deps: map[string]string{"address.json": `{}`}, reason: []string{`property "x"`, "other.json"}},
	} {
		problem := columnsProblem(t, "json_schema", &schemaregistry.Schema{Type: "JSON", Text: c.schema, Deps: c.deps})
		for _, r := range c.reason {
			assert.Contains(t, problem, r, c.name)
		}
	}
	_, _, err := WriterColumns("json_schema", &schemaregistry.Schema{Type: "AVRO", Text: `"long"`}, "")
	assert.ErrorContains(t, err, "not JSON Schema")
}
