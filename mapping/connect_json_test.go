package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// envelope is what Kafka Connect's JsonConverter (schemas.enable=true)
// writes for a struct {id: int64, name: optional string}.
func envelope(payload string) []byte {
	return []byte(`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},` +
		`{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"person"},"payload":` + payload + `}`)
}

func TestConnectJSONEnvelope(t *testing.T) {
	cols := []fluss.Column{col("id", fluss.BigInt().NonNull()), col("name", fluss.String()), col("day", fluss.Date())}
	logRoute := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueConnectJSON}}, tableInfo("db", "people", cols, nil))
	pkRoute := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueConnectJSON}, Key: KeySpec{Format: KeyJSON}},
		tableInfo("db", "people_pk", cols, []string{"id"}))
	strict := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueConnectJSON, UnknownFields: FieldReject}},
		tableInfo("db", "people", cols, nil))

	out, err := convert(t, logRoute, Record{Value: envelope(`{"id": 7, "name": "ann", "day": 19000}`)})
	require.NoError(t, err)
	assert.Equal(t, fluss.WriteAppend, out.Op)
	assert.Equal(t, int64(7), out.Row[0].I)
	assert.Equal(t, "ann", string(out.Row[1].B))
	assert.Equal(t, int64(19000), out.Row[2].I, "Connect's Date is days")

	// The schema may come after the payload; unknown_fields: reject
	// applies to the payload's fields, not to the envelope's schema.
	out, err = convert(t, strict, Record{Value: []byte(`{"payload": {"id": 1}, "schema": {"type": "struct"}}`)})
	require.NoError(t, err)
	assert.Equal(t, int64(1), out.Row[0].I)
	assert.True(t, out.Row[1].Null)
	_, err = convert(t, strict, Record{Value: envelope(`{"id": 1, "extra": 2}`)})
	require.ErrorContains(t, err, `unknown field "extra"`)

	// A null payload is a tombstone: a delete on a primary-key table.
	out, err = convert(t, pkRoute, Record{Key: []byte(`{"id": 9}`), Value: envelope(`null`)})
	require.NoError(t, err)
	assert.Equal(t, fluss.WriteDelete, out.Op)
	assert.Equal(t, int64(9), out.Row[0].I)
	_, err = convert(t, logRoute, Record{Value: envelope(`null`)})
	require.ErrorContains(t, err, "tombstone")

	bad := []struct{ name, value, reason string }{
		{"schemas disabled", `{"id": 1, "name": "x"}`, "no payload field"},
		{"primitive payload", `{"schema": {"type": "string"}, "payload": "x"}`, "the payload is a string, not an object"},
		{"not an object", `[1]`, "not a Kafka Connect JSON envelope"},
		{"empty", ``, "empty"},
		{"trailing comma", `{"payload": {"id": 1},}`, "invalid JSON"},
		{"truncated", `{"payload": {"id": 1}`, "invalid JSON"},
		{"two payloads", `{"payload": {"id": 1}, "payload": {"id": 2}}`, "two payload fields"},
		{"data after", `{"payload": {"id": 1}} x`, "data after"},
		{"bad payload field", `{"payload": {"id": "seven"}}`, `column "id"`},
	}
	for _, b := range bad {
		_, err := convert(t, logRoute, Record{Value: []byte(b.value)})
		require.Error(t, err, b.name)
		assert.Contains(t, err.Error(), b.reason, b.name)
		assert.ErrorIs(t, err, ErrInvalidRecord, b.name)
	}
}

// A value that fills none of its route's value columns is a bad record
// by default, on every format that fills columns by name.
func TestEmptyRowsRejected(t *testing.T) {
	cols := []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String())}
	info := tableInfo("db", "people", cols, nil)
	jsonRoute := bind(t, RouteSpec{Topic: "t"}, info)
	connectRoute := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueConnectJSON}}, info)
	allow := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{EmptyRows: FieldAllow}}, info)

	// The envelope read as plain JSON: the 5,000 rows of nulls.
	_, err := convert(t, jsonRoute, Record{Value: envelope(`{"id": 1, "name": "x"}`)})
	require.ErrorIs(t, err, ErrInvalidRecord)
	assert.ErrorContains(t, err, `value fills no column of db.people (value.empty_rows: reject): none of its fields ["schema", "payload"] match any of the columns ["id", "name"]`)

	_, err = convert(t, connectRoute, Record{Value: envelope(`{"ident": 1}`)})
	assert.ErrorContains(t, err, `none of its fields ["ident"] match any of the columns`)
	_, err = convert(t, jsonRoute, Record{Value: []byte(`{}`)})
	assert.ErrorContains(t, err, `it has no fields to fill any of the columns ["id", "name"]`)

	// A field present with null counts: the producer named it.
	out, err := convert(t, jsonRoute, Record{Value: []byte(`{"name": null}`)})
	require.NoError(t, err)
	assert.True(t, out.Row[0].Null && out.Row[1].Null)

	out, err = convert(t, allow, Record{Value: []byte(`{"other": 1}`)})
	require.NoError(t, err, "empty_rows: allow writes the row of nulls")
	assert.True(t, out.Row[0].Null && out.Row[1].Null)

	// Columns from the key or metadata only: nothing is read from the
	// value, so nothing is checked.
	keyOnly := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyJSON}, Metadata: MetadataSpec{Offset: "off"}},
		tableInfo("db", "keys", []fluss.Column{col("id", fluss.BigInt().NonNull()), col("off", fluss.BigInt())}, []string{"id"}))
	_, err = convert(t, keyOnly, Record{Key: []byte(`{"id": 3}`), Value: []byte(`{}`)})
	require.NoError(t, err)
}
