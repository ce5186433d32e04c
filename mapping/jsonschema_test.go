package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

const orderJSONSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "name": {"type": "string"},
    "address": {"$ref": "address.json"}
  },
  "required": ["id"]
}`

const addressJSONSchema = `{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`

// TestJSONSchemaValue: a json_schema value validates against its writer
// schema (with a $ref resolved from the registry references) and then
// fills columns as a JSON value does; a value that does not validate, or a
// writer schema of another type, is a record error.
func TestJSONSchemaValue(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String()), col("city", fluss.String())}, nil)
	r := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueJSONSchema, Paths: map[string]string{"city": "address.city"}}}, info)
	schema := &schemaregistry.Schema{Type: "JSON", Text: orderJSONSchema, Deps: map[string]string{"address.json": addressJSONSchema}, ID: 4}
	convert := func(payload string, s *schemaregistry.Schema) (*Converted, error) {
		var out Converted
		rec := &Record{Topic: "t", Value: []byte("framed"), SerializedValue: Serialized{Schema: s, Payload: []byte(payload)}}
		return &out, r.Converter().Convert(rec, &out)
	}

	out, err := convert(`{"id": 7, "name": "a", "address": {"city": "Lyon"}}`, schema)
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 7}, str("a"), str("Lyon")}, out.Row)

	for _, tc := range []struct{ name, payload, reason string }{
		{"required field missing", `{"name": "a"}`, "does not validate against its schema"},
		{"wrong type", `{"id": "seven"}`, "does not validate against its schema"},
		{"the referenced schema is enforced", `{"id": 1, "address": {}}`, "does not validate against its schema"},
		{"not JSON", `{"id": `, "not JSON"},
	} {
		_, err := convert(tc.payload, schema)
		var re *RecordError
		require.ErrorAs(t, err, &re, tc.name)
		assert.Contains(t, re.Message(), tc.reason, tc.name)
	}
	_, err = convert(`{"id": 1}`, &schemaregistry.Schema{Type: "AVRO", Text: `"long"`, ID: 5})
	assert.ErrorIs(t, err, ErrInvalidRecord, "an Avro writer schema on a json_schema route")
	_, err = convert(`{"id": 1}`, &schemaregistry.Schema{Type: "JSON", Text: `{"$ref": "https://example.com/x.json"}`, ID: 6})
	assert.ErrorIs(t, err, ErrInvalidRecord, "a $ref outside the registry references is never fetched")
}
