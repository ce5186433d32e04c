package mapping

import (
	"math"
	"math/big"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// avroWriter is one writer schema: as the registry hands it to the
// gateway, and parsed by hamba for encoding test records.
type avroWriter struct {
	reg    *schemaregistry.Schema
	schema avro.Schema
}

var avroIDs atomic.Int64

// newAvroWriter parses text, its deps given in dependency order (the
// registry's Deps map is unordered; the decoder must cope).
func newAvroWriter(t testing.TB, text string, deps ...[2]string) avroWriter {
	t.Helper()
	cache := &avro.SchemaCache{}
	depMap := map[string]string{}
	for _, d := range deps {
		_, err := avro.ParseWithCache(d[1], "", cache)
		require.NoError(t, err)
		depMap[d[0]] = d[1]
	}
	s, err := avro.ParseWithCache(text, "", cache)
	require.NoError(t, err)
	return avroWriter{reg: &schemaregistry.Schema{Type: "AVRO", Text: text, Deps: depMap, ID: 100 + avroIDs.Add(1)}, schema: s}
}

func (w avroWriter) encode(t testing.TB, v any, cfg ...avro.Config) []byte {
	t.Helper()
	// A frozen config per call: hamba caches codecs by type name, which
	// the tests' schemas reuse with different definitions.
	c := avro.Config{}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	api := c.Freeze()
	b, err := api.Marshal(w.schema, v)
	require.NoError(t, err)
	return b
}

// record wraps an Avro payload as the gateway hands it to Convert.
func (w avroWriter) record(payload []byte) Record {
	return Record{Index: 3, Value: append([]byte{0, 0, 0, 0, 1}, payload...), SerializedValue: Serialized{Schema: w.reg, Payload: payload}}
}

func avroRoute(t testing.TB, info *fluss.TableInfo, mod ...func(*RouteSpec)) *Route {
	t.Helper()
	spec := RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueAvro}}
	for _, m := range mod {
		m(&spec)
	}
	return bind(t, spec, info)
}

func requireRecordError(t *testing.T, err error, column, reason string) {
	t.Helper()
	require.Error(t, err)
	var re *RecordError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, column, re.Column, "column of %v", err)
	assert.Contains(t, re.Reason, reason)
}

func TestAvroScalars(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "S", "namespace": "x", "fields": [
		{"name": "b", "type": "boolean"},
		{"name": "i", "type": "int"},
		{"name": "i8", "type": "int"},
		{"name": "i16", "type": "int"},
		{"name": "iw", "type": "int"},
		{"name": "l", "type": "long"},
		{"name": "f", "type": "float"},
		{"name": "fd", "type": "float"},
		{"name": "d", "type": "double"},
		{"name": "s", "type": "string"},
		{"name": "c", "type": "string"},
		{"name": "by", "type": "bytes"},
		{"name": "bn", "type": "bytes"},
		{"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
		{"name": "fxb", "type": "F4"},
		{"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
		{"name": "u", "type": {"type": "string", "logicalType": "uuid"}}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{
		col("b", fluss.Boolean()), col("i", fluss.Int()), col("i8", fluss.TinyInt()), col("i16", fluss.SmallInt()),
		col("iw", fluss.BigInt()), col("l", fluss.BigInt()), col("f", fluss.Float()), col("fd", fluss.Double()),
		col("d", fluss.Double()), col("s", fluss.String()), col("c", fluss.Char(5)), col("by", fluss.Bytes()),
		col("bn", fluss.Binary(4)), col("fx", fluss.Binary(4)), col("fxb", fluss.Bytes()), col("e", fluss.String()),
		col("u", fluss.String()),
	}, nil)
	r := avroRoute(t, info)
	v := map[string]any{
		"b": true, "i": int32(-7), "i8": int32(-128), "i16": int32(32767), "iw": int32(math.MinInt32),
		"l": int64(math.MaxInt64), "f": float32(1.5), "fd": float32(0.1), "d": math.Inf(-1), "s": "héllo",
		"c": "abcde", "by": []byte{0, 1, 2}, "bn": []byte{9, 8, 7, 6}, "fx": [4]byte{1, 2, 3, 4},
		"fxb": [4]byte{5, 6, 7, 8}, "e": "GREEN", "u": "123e4567-e89b-12d3-a456-426614174000",
	}
	out, err := convert(t, r, w.record(w.encode(t, v)))
	require.NoError(t, err)
	assertRow(t, fluss.Row{
		{I: 1}, {I: -7}, {I: -128}, {I: 32767}, {I: math.MinInt32}, {I: math.MaxInt64}, {F: 1.5},
		{F: float64(float32(0.1))}, {F: math.Inf(-1)}, str("héllo"), str("abcde"), {B: []byte{0, 1, 2}},
		{B: []byte{9, 8, 7, 6}}, {B: []byte{1, 2, 3, 4}}, {B: []byte{5, 6, 7, 8}}, str("GREEN"),
		str("123e4567-e89b-12d3-a456-426614174000"),
	}, out.Row)

	// Range checks and Convert's length checks.
	v["i8"] = int32(128)
	_, err = convert(t, r, w.record(w.encode(t, v)))
	requireRecordError(t, err, "i8", "out of range")
	v["i8"] = int32(0)
	v["c"] = "abcdef"
	_, err = convert(t, r, w.record(w.encode(t, v)))
	requireRecordError(t, err, "c", "longer than CHAR(5)")
	v["c"] = "ab"
	v["bn"] = []byte{1, 2, 3, 4, 5}
	_, err = convert(t, r, w.record(w.encode(t, v)))
	requireRecordError(t, err, "bn", "longer than BINARY(4)")
}

func TestAvroLogicalTypes(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "L", "fields": [
		{"name": "dt", "type": {"type": "int", "logicalType": "date"}},
		{"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
		{"name": "tm0", "type": {"type": "int", "logicalType": "time-millis"}},
		{"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
		{"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
		{"name": "tsm_ntz", "type": {"type": "long", "logicalType": "timestamp-millis"}},
		{"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
		{"name": "tsu3", "type": {"type": "long", "logicalType": "timestamp-micros"}},
		{"name": "tsu_neg", "type": {"type": "long", "logicalType": "timestamp-micros"}},
		{"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
		{"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
		{"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
		{"name": "dt_int", "type": {"type": "int", "logicalType": "date"}},
		{"name": "ts_big", "type": {"type": "long", "logicalType": "timestamp-millis"}}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{
		col("dt", fluss.Date()), col("tm", fluss.Time(3)), col("tm0", fluss.Time(0)), col("tu", fluss.Time(3)),
		col("tsm", fluss.TimestampLTZ(3)), col("tsm_ntz", fluss.Timestamp(3)), col("tsu", fluss.TimestampLTZ(6)),
		col("tsu3", fluss.TimestampLTZ(3)), col("tsu_neg", fluss.Timestamp(6)), col("tsn", fluss.TimestampLTZ(9)),
		col("ltm", fluss.Timestamp(3)), col("ltu", fluss.Timestamp(6)), col("dt_int", fluss.Int()), col("ts_big", fluss.BigInt()),
	}, nil)
	r := avroRoute(t, info)
	ts := time.Date(2024, 1, 2, 3, 4, 5, 678_901_234, time.UTC)
	tod := 12*time.Hour + 34*time.Minute + 56*time.Second + 789*time.Millisecond + 321*time.Microsecond
	v := map[string]any{
		"dt": time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), "tm": tod, "tm0": tod, "tu": tod,
		"tsm": ts, "tsm_ntz": ts, "tsu": ts, "tsu3": ts, "tsu_neg": time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		"tsn": ts.UnixNano(), "ltm": ts, "ltu": ts, "dt_int": time.Date(1970, 1, 11, 0, 0, 0, 0, time.UTC), "ts_big": ts,
	}
	out, err := convert(t, r, w.record(w.encode(t, v)))
	require.NoError(t, err)
	ms := ts.UnixMilli()
	todMs := tod.Milliseconds()
	assertRow(t, fluss.Row{
		{I: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC).Unix() / 86400},
		{I: todMs}, {I: todMs / 1000 * 1000}, {I: todMs},
		{I: ms}, {I: ms}, {I: ms, N: 901_000}, {I: ms}, {I: -1, N: 999_000}, {I: ms, N: 901_234},
		{I: ms}, {I: ms, N: 901_000}, {I: 10}, {I: ms},
	}, out.Row)

	// Out-of-day times are refused.
	v["tm"] = 25 * time.Hour
	_, err = convert(t, r, w.record(w.encode(t, v)))
	requireRecordError(t, err, "tm", "not a time of day")
}

func TestAvroLogicalMismatches(t *testing.T) {
	t.Parallel()
	cases := []struct {
		writer string
		column fluss.DataType
		reason string
	}{
		{`{"type": "long", "logicalType": "local-timestamp-millis"}`, fluss.TimestampLTZ(3), "cannot fill TIMESTAMP_WITH_LOCAL_TIME_ZONE(3)"},
		{`{"type": "long", "logicalType": "timestamp-millis"}`, fluss.Date(), "cannot fill DATE"},
		{`"string"`, fluss.Int(), "Avro string cannot fill INTEGER"},
		{`"long"`, fluss.Int(), "Avro long cannot fill INTEGER"},
		{`"double"`, fluss.Float(), "cannot fill FLOAT"},
		{`{"type": "fixed", "name": "F8", "size": 8}`, fluss.Binary(4), "longer than BINARY(4)"},
		{`{"type": "record", "name": "R", "fields": []}`, fluss.String(), "record R cannot fill STRING"},
		{`{"type": "map", "values": "int"}`, fluss.Map(fluss.Int(), fluss.Int()), "map keys are strings"},
		{`{"type": "array", "items": "string"}`, fluss.Array(fluss.Int()), "array element: Avro string cannot fill INTEGER"},
		{`"null"`, fluss.Int().NonNull(), "null for a NOT NULL column"},
		{`["null", "string"]`, fluss.Int(), "Avro string cannot fill INTEGER"},
	}
	for _, tc := range cases {
		t.Run(tc.writer, func(t *testing.T) {
			t.Parallel()
			w := newAvroWriter(t, `{"type": "record", "name": "M", "fields": [{"name": "a", "type": `+tc.writer+`}, {"name": "ok", "type": "int"}]}`)
			info := tableInfo("db", "t", []fluss.Column{col("ok", fluss.Int()), col("a", tc.column)}, nil)
			r := avroRoute(t, info)
			// Every record of the schema is refused, naming the column.
			for range 2 {
				_, err := convert(t, r, w.record([]byte{0, 0}))
				requireRecordError(t, err, "a", tc.reason)
				assert.Contains(t, err.Error(), `field "a"`)
			}
		})
	}
}

func TestAvroDecimals(t *testing.T) {
	t.Parallel()
	rat := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		require.True(t, ok, s)
		return r
	}
	bigDatum := func(s string) fluss.Datum {
		n, ok := new(big.Int).SetString(s, 10)
		require.True(t, ok)
		return fluss.Datum{B: twosComplement(n)}
	}
	cases := []struct {
		name   string
		writer string // the field's Avro type
		column fluss.DataType
		value  *big.Rat
		want   fluss.Datum
		reason string
	}{
		{"bytes", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(10, 2), rat("123.45"), fluss.Datum{I: 12345}, ""},
		{"negative", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(10, 2), rat("-0.01"), fluss.Datum{I: -1}, ""},
		{"zero", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(10, 2), rat("0"), fluss.Datum{I: 0}, ""},
		{"rescale up", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(12, 4), rat("-123.45"), fluss.Datum{I: -1234500}, ""},
		{"rescale down exact", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(10, 1), rat("123.40"), fluss.Datum{I: 1234}, ""},
		{"rescale down inexact", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(10, 1), rat("123.45"), fluss.Datum{}, "decimal 123.45 has more than 1 fraction digits"},
		{"overflow", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Decimal(5, 2), rat("-1000.00"), fluss.Datum{}, "decimal -1000.00 does not fit DECIMAL(5, 2)"},
		{"fixed", `{"type": "fixed", "name": "D9", "size": 9, "logicalType": "decimal", "precision": 20, "scale": 4}`, fluss.Decimal(20, 4), rat("1234567890123.4567"), bigDatum("12345678901234567"), ""},
		{"fixed negative minimal", `{"type": "fixed", "name": "D9", "size": 9, "logicalType": "decimal", "precision": 20, "scale": 0}`, fluss.Decimal(20, 0), rat("-128"), fluss.Datum{B: []byte{0x80}}, ""},
		{"fixed small", `{"type": "fixed", "name": "D4", "size": 4, "logicalType": "decimal", "precision": 9, "scale": 3}`, fluss.Decimal(9, 3), rat("-12.5"), fluss.Datum{I: -12500}, ""},
		{"38 digits", `{"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10}`, fluss.Decimal(38, 10), rat("-1234567890123456789012345678.0123456789"), bigDatum("-12345678901234567890123456780123456789"), ""},
		{"38 into 18", `{"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 2}`, fluss.Decimal(18, 0), rat("123456789012345678"), fluss.Datum{I: 123456789012345678}, ""},
		{"big rescaled into p>18", `{"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0}`, fluss.Decimal(24, 4), rat("-92233720368547758"), bigDatum("-922337203685477580000"), ""},
		{"big overflow", `{"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0}`, fluss.Decimal(19, 0), rat("99999999999999999999"), fluss.Datum{}, "does not fit DECIMAL(19, 0)"},
		{"decimal bytes into BYTES", `{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}`, fluss.Bytes(), rat("1.27"), fluss.Datum{B: []byte{0x7f}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newAvroWriter(t, `{"type": "record", "name": "D", "fields": [{"name": "d", "type": `+tc.writer+`}]}`)
			r := avroRoute(t, tableInfo("db", "t", []fluss.Column{col("d", tc.column)}, nil))
			out, err := convert(t, r, w.record(w.encode(t, map[string]any{"d": tc.value})))
			if tc.reason != "" {
				requireRecordError(t, err, "d", tc.reason)
				return
			}
			require.NoError(t, err)
			assertRow(t, fluss.Row{tc.want}, out.Row)
		})
	}
}

func TestAvroUnions(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "U", "fields": [
		{"name": "a", "type": ["null", "string"]},
		{"name": "b", "type": ["long", "null"]},
		{"name": "c", "type": ["int", "long"]},
		{"name": "d", "type": ["string", "long", {"type": "enum", "name": "E", "symbols": ["X"]}]},
		{"name": "req", "type": ["null", "int"]}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{
		col("a", fluss.String()), col("b", fluss.BigInt()), col("c", fluss.BigInt()), col("d", fluss.String()),
		col("req", fluss.Int().NonNull()),
	}, nil)
	r := avroRoute(t, info)
	enc := func(a, b, c, d, req any) Record {
		return w.record(w.encode(t, map[string]any{"a": a, "b": b, "c": c, "d": d, "req": req}))
	}
	out, err := convert(t, r, enc(map[string]any{"string": "x"}, map[string]any{"long": int64(5)},
		map[string]any{"int": int32(6)}, map[string]any{"string": "s"}, map[string]any{"int": int32(1)}))
	require.NoError(t, err)
	assertRow(t, fluss.Row{str("x"), {I: 5}, {I: 6}, str("s"), {I: 1}}, out.Row)

	out, err = convert(t, r, enc(nil, nil, map[string]any{"long": int64(math.MaxInt64)}, map[string]any{"E": "X"}, map[string]any{"int": int32(2)}))
	require.NoError(t, err)
	assertRow(t, fluss.Row{null, null, {I: math.MaxInt64}, str("X"), {I: 2}}, out.Row)
	assert.True(t, out.seen[0], "a written null is a value")

	// The branch written must convert.
	_, err = convert(t, r, enc(nil, nil, map[string]any{"int": int32(1)}, map[string]any{"long": int64(1)}, map[string]any{"int": int32(2)}))
	requireRecordError(t, err, "d", "Avro long cannot fill STRING")
	// A null for a NOT NULL column.
	_, err = convert(t, r, enc(nil, nil, map[string]any{"int": int32(1)}, map[string]any{"string": ""}, nil))
	requireRecordError(t, err, "req", "null for a NOT NULL column")
}

func TestAvroNested(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "Order", "namespace": "shop", "fields": [
		{"name": "id", "type": "long"},
		{"name": "address", "type": {"type": "record", "name": "Address", "fields": [
			{"name": "street", "type": "string"},
			{"name": "city", "type": "string"},
			{"name": "zip", "type": ["null", "string"]},
			{"name": "geo", "type": {"type": "array", "items": "double"}}
		]}},
		{"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
			{"name": "sku", "type": "string"},
			{"name": "qty", "type": "int"},
			{"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}
		]}}},
		{"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
		{"name": "billing", "type": ["null", "Address"]},
		{"name": "matrix", "type": {"type": "array", "items": {"type": "array", "items": "int"}}}
	]}`)
	addrRow := fluss.RowType(fluss.RowField("city", fluss.String()), fluss.RowField("street", fluss.String()),
		fluss.RowField("country", fluss.String()), fluss.RowField("geo", fluss.Array(fluss.Double())))
	info := tableInfo("db", "t", []fluss.Column{
		col("id", fluss.BigInt()),
		col("address", addrRow),
		col("lines", fluss.Array(fluss.RowType(fluss.RowField("sku", fluss.String()), fluss.RowField("qty", fluss.Int()),
			fluss.RowField("price", fluss.Decimal(10, 2))))),
		col("attrs", fluss.Map(fluss.String(), fluss.BigInt())),
		col("city", fluss.String()),
		col("zip", fluss.String()),
		col("billing_city", fluss.String()),
		col("matrix", fluss.Array(fluss.Array(fluss.Int()))),
	}, nil)
	r := avroRoute(t, info, func(s *RouteSpec) {
		s.Value.Paths = map[string]string{"city": "address.city", "zip": "$.address.zip", "billing_city": "billing.city"}
	})
	addr := map[string]any{"street": "1 Main St", "city": "Springfield", "zip": map[string]any{"string": "12345"}, "geo": []any{1.5, -2.5}}
	v := map[string]any{
		"id":      int64(7),
		"address": addr,
		"lines": []any{
			map[string]any{"sku": "a", "qty": int32(1), "price": big.NewRat(250, 100)},
			map[string]any{"sku": "b", "qty": int32(2), "price": big.NewRat(-1, 100)},
			map[string]any{"sku": "c", "qty": int32(3), "price": big.NewRat(0, 1)},
		},
		"attrs":   map[string]any{"k": map[string]any{"long": int64(9)}},
		"billing": map[string]any{"shop.Address": map[string]any{"street": "2 Side St", "city": "Shelbyville", "zip": nil, "geo": []any{}}},
		"matrix":  []any{[]any{int32(1), int32(2)}, []any{}, []any{int32(3)}},
	}
	wantAddr := fluss.Datum{Nested: &fluss.Nested{Fields: []fluss.Datum{str("Springfield"), str("1 Main St"), null,
		{Nested: &fluss.Nested{Elems: []fluss.Datum{{F: 1.5}, {F: -2.5}}}}}}}
	wantLines := fluss.Datum{Nested: &fluss.Nested{Elems: []fluss.Datum{
		{Nested: &fluss.Nested{Fields: []fluss.Datum{str("a"), {I: 1}, {I: 250}}}},
		{Nested: &fluss.Nested{Fields: []fluss.Datum{str("b"), {I: 2}, {I: -1}}}},
		{Nested: &fluss.Nested{Fields: []fluss.Datum{str("c"), {I: 3}, {I: 0}}}},
	}}}
	wantMatrix := fluss.Datum{Nested: &fluss.Nested{Elems: []fluss.Datum{
		{Nested: &fluss.Nested{Elems: []fluss.Datum{{I: 1}, {I: 2}}}},
		{Nested: &fluss.Nested{}},
		{Nested: &fluss.Nested{Elems: []fluss.Datum{{I: 3}}}},
	}}}
	want := fluss.Row{{I: 7}, wantAddr, wantLines,
		{Nested: &fluss.Nested{Keys: []fluss.Datum{str("k")}, Values: []fluss.Datum{{I: 9}}}},
		str("Springfield"), str("12345"), str("Shelbyville"), wantMatrix}

	// hamba writes blocks with byte sizes (negative counts); also plain
	// counts, and many small blocks.
	for name, cfg := range map[string]avro.Config{
		"sized blocks":    {},
		"counted blocks":  {DisableBlockSizeHeader: true},
		"blocks of one":   {BlockLength: 1},
		"counted, of one": {BlockLength: 1, DisableBlockSizeHeader: true},
	} {
		out, err := convert(t, r, w.record(w.encode(t, v, cfg)))
		require.NoError(t, err, name)
		assertRow(t, want, out.Row)
	}

	// An absent optional record leaves its paths unset.
	v["billing"] = nil
	out, err := convert(t, r, w.record(w.encode(t, v)))
	require.NoError(t, err)
	assert.True(t, out.Row[6].Null)

	// Errors inside nested values name the column and the field path.
	v["attrs"] = map[string]any{"k": map[string]any{"long": int64(9)}, "\xff": nil}
	_, err = convert(t, r, w.record(w.encode(t, v)))
	requireRecordError(t, err, "attrs", "not valid UTF-8")
	assert.Contains(t, err.Error(), "Avro field attrs:")
}

func TestAvroNestedChecks(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "N", "fields": [
		{"name": "r", "type": {"type": "record", "name": "In", "fields": [
			{"name": "code", "type": "string"},
			{"name": "extra", "type": "int"}
		]}}
	]}`)
	encoded := w.encode(t, map[string]any{"r": map[string]any{"code": "abcdef", "extra": int32(1)}})

	// CHAR(n) inside a ROW is checked by the decoder.
	r := avroRoute(t, tableInfo("db", "t", []fluss.Column{col("r", fluss.RowType(fluss.RowField("code", fluss.Char(3))))}, nil))
	_, err := convert(t, r, w.record(encoded))
	requireRecordError(t, err, "r", "longer than 3")
	assert.Contains(t, err.Error(), "Avro field r.code:")

	// A NOT NULL ROW field the writer lacks.
	r = avroRoute(t, tableInfo("db", "t", []fluss.Column{col("r", fluss.RowType(fluss.RowField("code", fluss.String()),
		fluss.RowField("must", fluss.Int().NonNull())))}, nil))
	_, err = convert(t, r, w.record(encoded))
	requireRecordError(t, err, "r", `ROW field "must" is NOT NULL`)

	// Unknown fields inside a ROW: skipped, or rejected.
	info := tableInfo("db", "t", []fluss.Column{col("r", fluss.RowType(fluss.RowField("code", fluss.String()), fluss.RowField("other", fluss.Int())))}, nil)
	out, err := convert(t, avroRoute(t, info), w.record(encoded))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{Nested: &fluss.Nested{Fields: []fluss.Datum{str("abcdef"), null}}}}, out.Row)
	_, err = convert(t, avroRoute(t, info, func(s *RouteSpec) { s.Value.UnknownFields = FieldReject }), w.record(encoded))
	requireRecordError(t, err, "r", `unknown field "extra" in record In`)
}

func TestAvroUnknownAndMissingFields(t *testing.T) {
	t.Parallel()
	// The unknown fields cover every type the walker skips.
	w := newAvroWriter(t, `{"type": "record", "name": "W", "fields": [
		{"name": "u_null", "type": "null"},
		{"name": "u_bool", "type": "boolean"},
		{"name": "id", "type": "int"},
		{"name": "u_float", "type": "float"},
		{"name": "u_double", "type": "double"},
		{"name": "u_bytes", "type": "bytes"},
		{"name": "u_fixed", "type": {"type": "fixed", "name": "F3", "size": 3}},
		{"name": "u_enum", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
		{"name": "u_rec", "type": {"type": "record", "name": "R", "fields": [
			{"name": "x", "type": {"type": "array", "items": {"type": "map", "values": ["null", "string", "R"]}}}
		]}},
		{"name": "u_arr_null", "type": {"type": "array", "items": "null"}},
		{"name": "name", "type": "string"}
	]}`)
	v := map[string]any{
		"u_null": nil, "u_bool": true, "id": int32(42), "u_float": float32(1), "u_double": 2.0, "u_bytes": []byte("xyz"),
		"u_fixed": [3]byte{1, 2, 3}, "u_enum": "B",
		"u_rec": map[string]any{"x": []any{
			map[string]any{"a": map[string]any{"string": "s"}, "b": nil},
			map[string]any{"c": map[string]any{"R": map[string]any{"x": []any{map[string]any{"d": nil}}}}},
		}},
		"u_arr_null": []any{nil, nil, nil}, "name": "n",
	}
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.Int()), col("name", fluss.String()), col("gone", fluss.String())}, nil)
	for name, cfg := range map[string]avro.Config{"sized": {}, "counted": {DisableBlockSizeHeader: true, BlockLength: 1}} {
		out, err := convert(t, avroRoute(t, info), w.record(w.encode(t, v, cfg)))
		require.NoError(t, err, name)
		assertRow(t, fluss.Row{{I: 42}, str("n"), null}, out.Row)
		assert.False(t, out.seen[2], "a column the writer lacks stays unset")
	}
	payload := w.encode(t, v)

	_, err := convert(t, avroRoute(t, info, func(s *RouteSpec) { s.Value.UnknownFields = FieldReject }), w.record(payload))
	requireRecordError(t, err, "", `unknown field "u_null" (unknown_fields: reject)`)

	_, err = convert(t, avroRoute(t, info, func(s *RouteSpec) { s.Value.MissingFields = FieldReject }), w.record(payload))
	requireRecordError(t, err, "gone", "field missing from the value (missing_fields: reject)")

	notNull := tableInfo("db", "t", []fluss.Column{col("id", fluss.Int()), col("gone", fluss.String().NonNull())}, nil)
	_, err = convert(t, avroRoute(t, notNull), w.record(payload))
	requireRecordError(t, err, "gone", "no value for a NOT NULL column")
}

func TestAvroSchemaEvolution(t *testing.T) {
	t.Parallel()
	v1 := newAvroWriter(t, `{"type": "record", "name": "C", "fields": [
		{"name": "id", "type": "long"},
		{"name": "name", "type": "string"},
		{"name": "legacy", "type": "int"}
	]}`)
	v2 := newAvroWriter(t, `{"type": "record", "name": "C", "fields": [
		{"name": "email", "type": ["null", "string"], "default": null},
		{"name": "name", "type": "string"},
		{"name": "id", "type": "long"},
		{"name": "tier", "type": {"type": "enum", "name": "Tier", "symbols": ["GOLD", "SILVER"]}}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{
		col("id", fluss.BigInt()), col("name", fluss.String()), col("email", fluss.String()), col("tier", fluss.String()),
	}, nil)
	r := avroRoute(t, info)
	conv := r.Converter()
	out := &Converted{}
	for range 2 { // the plans are cached per writer schema
		rec := v1.record(v1.encode(t, map[string]any{"id": int64(1), "name": "a", "legacy": int32(5)}))
		require.NoError(t, conv.Convert(&rec, out))
		assertRow(t, fluss.Row{{I: 1}, str("a"), null, null}, out.Row)
		rec = v2.record(v2.encode(t, map[string]any{"id": int64(2), "name": "b", "email": map[string]any{"string": "b@x"}, "tier": "SILVER"}))
		require.NoError(t, conv.Convert(&rec, out))
		assertRow(t, fluss.Row{{I: 2}, str("b"), str("b@x"), str("SILVER")}, out.Row)
	}
	dec := conv.valueDec.(*avroDecoder)
	assert.Equal(t, int64(2), dec.plans.len())

	// The cache is bounded: past maxAvroPlans it starts over.
	for i := range maxAvroPlans + 10 {
		s := *v1.reg
		s.ID = int64(1000 + i)
		rec := v1.record(v1.encode(t, map[string]any{"id": int64(i), "name": "a", "legacy": int32(5)}))
		rec.SerializedValue.Schema = &s
		require.NoError(t, conv.Convert(&rec, out))
	}
	assert.LessOrEqual(t, dec.plans.len(), int64(maxAvroPlans))
}

func TestAvroReferences(t *testing.T) {
	t.Parallel()
	// Order references Customer, which references Address: the decoder
	// sees them as an unordered map.
	address := `{"type": "record", "name": "Address", "namespace": "com.acme", "fields": [{"name": "city", "type": "string"}]}`
	customer := `{"type": "record", "name": "Customer", "namespace": "com.acme", "fields": [
		{"name": "name", "type": "string"}, {"name": "home", "type": "com.acme.Address"}]}`
	status := `{"type": "enum", "name": "Status", "namespace": "com.acme", "symbols": ["NEW", "PAID"]}`
	w := newAvroWriter(t, `{"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
		{"name": "id", "type": "long"},
		{"name": "customer", "type": "Customer"},
		{"name": "status", "type": "com.acme.Status"}
	]}`, [2]string{"com.acme.Address", address}, [2]string{"com.acme.Status", status}, [2]string{"com.acme.Customer", customer})
	info := tableInfo("db", "t", []fluss.Column{
		col("id", fluss.BigInt()), col("customer", fluss.RowType(fluss.RowField("name", fluss.String()),
			fluss.RowField("home", fluss.RowType(fluss.RowField("city", fluss.String()))))),
		col("status", fluss.String()), col("city", fluss.String()),
	}, nil)
	r := avroRoute(t, info, func(s *RouteSpec) { s.Value.Paths = map[string]string{"city": "customer.home.city"} })
	payload := w.encode(t, map[string]any{"id": int64(3), "status": "PAID",
		"customer": map[string]any{"name": "Ann", "home": map[string]any{"city": "Oslo"}}})
	out, err := convert(t, r, w.record(payload))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 3}, {Nested: &fluss.Nested{Fields: []fluss.Datum{str("Ann"),
		{Nested: &fluss.Nested{Fields: []fluss.Datum{str("Oslo")}}}}}}, str("PAID"), str("Oslo")}, out.Row)

	// A reference the registry did not deliver.
	broken := *w.reg
	broken.Deps = map[string]string{"com.acme.Customer": customer, "com.acme.Status": status}
	rec := w.record(payload)
	rec.SerializedValue.Schema = &broken
	_, err = convert(t, r, rec)
	requireRecordError(t, err, "", "does not parse")
}

func TestAvroSchemaProblems(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String())}, nil)
	r := avroRoute(t, info)
	for _, tc := range []struct {
		schema schemaregistry.Schema
		reason string
	}{
		{schemaregistry.Schema{Type: "PROTOBUF", Text: "syntax = \"proto3\";"}, "is a PROTOBUF schema, not Avro"},
		{schemaregistry.Schema{Text: `{"type": "record"`}, "writer schema id 0"},
		{schemaregistry.Schema{Text: `"string"`}, "is string, not a record"},
	} {
		s := tc.schema
		_, err := convert(t, r, Record{Value: []byte{0}, SerializedValue: Serialized{Schema: &s, Payload: []byte{0}}})
		requireRecordError(t, err, "", tc.reason)
	}
	_, err := convert(t, r, Record{Value: []byte{0}})
	requireRecordError(t, err, "", "no writer schema")
}

func TestAvroKey(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt().NonNull()), col("region", fluss.String().NonNull()),
		col("v", fluss.String())}, []string{"id", "region"})
	key := newAvroWriter(t, `{"type": "record", "name": "K", "fields": [{"name": "region", "type": "string"}, {"name": "id", "type": "long"}, {"name": "x", "type": "int"}]}`)
	val := newAvroWriter(t, `{"type": "record", "name": "V", "fields": [{"name": "v", "type": "string"}, {"name": "id", "type": "long"}]}`)
	r := avroRoute(t, info, func(s *RouteSpec) {
		s.Key.Format = KeyAvro
		s.Value.UnknownFields = FieldReject
	})
	kp := key.encode(t, map[string]any{"id": int64(5), "region": "eu", "x": int32(1)})
	rec := val.record(val.encode(t, map[string]any{"v": "hello", "id": int64(99)}))
	rec.Key = kp
	rec.SerializedKey = Serialized{Schema: key.reg, Payload: kp}
	out, err := convert(t, r, rec)
	require.NoError(t, err)
	assert.Equal(t, fluss.WriteUpsert, out.Op)
	assertRow(t, fluss.Row{{I: 5}, str("eu"), str("hello")}, out.Row) // the key wins
	assert.NotEmpty(t, out.Key)

	// A tombstone deletes by the Avro key.
	rec.Value, rec.SerializedValue = nil, Serialized{}
	out, err = convert(t, r, rec)
	require.NoError(t, err)
	assert.Equal(t, fluss.WriteDelete, out.Op)
	assertRow(t, fluss.Row{{I: 5}, str("eu"), null}, out.Row)

	// A primitive key schema fills a single key column.
	single := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt().NonNull()), col("v", fluss.String())}, []string{"id"})
	prim := newAvroWriter(t, `"long"`)
	r = avroRoute(t, single, func(s *RouteSpec) { s.Key.Format = KeyAvro })
	kp = prim.encode(t, int64(-77))
	rec = val.record(val.encode(t, map[string]any{"v": "x", "id": int64(1)}))
	rec.Key, rec.SerializedKey = kp, Serialized{Schema: prim.reg, Payload: kp}
	out, err = convert(t, r, rec)
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: -77}, str("x")}, out.Row)
	// ...but not two.
	r = avroRoute(t, info, func(s *RouteSpec) { s.Key.Format = KeyAvro })
	rec.SerializedValue = Serialized{}
	rec.Value = nil
	_, err = convert(t, r, rec)
	requireRecordError(t, err, "", "not a record")
}

func TestAvroMalformed(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "M", "fields": [
		{"name": "id", "type": "long"},
		{"name": "s", "type": "string"},
		{"name": "tags", "type": {"type": "array", "items": "string"}},
		{"name": "u", "type": ["null", "int"]},
		{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
		{"name": "b", "type": "boolean"},
		{"name": "skipped", "type": {"type": "map", "values": "long"}},
		{"name": "nulls", "type": {"type": "array", "items": "null"}}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt()), col("s", fluss.String()),
		col("tags", fluss.Array(fluss.String())), col("u", fluss.Int()), col("e", fluss.String()), col("b", fluss.Boolean()),
		col("nulls", fluss.Array(fluss.Int()))}, nil)
	r := avroRoute(t, info)
	good := w.encode(t, map[string]any{"id": int64(1), "s": "ab", "tags": []any{"x"}, "u": nil, "e": "A", "b": true,
		"skipped": map[string]any{"k": int64(1)}, "nulls": []any{nil}}, avro.Config{DisableBlockSizeHeader: true})
	out, err := convert(t, r, w.record(good))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 1}, str("ab"), {Nested: &fluss.Nested{Elems: []fluss.Datum{str("x")}}}, null, str("A"), {I: 1},
		{Nested: &fluss.Nested{Elems: []fluss.Datum{null}}}}, out.Row)
	// good: 02 | 04 'a' 'b' | 02 02 'x' 00 | 00 | 00 | 01 | 02 02 'k' 02 00 | 02 00
	require.Equal(t, []byte{2, 4, 'a', 'b', 2, 2, 'x', 0, 0, 0, 1, 2, 2, 'k', 2, 0, 2, 0}, good)

	cat := slices.Concat[[]byte]
	tail := good[4:] // after id and s
	cases := []struct {
		name    string
		payload []byte
		column  string
		reason  string
	}{
		{"empty", nil, "id", "truncated"},
		{"bad varint", cat([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), "id", "varint overflows a long"},
		{"unterminated varint", []byte{0x80, 0x80}, "id", "truncated"},
		{"negative length", cat([]byte{2, 3}), "s", "negative length -2"},
		{"length past end", cat([]byte{2, 0x80, 0x01, 'a'}), "s", "runs past the end"},
		{"invalid UTF-8", cat([]byte{2, 4, 0xc3, 0x28}, tail), "s", "not valid UTF-8"},
		{"absurd block count", cat(good[:4], []byte{0xfe, 0xff, 0xff, 0xff, 0x0f}), "tags", "exceeds the bytes left"},
		{"min block count", cat(good[:4], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), "tags", "bad block count"},
		{"negative block, bad size", cat(good[:4], []byte{1, 0x7f}), "tags", "does not fit"},
		{"truncated array", cat(good[:4], []byte{4, 2, 'x'}), "tags", "truncated"},
		{"union index", cat(good[:8], []byte{4}), "u", "union branch 2 out of range"},
		{"negative union index", cat(good[:8], []byte{1}), "u", "union branch -1 out of range"},
		{"enum index", cat(good[:9], []byte{2}), "e", "enum index 1 out of range"},
		{"bad boolean", cat(good[:10], []byte{2}), "b", "invalid boolean"},
		{"skipped map absurd", cat(good[:11], []byte{0xfe, 0xff, 0xff, 0x0f}), "", "exceeds the bytes left"},
		{"skipped map bad size", cat(good[:11], []byte{1, 0x7e}), "", "does not fit"},
		{"too many nulls", cat(good[:16], []byte{0xfe, 0xff, 0xff, 0x0f, 0}), "nulls", "too large"},
		{"trailing bytes", cat(good, []byte{0}), "", "1 bytes after the Avro datum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(t, r, w.record(tc.payload))
			requireRecordError(t, err, tc.column, tc.reason)
		})
	}

	// Every truncation of a valid datum is an error, never a panic.
	for i := range len(good) {
		_, err := convert(t, r, w.record(good[:i]))
		require.Error(t, err, "prefix of %d bytes", i)
	}
}

func TestAvroRecursive(t *testing.T) {
	t.Parallel()
	w := newAvroWriter(t, `{"type": "record", "name": "Node", "fields": [
		{"name": "v", "type": "int"},
		{"name": "next", "type": ["null", "Node"]}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{col("v", fluss.Int()),
		col("next", fluss.RowType(fluss.RowField("v", fluss.Int()), fluss.RowField("next", fluss.RowType(fluss.RowField("v", fluss.Int())))))}, nil)
	r := avroRoute(t, info)
	list := map[string]any{"v": int32(1), "next": map[string]any{"Node": map[string]any{"v": int32(2),
		"next": map[string]any{"Node": map[string]any{"v": int32(3), "next": map[string]any{"Node": map[string]any{"v": int32(4), "next": nil}}}}}}}
	out, err := convert(t, r, w.record(w.encode(t, list)))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 1}, {Nested: &fluss.Nested{Fields: []fluss.Datum{{I: 2},
		{Nested: &fluss.Nested{Fields: []fluss.Datum{{I: 3}}}}}}}}, out.Row)

	// A hostile depth ends in an error, not a stack overflow.
	deep := make([]byte, 0, 20000)
	for range 10000 {
		deep = append(deep, 2, 2) // v = 1, next = branch Node
	}
	_, err = convert(t, r, w.record(deep))
	requireRecordError(t, err, "next", "nested too deeply")
}

// TestAvroAllocationBounds feeds datums built to make a decoder allocate
// far more than their size.
func TestAvroAllocationBounds(t *testing.T) {
	w := newAvroWriter(t, `{"type": "record", "name": "A", "fields": [
		{"name": "a", "type": {"type": "array", "items": "int"}},
		{"name": "n", "type": {"type": "array", "items": {"type": "array", "items": "null"}}}
	]}`)
	info := tableInfo("db", "t", []fluss.Column{col("a", fluss.Array(fluss.Int())), col("n", fluss.Array(fluss.Array(fluss.Int())))}, nil)
	r := avroRoute(t, info)
	// 20,000 blocks of one item: linear, not quadratic.
	var blocks []byte
	for range 20_000 {
		blocks = append(blocks, 2, 2)
	}
	blocks = append(blocks, 0, 0)
	// Arrays of nulls, each as long as a varint can say.
	var nulls []byte
	nulls = append(nulls, 0, 0xc8, 0x01) // a = [], n: a block of 100 arrays
	for range 100 {
		nulls = append(nulls, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0) // 2^31-1 nulls
	}
	nulls = append(nulls, 0)
	for name, payload := range map[string][]byte{"blocks": blocks, "nulls": nulls} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := convert(t, r, w.record(payload))
		runtime.ReadMemStats(&after)
		if name == "nulls" {
			requireRecordError(t, err, "n", "too large")
		} else {
			require.NoError(t, err)
		}
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20), name)
	}
}

func TestAvroConvertAllocs(t *testing.T) {
	r, w, payloads := avroBenchRoute(t)
	conv := r.Converter()
	out := &Converted{}
	rec := w.record(payloads[3])
	require.NoError(t, conv.Convert(&rec, out))
	allocs := testing.AllocsPerRun(200, func() {
		if err := conv.Convert(&rec, out); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "allocations per converted record")
}

// avroFuzzWide is a schema whose unknown fields exercise every skip path,
// and whose columns every nested conversion.
const avroFuzzWide = `{"type": "record", "name": "W", "fields": [
	{"name": "u", "type": ["null", "boolean", "int", "float", "double", "bytes", {"type": "fixed", "name": "F2", "size": 2},
		{"type": "enum", "name": "E", "symbols": ["A", "B"]}, {"type": "array", "items": "null"}]},
	{"name": "rec", "type": {"type": "record", "name": "Node", "fields": [
		{"name": "v", "type": "long"},
		{"name": "kids", "type": {"type": "map", "values": ["null", "Node"]}}
	]}},
	{"name": "m", "type": {"type": "map", "values": {"type": "array", "items": ["string", "long"]}}},
	{"name": "d", "type": {"type": "fixed", "name": "D", "size": 3, "logicalType": "decimal", "precision": 6, "scale": 1}},
	{"name": "nulls", "type": {"type": "array", "items": "null"}}
]}`

func FuzzAvroDecode(f *testing.F) {
	r, w, payloads := avroBenchRoute(f)
	wide := newAvroWriter(f, avroFuzzWide)
	wideRoute := avroRoute(f, tableInfo("db", "t", []fluss.Column{
		col("rec", fluss.RowType(fluss.RowField("v", fluss.BigInt()),
			fluss.RowField("kids", fluss.Map(fluss.String(), fluss.RowType(fluss.RowField("v", fluss.BigInt())))))),
		col("m", fluss.Map(fluss.String(), fluss.Array(fluss.String()))),
		col("d", fluss.Decimal(8, 2)),
		col("nulls", fluss.Array(fluss.Int())),
	}, nil))
	for _, p := range payloads[:4] {
		f.Add(p)
	}
	f.Add(wide.encode(f, map[string]any{
		"u": map[string]any{"F2": [2]byte{1, 2}},
		"rec": map[string]any{"v": int64(1), "kids": map[string]any{"a": map[string]any{"Node": map[string]any{"v": int64(2),
			"kids": map[string]any{}}}, "b": nil}},
		"m": map[string]any{"x": []any{map[string]any{"string": "s"}}}, "d": big.NewRat(-15, 10), "nulls": []any{nil, nil},
	}))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, tc := range []struct {
			r *Route
			w avroWriter
		}{{r, w}, {wideRoute, wide}} {
			conv := tc.r.Converter()
			out := &Converted{}
			rec := tc.w.record(payload)
			if err := conv.Convert(&rec, out); err != nil {
				var re *RecordError
				require.ErrorAs(t, err, &re)
				continue
			}
			require.Len(t, out.Row, len(conv.Schema().Columns))
			for i, d := range out.Row {
				switch typ := conv.Schema().Columns[i].Type; {
				case d.Null:
				case typ.Root == fluss.TypeArray:
					require.NotNil(t, d.Nested)
					require.LessOrEqual(t, len(d.Nested.Elems), len(payload)+minAvroZeroWidthItems)
				case typ.Root == fluss.TypeMap:
					require.NotNil(t, d.Nested)
					require.Len(t, d.Nested.Values, len(d.Nested.Keys))
				case typ.Root == fluss.TypeRow:
					require.NotNil(t, d.Nested)
					require.Len(t, d.Nested.Fields, len(typ.Fields))
				}
			}
		}
	})
}
