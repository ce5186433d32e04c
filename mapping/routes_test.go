package mapping

import (
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
		{"no topic", []RouteSpec{{Name: "r", Table: tblA}}, `route "r": exactly one of topic and pattern`},
		{"both", []RouteSpec{{Topic: "a", Pattern: "b", Table: tblA}}, "exactly one of topic and pattern"},
		{"bad pattern", []RouteSpec{{Pattern: "a(", Table: tblA}}, "pattern: error parsing regexp"},
		{"no table", []RouteSpec{{Topic: "a"}}, `route "a": table is required`},
		{"duplicate topic", []RouteSpec{{Topic: "a", Table: tblA}, {Name: "b", Topic: "a", Table: tblB}}, `topic "a" is routed twice`},
		{"duplicate name", []RouteSpec{{Name: "x", Topic: "a", Table: tblA}, {Name: "x", Topic: "b", Table: tblB}}, `route "x": name used twice`},
		{"value format", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{Format: "xml"}}}, `value format "xml"`},
		{"unknown policy", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{UnknownFields: "drop"}}}, "unknown-field policy"},
		{"missing policy", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{MissingFields: "zero"}}}, "missing-field policy"},
		{"key format", []RouteSpec{{Topic: "a", Table: tblA, Key: KeySpec{Format: "avro"}}}, `key format "avro"`},
		{"value path", []RouteSpec{{Topic: "a", Table: tblA, Value: ValueSpec{Paths: map[string]string{"c": "$."}}}}, `value path of column "c"`},
		{"key path", []RouteSpec{{Topic: "a", Table: tblA, Key: KeySpec{Format: KeyJSON, Paths: map[string]string{"c": "a..b"}}}}, `key path of column "c"`},
		{"headers", []RouteSpec{{Topic: "a", Table: tblA, Metadata: MetadataSpec{HeadersFormat: "xml"}}}, "headers format"},
		{"tombstone", []RouteSpec{{Topic: "a", Table: tblA, Tombstone: "skip"}}, `tombstone "skip"`},
		{"time format", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", Format: "yyyy/MM"}}}}, `partition column "dt": timestamp format "yyyy/MM": unexpected "/"`},
		{"time zone", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", Format: "yyyy", TimeZone: "Nowhere/City"}}}}, `partition column "dt"`},
		{"partition source", []RouteSpec{{Topic: "a", Table: tblA, Partition: []PartitionSpec{{Column: "dt", From: "header"}}}}, `source "header"`},
		{"dlq table", []RouteSpec{{Topic: "a", Table: tblA, Errors: ErrorSpec{Mode: ErrorsDLQ}}}, "needs a dead-letter table"},
		{"error mode", []RouteSpec{{Topic: "a", Table: tblA, Errors: ErrorSpec{Mode: "skip"}}}, `error mode "skip"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRoutes(tc.specs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
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
