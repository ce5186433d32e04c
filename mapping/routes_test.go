package mapping

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

var (
	tblA = fluss.TablePath{Database: "db", Table: "a"}
	tblB = fluss.TablePath{Database: "db", Table: "b"}
	tblC = fluss.TablePath{Database: "db", Table: "c"}
	tblD = fluss.TablePath{Database: "ops", Table: "dlq"}
)

func TestResolve(t *testing.T) {
	t.Parallel()
	rs, err := NewRoutes([]RouteSpec{
		{Pattern: `orders\..*`, Table: tblA},
		{Topic: "orders.eu", Table: tblB},
		{Name: "catch-all", Pattern: `.*`, Table: tblC},
		{Pattern: `logs`, Table: tblA}, // after the catch-all: never chosen
	})
	require.NoError(t, err)
	tests := []struct {
		topic string
		route string
	}{
		{"orders.eu", "orders.eu"},   // exact before patterns
		{"orders.us", `orders\..*`},  // first matching pattern
		{"xorders.us", "catch-all"},  // patterns match the whole name
		{"logs", "catch-all"},        // pattern order
		{"orders.", `orders\..*`},    // empty suffix matches .*
		{"something", "catch-all"},   // catch-all
		{"orders.eu2", `orders\..*`}, // exact is exact
	}
	for _, tc := range tests {
		r, ok := rs.Resolve(tc.topic)
		require.True(t, ok, tc.topic)
		assert.Equal(t, tc.route, r.Name(), tc.topic)
	}

	rs2, err := NewRoutes([]RouteSpec{{Topic: "a", Table: tblA}, {Pattern: "b+", Table: tblB}})
	require.NoError(t, err)
	for _, topic := range []string{"", "ab", "bba", "A"} {
		_, ok := rs2.Resolve(topic)
		assert.False(t, ok, topic)
	}
	var nilRoutes *Routes
	_, ok := nilRoutes.Resolve("a")
	assert.False(t, ok)
}

func TestNewRoutesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		specs []RouteSpec
		want  string
	}{
		{"no topic", []RouteSpec{{Name: "r", Table: tblA}}, `route "r": one of topic and pattern is required`},
		{"both", []RouteSpec{{Topic: "a", Pattern: "b", Table: tblA}}, "topic and pattern are mutually exclusive"},
		{"bad pattern", []RouteSpec{{Pattern: "a(", Table: tblA}}, `route "a(": pattern: error parsing regexp`},
		{"no table", []RouteSpec{{Topic: "a"}}, `route "a": table: required`},
		{"duplicate topic", []RouteSpec{{Topic: "a", Table: tblA}, {Name: "b", Topic: "a", Table: tblB}}, `route "b": topic: "a" is also routed by routes[0]`},
		{"duplicate name", []RouteSpec{{Name: "x", Topic: "a", Table: tblA}, {Name: "x", Topic: "b", Table: tblB}}, `route "x": name: duplicate of routes[0]`},
		{"value format", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{Format: "xml"}}}, `value.format: "xml" is not one of raw, string, json`},
		{"unknown policy", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{UnknownFields: "drop"}}}, `value.unknown_fields: "drop" is not one of ignore, reject`},
		{"missing policy", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{MissingFields: "zero"}}}, `value.missing_fields: "zero" is not one of null, reject`},
		{"key format", []RouteSpec{{Topic: "a", Table: tblA, Key: KeySpec{Format: "xml"}}}, `key.format: "xml" is not one of none, raw, string, json`},
		{"value path", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{Paths: map[string]string{"c": "$."}}}}, `value.columns.c: "$." is not a JSON path`},
		{"key path", []RouteSpec{{Topic: "a", Table: tblA, Key: KeySpec{Format: KeyJSON, Paths: map[string]string{"c": "a..b"}}}}, `key.columns.c: "a..b" is not a JSON path`},
		{"headers", []RouteSpec{{Topic: "a", Table: tblA, Metadata: MetadataSpec{HeadersFormat: "xml"}}}, `metadata.headers_format: "xml" is not one of json, map`},
		{"tombstone", []RouteSpec{{Topic: "a", Table: tblA, Tombstone: "skip"}}, `tombstone: "skip" is not one of delete, reject`},
		{"time format", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", Format: "yyyy/MM"}}}}, `partition[0].format: timestamp format "yyyy/MM": unexpected "/"`},
		{"time zone", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", Format: "yyyy", TimeZone: "Nowhere/City"}}}}, `partition[0].time_zone: unknown time zone Nowhere/City`},
		{"partition source", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", From: "header"}}}}, `partition[0].from: "header" is not one of field, timestamp`},
		{"dlq table", []RouteSpec{{Topic: "a", Table: tblA, Errors: ErrorSpec{Mode: ErrorsDLQ}}}, "errors.dlq_table: required for errors.mode dlq"},
		{"error mode", []RouteSpec{{Topic: "a", Table: tblA, Errors: ErrorSpec{Mode: "skip"}}}, `errors.mode: "skip" is not one of reject, dlq`},
		{"bad topic", []RouteSpec{{Topic: "a b", Table: tblA}}, `topic: "a b" is not a valid Kafka topic name`},
		{"duplicate pattern", []RouteSpec{{Pattern: "a.*", Table: tblA}, {Name: "b", Pattern: "a.*", Table: tblB}}, `route "b": pattern: "a.*" is also used by routes[0]`},
		{"bad table name", []RouteSpec{{Topic: "a", Table: fluss.TablePath{Database: "d", Table: "t x"}}}, `table: "d.t x": "t x" must be 1 to 200 characters`},
		{"raw needs column", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{Format: ValueRaw}}}, "value.column: required for value.format raw"},
		{"json no column", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{Column: "c"}}}, "value.column: only applies"},
		{"key none with column", []RouteSpec{{Topic: "a", Table: tblA, Key: KeySpec{Column: "k"}}}, "key: column/columns set but key.format is none"},
		{"column claimed twice", []RouteSpec{{Topic: "a", Table: tblA, Metadata: MetadataSpec{Key: "payload"}, Value: ValueSpec{Format: ValueRaw, Column: "payload"}}},
			`value.column: column "payload" is already filled by metadata.key`},
		{"partition field format", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", From: PartitionFromField, TimeZone: "UTC"}}}}, "partition[0]: format and time_zone only apply to from: timestamp"},
		{"partition column", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{From: PartitionFromField}}}}, "partition[0].column: required"},
		{"dlq table same", []RouteSpec{{Topic: "a", Table: tblA, Errors: ErrorSpec{Mode: ErrorsDLQ, DLQTable: tblA}}}, `errors.dlq_table: must differ from the route's table "db.a"`},
		{"dlq table reject", []RouteSpec{{Topic: "a", Table: tblA, Errors: ErrorSpec{DLQTable: tblD}}}, "errors.dlq_table: only applies to errors.mode dlq"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRoutes(tc.specs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var se *SpecError
			assert.True(t, errors.As(err, &se), "errors are *SpecError")
			assert.Equal(t, err.Error(), ValidateSpecs(tc.specs).Error(), "NewRoutes reports what ValidateSpecs finds")
		})
	}
}

func TestRoutesTablesAndCopyOnWrite(t *testing.T) {
	t.Parallel()
	paths := map[string]string{"x": "a.b"}
	rs, err := NewRoutes([]RouteSpec{
		{Topic: "t1", Table: tblB, Errors: ErrorSpec{Mode: ErrorsDLQ, DLQTable: tblD}},
		{Topic: "t2", Table: tblA, Value: ValueSpec{Paths: paths}},
		{Topic: "t3", Table: tblB},
	})
	require.NoError(t, err)
	assert.Equal(t, []fluss.TablePath{tblA, tblB, tblD}, rs.Tables())

	// The compiled spec does not share the caller's map.
	paths["x"] = "changed"
	r, _ := rs.Resolve("t2")
	assert.Equal(t, "a.b", r.Spec().Value.Paths["x"])

	// Bind returns a new set; the receiver keeps unbound routes.
	cols := []fluss.Column{col("x", fluss.String())}
	dlq := dlqInfo()
	bound, err := rs.Bind(map[fluss.TablePath]*fluss.TableInfo{
		tblA: tableInfo("db", "a", cols, nil),
		tblB: tableInfo("db", "b", cols, nil),
		tblD: dlq,
	})
	require.NoError(t, err)
	r1, _ := rs.Resolve("t1")
	b1, _ := bound.Resolve("t1")
	assert.Nil(t, r1.Converter())
	require.NotNil(t, b1.Converter())
	require.NotNil(t, b1.DLQ())
	assert.Equal(t, tblD, b1.DLQ().Table())
	b3, _ := bound.Resolve("t3")
	assert.Nil(t, b3.DLQ())
	assert.Len(t, bound.All(), 3)
}

func TestBindMissingTables(t *testing.T) {
	t.Parallel()
	rs, err := NewRoutes([]RouteSpec{
		{Topic: "t1", Table: tblA},
		{Topic: "t2", Table: tblB, Errors: ErrorSpec{Mode: ErrorsDLQ, DLQTable: tblD}},
	})
	require.NoError(t, err)
	_, err = rs.Bind(map[fluss.TablePath]*fluss.TableInfo{
		tblB: tableInfo("db", "b", []fluss.Column{col("x", fluss.String())}, nil),
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `route "t1" (table db.a): table not found`)
	assert.Contains(t, err.Error(), `route "t2" (table ops.dlq): dead-letter table not found`)
}
