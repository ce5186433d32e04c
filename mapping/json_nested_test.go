package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// TestJSONIntoNestedColumns: a JSON array fills an ARRAY column, an object
// a MAP (keys read as text into the key type) or a ROW (fields by name,
// unknown ignored, missing null); nested in each other too. Type errors
// and nulls under NOT NULL are record errors naming the column.
func TestJSONIntoNestedColumns(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{
		col("tags", fluss.Array(fluss.String())),
		col("counts", fluss.Map(fluss.Int(), fluss.BigInt())),
		col("addr", fluss.RowType(fluss.RowField("city", fluss.String()), fluss.RowField("zip", fluss.Int().NonNull()))),
		col("visits", fluss.Array(fluss.RowType(fluss.RowField("page", fluss.String()), fluss.RowField("ms", fluss.BigInt())))),
	}, nil)
	r := bind(t, RouteSpec{Topic: "t"}, info)
	var out Converted
	err := r.Converter().Convert(&Record{Topic: "t", Value: []byte(`{
		"tags": ["a", "b\u0021"], "counts": {"1": 10, "2": 20},
		"addr": {"city": "Paris", "zip": 75001, "extra": [1, 2]},
		"visits": [{"page": "/", "ms": 3}, {"page": "/x"}]}`)}, &out)
	require.NoError(t, err)
	want := fluss.Row{
		fluss.ArrayDatum(str("a"), str("b!")),
		fluss.MapDatum([]fluss.Datum{{I: 1}, {I: 2}}, []fluss.Datum{{I: 10}, {I: 20}}),
		fluss.RowDatum(str("Paris"), fluss.Datum{I: 75001}),
		fluss.ArrayDatum(fluss.RowDatum(str("/"), fluss.Datum{I: 3}), fluss.RowDatum(str("/x"), fluss.Datum{Null: true})),
	}
	for i := range want {
		assert.True(t, want[i].Equal(out.Row[i]), "column %d: want %+v got %+v", i, want[i], out.Row[i])
	}

	for _, tc := range []struct{ value, column, reason string }{
		{`{"tags": "x"}`, "tags", "cannot convert a string to ARRAY"},
		{`{"visits": [1]}`, "visits", "element 0: cannot convert a number to ROW"},
		{`{"counts": {"1": "x"}}`, "counts", `map value "1"`},
		{`{"counts": {"one": 1}}`, "counts", `map key "one"`},
		{`{"addr": {"city": "x"}}`, "addr", `"zip" is NOT NULL`},
		{`{"visits": [{"ms": "soon"}]}`, "visits", `field "ms"`},
	} {
		err := r.Converter().Convert(&Record{Topic: "t", Value: []byte(tc.value)}, &out)
		var re *RecordError
		require.ErrorAs(t, err, &re, tc.value)
		assert.Contains(t, re.Error(), tc.column, tc.value)
		assert.Contains(t, re.Message(), tc.reason, tc.value)
	}
}

// TestJSONNestedAllocs: a warm Converted fills nested columns without
// allocating.
func TestJSONNestedAllocs(t *testing.T) {
	info := tableInfo("db", "t", []fluss.Column{col("tags", fluss.Array(fluss.String())), col("m", fluss.Map(fluss.String(), fluss.BigInt()))}, nil)
	r := bind(t, RouteSpec{Topic: "t"}, info)
	rec := &Record{Topic: "t", Value: []byte(`{"tags": ["a", "b", "c"], "m": {"x": 1, "y": 2}}`)}
	var out Converted
	require.NoError(t, r.Converter().Convert(rec, &out))
	allocs := testing.AllocsPerRun(100, func() { _ = r.Converter().Convert(rec, &out) })
	assert.LessOrEqual(t, allocs, 0.0)
}
