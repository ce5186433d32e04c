package mapping

import (
	"encoding/base64"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

const pbCommonProto = `syntax = "proto3";
package common;
message Money {
  string currency = 1;
  int64 units = 2;
}
`

const pbTestProto = `syntax = "proto3";
package test.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/duration.proto";
import "google/type/date.proto";
import "google/type/timeofday.proto";
import "confluent/type/decimal.proto";
import "common.proto";

enum Status {
  STATUS_UNSPECIFIED = 0;
  ACTIVE = 1;
  CLOSED = 2;
}

message Scalars {
  bool b = 1;
  int32 i32 = 2;
  int64 i64 = 3;
  uint32 u32 = 4;
  uint64 u64 = 5;
  sint32 s32 = 6;
  sint64 s64 = 7;
  fixed32 f32 = 8;
  fixed64 f64 = 9;
  sfixed32 sf32 = 10;
  sfixed64 sf64 = 11;
  float fl = 12;
  double db = 13;
  string str = 14;
  bytes by = 15;
  Status status = 16;
  optional int32 opt = 17;
}

message Order {
  message Address {
    string street = 1;
    string city = 2;
  }
  int64 id = 1;
  Address address = 2;
  repeated int32 nums = 3;
  repeated string tags = 4;
  map<string, int64> counts = 5;
  oneof payment {
    string card = 6;
    int64 cash_cents = 7;
  }
  google.protobuf.Timestamp created = 8;
  google.protobuf.StringValue note = 9;
  google.protobuf.Int64Value qty = 10;
  repeated Address history = 11;
  google.type.Date day = 12;
  google.protobuf.Duration took = 13;
  common.Money price = 14;
  map<int32, Address> by_id = 15;
  google.type.TimeOfDay at = 16;
  confluent.type.Decimal amount = 17;
  repeated fixed64 big = 18;
}
`

var pbTestDeps = map[string]string{"common.proto": pbCommonProto}

type pbFixture struct {
	schema *schemaregistry.Schema
	fd     protoreflect.FileDescriptor
}

func pbFixtureOf(t testing.TB, text string, deps map[string]string) *pbFixture {
	t.Helper()
	fd, err := pbCompileFile(text, deps)
	require.NoError(t, err)
	return &pbFixture{schema: &schemaregistry.Schema{Type: "PROTOBUF", ID: 11, Text: text, Deps: deps}, fd: fd}
}

// encode builds a message from its protojson form and marshals it.
func (f *pbFixture) encode(t testing.TB, name, jsonText string) []byte {
	t.Helper()
	md := f.fd.Messages().ByName(protoreflect.Name(name))
	if md == nil {
		md = f.fd.Messages().ByName("Order").Messages().ByName(protoreflect.Name(name))
	}
	require.NotNil(t, md, name)
	m := dynamicpb.NewMessage(md)
	require.NoError(t, protojson.Unmarshal([]byte(jsonText), m))
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	require.NoError(t, err)
	return b
}

// pbBase64Form is the schema as Python's serializer registers it (and
// Apicurio returns it): a base64 FileDescriptorProto.
func pbBase64Form(t testing.TB, fd protoreflect.FileDescriptor) string {
	t.Helper()
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

func pbRoute(t testing.TB, cols []fluss.Column, spec RouteSpec) *Route {
	t.Helper()
	if spec.Topic == "" {
		spec.Topic = "t"
	}
	if spec.Value.Format == "" {
		spec.Value.Format = ValueProtobuf
	}
	return bind(t, spec, tableInfo("db", "t", cols, nil))
}

func pbRecord(s *schemaregistry.Schema, idx []int, payload []byte) Record {
	return Record{Index: 3, Value: append([]byte{}, payload...),
		SerializedValue: Serialized{Schema: s, Ref: schemaregistry.Ref{MessageIndexes: idx}, Payload: payload}}
}

func pbRequireErr(t *testing.T, err error, column, reason string) {
	t.Helper()
	require.Error(t, err)
	var re *RecordError
	require.ErrorAs(t, err, &re, "%v", err)
	assert.Equal(t, column, re.Column, "column of %q", re.Reason)
	assert.Contains(t, re.Reason, reason)
}

func pbScalarCols() []fluss.Column {
	return []fluss.Column{
		col("b", fluss.Boolean()), col("i32", fluss.Int()), col("i64", fluss.BigInt()),
		col("u32", fluss.BigInt()), col("u64", fluss.BigInt()), col("s32", fluss.Int()),
		col("s64", fluss.BigInt()), col("f32", fluss.BigInt()), col("f64", fluss.BigInt()),
		col("sf32", fluss.Int()), col("sf64", fluss.BigInt()), col("fl", fluss.Float()),
		col("db", fluss.Double()), col("str", fluss.String()), col("by", fluss.Bytes()),
		col("status", fluss.String()), col("opt", fluss.Int()),
	}
}

func TestProtobufScalars(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, pbScalarCols(), RouteSpec{})

	full := f.encode(t, "Scalars", `{"b": true, "i32": -5, "i64": "-9000000000", "u32": 4294967295, "u64": "9223372036854775807",
		"s32": -2147483648, "s64": "-9223372036854775808", "f32": 4000000000, "f64": "18", "sf32": -7, "sf64": "-8",
		"fl": 1.5, "db": -2.25e100, "str": "héllo", "by": "AAEC", "status": "CLOSED", "opt": 0}`)
	out, err := convert(t, r, pbRecord(f.schema, []int{0}, full))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 1}, {I: -5}, {I: -9000000000}, {I: 4294967295}, {I: math.MaxInt64}, {I: math.MinInt32},
		{I: math.MinInt64}, {I: 4000000000}, {I: 18}, {I: -7}, {I: -8}, {F: 1.5}, {F: -2.25e100}, str("héllo"),
		{B: []byte{0, 1, 2}}, str("CLOSED"), {I: 0}}, out.Row)

	// proto3: absent fields read as defaults, but the optional one is null.
	out, err = convert(t, r, pbRecord(f.schema, []int{0}, []byte{}))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, str(""), {B: []byte{}},
		str("STATUS_UNSPECIFIED"), null}, out.Row)
	assert.NotNil(t, out.Row[13].B, "an absent string is the empty string")

	// uint64 above MaxInt64 does not fit BIGINT.
	big := f.encode(t, "Scalars", `{"u64": "18446744073709551615"}`)
	_, err = convert(t, r, pbRecord(f.schema, []int{0}, big))
	pbRequireErr(t, err, "u64", "integer 18446744073709551615 is out of range for BIGINT")

	// An enum number the schema does not know: its decimal text.
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 16, protowire.VarintType), 7)
	out, err = convert(t, r, pbRecord(f.schema, []int{0}, unknown))
	require.NoError(t, err)
	assert.Equal(t, "7", string(out.Row[15].B))

	// A non-repeated field twice: the last value wins.
	twice := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
	twice = protowire.AppendVarint(protowire.AppendTag(twice, 1, protowire.VarintType), 0)
	twice = protowire.AppendString(protowire.AppendTag(twice, 14, protowire.BytesType), "first")
	twice = protowire.AppendString(protowire.AppendTag(twice, 14, protowire.BytesType), "second")
	out, err = convert(t, r, pbRecord(f.schema, []int{0}, append(full, twice...)))
	require.NoError(t, err)
	assert.Equal(t, fluss.Datum{}, out.Row[0])
	assert.Equal(t, "second", string(out.Row[13].B))

	// Invalid UTF-8 in a string.
	bad := protowire.AppendBytes(protowire.AppendTag(nil, 14, protowire.BytesType), []byte{0xff, 'a'})
	_, err = convert(t, r, pbRecord(f.schema, []int{0}, bad))
	pbRequireErr(t, err, "str", "not valid UTF-8")
}

func TestProtobufConversions(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	cols := []fluss.Column{
		col("i32", fluss.TinyInt()), col("i64", fluss.String()), col("u32", fluss.Int()), col("s32", fluss.Decimal(10, 2)),
		col("s64", fluss.TimestampLTZ(3)), col("f32", fluss.Date()), col("fl", fluss.Double()), col("db", fluss.Float()),
		col("str", fluss.Date()), col("by", fluss.Binary(4)), col("status", fluss.Int()), col("b", fluss.String()),
		col("sf32", fluss.Double()), col("sf64", fluss.Decimal(30, 0)), col("f64", fluss.Time(3)),
	}
	r := pbRoute(t, cols, RouteSpec{Value: ValueSpec{Paths: map[string]string{}}})
	msg := f.encode(t, "Scalars", `{"i32": 100, "i64": "-42", "u32": 7, "s32": -123, "s64": "1700000000123", "f32": 19782,
		"fl": 0.5, "db": 3.5, "str": "2024-02-29", "by": "AQID", "status": "ACTIVE", "b": true, "sf32": -3, "sf64": "-99", "f64": "3600000"}`)
	out, err := convert(t, r, pbRecord(f.schema, []int{0}, msg))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 100}, str("-42"), {I: 7}, {I: -12300}, {I: 1700000000123}, {I: 19782}, {F: 0.5}, {F: 3.5},
		{I: 19782}, {B: []byte{1, 2, 3}}, {I: 1}, str("true"), {F: -3}, {B: []byte{0x9d}}, {I: 3600000}}, out.Row)

	// Defaults that do not convert (an empty string as a DATE) stay null.
	out, err = convert(t, r, pbRecord(f.schema, []int{0}, []byte{}))
	require.NoError(t, err)
	assert.True(t, out.Row[8].Null)
	assert.Equal(t, "false", string(out.Row[11].B))

	for _, tc := range []struct{ json, column, reason string }{
		{`{"i32": 128}`, "i32", "integer 128 is out of range for TINYINT"},
		{`{"u32": 4294967295}`, "u32", "integer 4294967295 is out of range for INTEGER"},
		{`{"db": 1e300}`, "db", "out of range for FLOAT"},
		{`{"str": "yesterday"}`, "str", "not a date"},
		{`{"by": "AQIDBAU="}`, "by", "longer than BINARY(4)"},
		{`{"s32": 2147483647}`, "s32", "does not fit DECIMAL(10, 2)"},
		{`{"f64": "90000000"}`, "f64", "out of range for TIME"},
	} {
		_, err := convert(t, r, pbRecord(f.schema, []int{0}, f.encode(t, "Scalars", tc.json)))
		pbRequireErr(t, err, tc.column, tc.reason)
	}
}

var pbAddressRow = fluss.RowType(fluss.RowField("street", fluss.String()), fluss.RowField("city", fluss.String()))

func pbOrderCols() []fluss.Column {
	return []fluss.Column{
		col("id", fluss.BigInt()),
		col("address", pbAddressRow),
		col("city", fluss.String()),
		col("nums", fluss.Array(fluss.Int())),
		col("tags", fluss.Array(fluss.String())),
		col("counts", fluss.Map(fluss.String(), fluss.BigInt())),
		col("card", fluss.String()),
		col("cash_cents", fluss.BigInt()),
		col("created", fluss.TimestampLTZ(3)),
		col("created6", fluss.Timestamp(6)),
		col("created_ms", fluss.BigInt()),
		col("note", fluss.String()),
		col("qty", fluss.BigInt()),
		col("history", fluss.Array(fluss.RowType(fluss.RowField("city", fluss.String())))),
		col("day", fluss.Date()),
		col("took", fluss.BigInt()),
		col("price", fluss.RowType(fluss.RowField("currency", fluss.String()), fluss.RowField("units", fluss.BigInt()))),
		col("by_id", fluss.Map(fluss.Int(), fluss.RowType(fluss.RowField("city", fluss.String())))),
		col("at", fluss.Time(3)),
		col("amount", fluss.Decimal(10, 2)),
		col("big", fluss.Array(fluss.Decimal(20, 0))),
	}
}

func pbOrderSpec() RouteSpec {
	return RouteSpec{Value: ValueSpec{Paths: map[string]string{
		"city": "address.city", "created6": "created", "created_ms": "created",
	}}}
}

const pbOrderJSON = `{"id": "42", "address": {"street": "1 Main St", "city": "Springfield"}, "nums": [1, -2, 3],
	"tags": ["a", "b"], "counts": {"x": "1"}, "card": "visa", "created": "2024-01-02T03:04:05.123456789Z",
	"note": "", "qty": "9", "history": [{"city": "A"}, {"street": "s"}], "day": {"year": 2024, "month": 2, "day": 29},
	"took": "1.5s", "price": {"currency": "EUR", "units": "12"}, "by_id": {"7": {"city": "Q"}},
	"at": {"hours": 12, "minutes": 30, "seconds": 1, "nanos": 250000000}, "amount": {"value": "MDk=", "scale": 3},
	"big": ["18446744073709551615"]}`

func pbOrderWant() fluss.Row {
	return fluss.Row{
		{I: 42},
		fluss.RowDatum(str("1 Main St"), str("Springfield")),
		str("Springfield"),
		fluss.ArrayDatum(fluss.Datum{I: 1}, fluss.Datum{I: -2}, fluss.Datum{I: 3}),
		fluss.ArrayDatum(str("a"), str("b")),
		fluss.MapDatum([]fluss.Datum{str("x")}, []fluss.Datum{{I: 1}}),
		str("visa"),
		null,
		{I: 1704164645123},
		{I: 1704164645123, N: 456000},
		{I: 1704164645123},
		str(""),
		{I: 9},
		fluss.ArrayDatum(fluss.RowDatum(str("A")), fluss.RowDatum(str(""))),
		{I: 19782},
		{I: 1500},
		fluss.RowDatum(str("EUR"), fluss.Datum{I: 12}),
		fluss.MapDatum([]fluss.Datum{{I: 7}}, []fluss.Datum{fluss.RowDatum(str("Q"))}),
		{I: 45001250},
		{I: 1235}, // 12.345 (0x3039 = 12345, scale 3) rounded half-up to 2 digits
		fluss.ArrayDatum(fluss.Datum{B: []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}),
	}
}

func TestProtobufNested(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, pbOrderCols(), pbOrderSpec())
	out, err := convert(t, r, pbRecord(f.schema, []int{1}, f.encode(t, "Order", pbOrderJSON)))
	require.NoError(t, err)
	assertRow(t, pbOrderWant(), out.Row)

	// The other oneof member; absent messages and wrappers are null,
	// absent repeated and map fields empty.
	out, err = convert(t, r, pbRecord(f.schema, []int{1}, f.encode(t, "Order", `{"cash_cents": "500"}`)))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{}, null, null, fluss.ArrayDatum(), fluss.ArrayDatum(), fluss.MapDatum(nil, nil), null, {I: 500},
		null, null, null, null, null, fluss.ArrayDatum(), null, null, null, fluss.MapDatum(nil, nil), null, null, fluss.ArrayDatum()}, out.Row)
}

func TestProtobufRepeatedEncodings(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, []fluss.Column{col("id", fluss.BigInt()), col("nums", fluss.Array(fluss.BigInt())), col("big", fluss.Array(fluss.BigInt()))}, RouteSpec{})
	var b []byte
	// nums: unpacked 1, packed [2, 300], an unrelated field, unpacked -1.
	b = protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.VarintType), 1)
	packed := protowire.AppendVarint(protowire.AppendVarint(nil, 2), 300)
	b = protowire.AppendBytes(protowire.AppendTag(b, 3, protowire.BytesType), packed)
	b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 5)
	b = protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.VarintType), math.MaxUint64) // int32 -1, sign-extended
	// big (fixed64): packed then unpacked.
	b = protowire.AppendBytes(protowire.AppendTag(b, 18, protowire.BytesType), protowire.AppendFixed64(protowire.AppendFixed64(nil, 1), 2))
	b = protowire.AppendFixed64(protowire.AppendTag(b, 18, protowire.Fixed64Type), 3)
	// id twice: the last wins.
	b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 6)
	out, err := convert(t, r, pbRecord(f.schema, []int{1}, b))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 6},
		fluss.ArrayDatum(fluss.Datum{I: 1}, fluss.Datum{I: 2}, fluss.Datum{I: 300}, fluss.Datum{I: -1}),
		fluss.ArrayDatum(fluss.Datum{I: 1}, fluss.Datum{I: 2}, fluss.Datum{I: 3})}, out.Row)

	// big above MaxInt64 in a BIGINT array.
	b = protowire.AppendFixed64(protowire.AppendTag(nil, 18, protowire.Fixed64Type), math.MaxUint64)
	_, err = convert(t, r, pbRecord(f.schema, []int{1}, b))
	pbRequireErr(t, err, "big", "element 0: integer 18446744073709551615 is out of range for BIGINT")
}

func TestProtobufMessageMerge(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, pbOrderCols()[:3], RouteSpec{Value: ValueSpec{Paths: map[string]string{"city": "address.city"}}})
	// address occurs twice: the occurrences merge field by field.
	b := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), f.encode(t, "Address", `{"street": "s1", "city": "c1"}`))
	b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), f.encode(t, "Address", `{"city": "c2"}`))
	out, err := convert(t, r, pbRecord(f.schema, []int{1}, b))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{}, fluss.RowDatum(str("s1"), str("c2")), str("c2")}, out.Row)
}

func TestProtobufMessageSelection(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, []fluss.Column{col("id", fluss.BigInt()), col("street", fluss.String()), col("i32", fluss.Int())}, RouteSpec{})
	addr := f.encode(t, "Address", `{"street": "Elm", "city": "X"}`)

	for _, tc := range []struct {
		name string
		ref  schemaregistry.Ref
		data []byte
		want fluss.Row
	}{
		{"[0] Scalars", schemaregistry.Ref{MessageIndexes: []int{0}}, f.encode(t, "Scalars", `{"i32": 4}`), fluss.Row{null, null, {I: 4}}},
		{"no indexes: first message", schemaregistry.Ref{}, f.encode(t, "Scalars", `{"i32": 4}`), fluss.Row{null, null, {I: 4}}},
		{"[1] Order", schemaregistry.Ref{MessageIndexes: []int{1}}, f.encode(t, "Order", `{"id": "8"}`), fluss.Row{{I: 8}, null, null}},
		{"[1,0] Order.Address", schemaregistry.Ref{MessageIndexes: []int{1, 0}}, addr, fluss.Row{null, str("Elm"), null}},
		{"Apicurio name Address", schemaregistry.Ref{MessageName: "Address"}, addr, fluss.Row{null, str("Elm"), null}},
		{"full name", schemaregistry.Ref{MessageName: "test.v1.Order"}, f.encode(t, "Order", `{"id": "8"}`), fluss.Row{{I: 8}, null, null}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := pbRecord(f.schema, nil, tc.data)
			rec.SerializedValue.Ref = tc.ref
			out, err := convert(t, r, rec)
			require.NoError(t, err)
			assertRow(t, tc.want, out.Row)
		})
	}
	for _, ref := range []schemaregistry.Ref{{MessageIndexes: []int{5}}, {MessageIndexes: []int{1, 9}}, {MessageName: "Nope"}} {
		rec := pbRecord(f.schema, nil, addr)
		rec.SerializedValue.Ref = ref
		_, err := convert(t, r, rec)
		pbRequireErr(t, err, "", "writer schema")
	}
}

func TestProtobufBase64Schema(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	common := pbFixtureOf(t, pbCommonProto, nil)
	r := pbRoute(t, pbOrderCols(), pbOrderSpec())
	payload := f.encode(t, "Order", pbOrderJSON)

	// Main file and dependency both base64 (Python serializer + Apicurio),
	// and base64 main with a text dependency.
	for name, deps := range map[string]map[string]string{
		"base64 deps": {"common.proto": pbBase64Form(t, common.fd)},
		"text deps":   pbTestDeps,
	} {
		s := &schemaregistry.Schema{Type: "PROTOBUF", ID: 12, Text: pbBase64Form(t, f.fd), Deps: deps}
		out, err := convert(t, r, pbRecord(s, []int{1}, payload))
		require.NoError(t, err, name)
		assertRow(t, pbOrderWant(), out.Row)
	}
}

func TestProtobufImports(t *testing.T) {
	t.Parallel()
	r := pbRoute(t, []fluss.Column{col("id", fluss.BigInt())}, RouteSpec{})
	// A missing reference: every record is invalid, the reason says why.
	s := &schemaregistry.Schema{Type: "PROTOBUF", ID: 13, Text: pbTestProto}
	_, err := convert(t, r, pbRecord(s, []int{1}, []byte{8, 1}))
	pbRequireErr(t, err, "", `writer schema 13 does not compile`)
	assert.Contains(t, err.Error(), "common.proto")

	s = &schemaregistry.Schema{Type: "PROTOBUF", ID: 14, Text: "syntax = \"proto3\"; message {"}
	_, err = convert(t, r, pbRecord(s, []int{0}, []byte{8, 1}))
	pbRequireErr(t, err, "", `writer schema 14 does not compile`)

	s = &schemaregistry.Schema{Type: "AVRO", ID: 15, Text: `"string"`}
	_, err = convert(t, r, pbRecord(s, []int{0}, []byte{8, 1}))
	pbRequireErr(t, err, "", "is AVRO, not PROTOBUF")

	// An import chain through Deps: a.proto imports b.proto.
	deps := map[string]string{
		"a.proto": "syntax = \"proto3\"; package a; import \"b.proto\"; message A { b.B inner = 1; }",
		"b.proto": "syntax = \"proto3\"; package b; message B { int64 id = 1; }",
	}
	text := "syntax = \"proto3\"; import \"a.proto\"; message Top { a.A a = 1; }"
	r = pbRoute(t, []fluss.Column{col("id", fluss.BigInt())}, RouteSpec{Value: ValueSpec{Paths: map[string]string{"id": "a.inner.id"}}})
	payload := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{8, 99}))
	out, err := convert(t, r, pbRecord(&schemaregistry.Schema{Type: "PROTOBUF", Text: text, Deps: deps}, []int{0}, payload))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 99}}, out.Row)
}

func TestProtobufEvolution(t *testing.T) {
	t.Parallel()
	v1 := pbFixtureOf(t, `syntax = "proto3"; message User { int64 id = 1; string name = 2; }`, nil)
	v2 := pbFixtureOf(t, `syntax = "proto3"; message User { int64 id = 1; string name = 2; string email = 3; optional int32 age = 4; }`, nil)
	v1.schema.ID, v2.schema.ID = 1, 2
	cols := []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String()), col("email", fluss.String()), col("age", fluss.Int())}
	r := pbRoute(t, cols, RouteSpec{})

	out, err := convert(t, r, pbRecord(v1.schema, []int{0}, v1.encode(t, "User", `{"id": "1", "name": "ann"}`)))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 1}, str("ann"), null, null}, out.Row) // email is not in v1
	out, err = convert(t, r, pbRecord(v2.schema, []int{0}, v2.encode(t, "User", `{"id": "2", "name": "bob", "age": 30}`)))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 2}, str("bob"), str(""), {I: 30}}, out.Row)

	// A v2 record read with v1 (the producer's schema is newer than the
	// one it named): unknown fields are skipped, or rejected.
	v2rec := v2.encode(t, "User", `{"id": "3", "email": "c@x"}`)
	out, err = convert(t, r, pbRecord(v1.schema, []int{0}, v2rec))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 3}, str(""), null, null}, out.Row)

	strict := pbRoute(t, cols[:2], RouteSpec{Value: ValueSpec{UnknownFields: FieldReject}})
	_, err = convert(t, strict, pbRecord(v1.schema, []int{0}, v2rec))
	pbRequireErr(t, err, "", "unknown field number 3 in User (unknown_fields: reject)")
	_, err = convert(t, strict, pbRecord(v2.schema, []int{0}, v2rec))
	pbRequireErr(t, err, "", `field "email" is read by no column (unknown_fields: reject)`)
	_, err = convert(t, strict, pbRecord(v2.schema, []int{0}, v2.encode(t, "User", `{"id": "3"}`)))
	require.NoError(t, err)

	// Inside a ROW: fields the ROW type lacks are skipped, or rejected.
	nested := pbFixtureOf(t, `syntax = "proto3"; message W { User u = 1; } message User { int64 id = 1; string name = 2; }`, nil)
	rowCols := []fluss.Column{col("u", fluss.RowType(fluss.RowField("id", fluss.BigInt())))}
	w := nested.encode(t, "W", `{"u": {"id": "4", "name": "x"}}`)
	out, err = convert(t, pbRoute(t, rowCols, RouteSpec{}), pbRecord(nested.schema, []int{0}, w))
	require.NoError(t, err)
	assertRow(t, fluss.Row{fluss.RowDatum(fluss.Datum{I: 4})}, out.Row)
	_, err = convert(t, pbRoute(t, rowCols, RouteSpec{Value: ValueSpec{UnknownFields: FieldReject}}), pbRecord(nested.schema, []int{0}, w))
	pbRequireErr(t, err, "u", `field "name" is not a field of the ROW type (unknown_fields: reject)`)

	// missing_fields reject: an absent field with presence, or one the
	// writer schema lacks, is missing; implicit-presence ones never are.
	missing := pbRoute(t, cols, RouteSpec{Value: ValueSpec{MissingFields: FieldReject}})
	_, err = convert(t, missing, pbRecord(v2.schema, []int{0}, v2.encode(t, "User", `{}`)))
	pbRequireErr(t, err, "age", "field missing from the value")
	_, err = convert(t, missing, pbRecord(v2.schema, []int{0}, v2.encode(t, "User", `{"age": 0}`)))
	require.NoError(t, err)
}

func TestProtobufProto2Presence(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, `syntax = "proto2"; message P { optional int32 a = 1 [default = 7]; required string b = 2; repeated int32 c = 3 [packed = true]; }`, nil)
	r := pbRoute(t, []fluss.Column{col("a", fluss.Int()), col("b", fluss.String()), col("c", fluss.Array(fluss.Int()))}, RouteSpec{})
	out, err := convert(t, r, pbRecord(f.schema, []int{0}, []byte{}))
	require.NoError(t, err)
	assertRow(t, fluss.Row{null, null, fluss.ArrayDatum()}, out.Row)
	out, err = convert(t, r, pbRecord(f.schema, []int{0}, f.encode(t, "P", `{"a": 0, "b": "x", "c": [5]}`)))
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 0}, str("x"), fluss.ArrayDatum(fluss.Datum{I: 5})}, out.Row)
}

func TestProtobufPlanErrors(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	for _, tc := range []struct {
		name   string
		cols   []fluss.Column
		paths  map[string]string
		column string
		reason string
	}{
		{"string into array", []fluss.Column{col("card", fluss.Array(fluss.String()))}, nil, "card", `field "card": protobuf string cannot fill ARRAY<STRING>`},
		{"message into string", []fluss.Column{col("address", fluss.String())}, nil, "address", "message test.v1.Order.Address cannot fill STRING"},
		{"repeated into scalar", []fluss.Column{col("tags", fluss.String())}, nil, "tags", "a repeated field cannot fill STRING"},
		{"map into array", []fluss.Column{col("counts", fluss.Array(fluss.BigInt()))}, nil, "counts", "a map field cannot fill"},
		{"row field mismatch", []fluss.Column{col("address", fluss.RowType(fluss.RowField("city", fluss.Array(fluss.Int()))))}, nil, "address", `field "city": protobuf string cannot fill ARRAY<INTEGER>`},
		{"path through scalar", []fluss.Column{col("x", fluss.String())}, map[string]string{"x": "id.y"}, "x", `path goes through field "id", which is not a single message`},
		{"bytes into int", []fluss.Column{col("amount", fluss.Int())}, map[string]string{"amount": "amount.value"}, "amount", `field "amount.value": protobuf bytes cannot fill INTEGER`},
		{"timestamp into string", []fluss.Column{col("created", fluss.String())}, nil, "created", "message google.protobuf.Timestamp cannot fill STRING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := pbRoute(t, tc.cols, RouteSpec{Value: ValueSpec{Paths: tc.paths}})
			_, err := convert(t, r, pbRecord(f.schema, []int{1}, f.encode(t, "Order", `{"id": "1"}`)))
			pbRequireErr(t, err, tc.column, tc.reason)
		})
	}
}

func TestProtobufMalformed(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, pbOrderCols(), pbOrderSpec())
	good := f.encode(t, "Order", pbOrderJSON)
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	for _, tc := range []struct {
		name   string
		data   []byte
		column string
		reason string
	}{
		{"truncated", good[:len(good)-3], "", "malformed protobuf"},
		{"field number 0", []byte{0x00, 0x01}, "", "malformed protobuf tag at byte 0"},
		{"truncated varint", []byte{0x08, 0xff}, "id", "malformed protobuf"},
		{"wrong wire type", append(tag(1, protowire.BytesType), 0), "id", `field "id" has wire type 2, want 0`},
		{"wrong wire type in row", append(tag(2, protowire.BytesType), 2, 0x08, 0x01), "address", `field "street" has wire type 0, want 2`},
		{"huge length", append(tag(4, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0x0f), "tags", "malformed protobuf"},
		{"huge length unknown field", append(tag(99, protowire.BytesType), 0xff, 0xff, 0xff, 0x7f), "", "malformed protobuf"},
		{"packed ends in varint", append(tag(3, protowire.BytesType), 1, 0x80), "nums", "ends inside a varint"},
		{"packed fixed64 ragged", append(tag(18, protowire.BytesType), 3, 1, 2, 3), "big", "not a whole number of values"},
		{"stray end group", tag(99, protowire.EndGroupType), "", "malformed protobuf"},
		{"wrong wire type repeated", append(tag(4, protowire.VarintType), 1), "tags", `field "tags" has wire type 0, want 2`},
		{"bad map entry", append(tag(5, protowire.BytesType), 2, 0x08, 0x01), "counts", "map entry field 1 has wire type 0, want 2"},
		{"timestamp nanos", protowire.AppendBytes(tag(8, protowire.BytesType), protowire.AppendVarint(tag(2, protowire.VarintType), math.MaxUint64)), "created", "out of range"},
		{"bad date", append(tag(12, protowire.BytesType), 2, 0x10, 13), "day", "not a full date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(t, r, pbRecord(f.schema, []int{1}, tc.data))
			pbRequireErr(t, err, tc.column, tc.reason)
		})
	}
}

func TestProtobufKey(t *testing.T) {
	t.Parallel()
	key := pbFixtureOf(t, `syntax = "proto3"; package k; message Key { int64 id = 1; string region = 2; }`, nil)
	val := pbFixtureOf(t, `syntax = "proto3"; package v; message Val { int64 id = 1; string name = 2; }`, nil)
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt().NonNull()), col("region", fluss.String().NonNull()), col("name", fluss.String())},
		[]string{"id", "region"})
	r := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyProtobuf}, Value: ValueSpec{Format: ValueProtobuf}}, info)
	kb := key.encode(t, "Key", `{"id": "5", "region": "eu"}`)
	vb := val.encode(t, "Val", `{"id": "6", "name": "n"}`)
	rec := pbRecord(val.schema, []int{0}, vb)
	rec.Key = kb
	rec.SerializedKey = Serialized{Schema: key.schema, Ref: schemaregistry.Ref{MessageIndexes: []int{0}}, Payload: kb}
	out, err := convert(t, r, rec)
	require.NoError(t, err)
	assert.Equal(t, fluss.WriteUpsert, out.Op)
	assertRow(t, fluss.Row{{I: 5}, str("eu"), str("n")}, out.Row) // the key wins for id
	assert.NotEmpty(t, out.Key)

	// Tombstone: the key alone fills the primary key.
	rec.Value = nil
	out, err = convert(t, r, rec)
	require.NoError(t, err)
	assert.Equal(t, fluss.WriteDelete, out.Op)
	assertRow(t, fluss.Row{{I: 5}, str("eu"), null}, out.Row)
}

func TestProtobufConcurrent(t *testing.T) {
	t.Parallel()
	f := pbFixtureOf(t, pbTestProto, pbTestDeps)
	r := pbRoute(t, pbOrderCols(), pbOrderSpec())
	payload := f.encode(t, "Order", pbOrderJSON)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := &Converted{}
			for i := range 200 {
				// Fresh *Schema copies share the compiled file by text.
				s := f.schema
				if (g+i)%7 == 0 {
					c := *f.schema
					s = &c
				}
				rec := pbRecord(s, []int{1}, payload)
				if err := r.Converter().Convert(&rec, out); err != nil {
					t.Error(err)
					return
				}
				if !pbOrderWant()[1].Equal(out.Row[1]) {
					t.Error("wrong address")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestProtobufConvertAllocs pins the Protobuf fast path: a cached schema,
// a nested message, a repeated field, a warm Converted.
func TestProtobufConvertAllocs(t *testing.T) {
	r, recs := pbBenchRoute(t)
	conv := r.Converter()
	out := &Converted{}
	rec := recs[3]
	require.NoError(t, conv.Convert(&rec, out))
	allocs := testing.AllocsPerRun(500, func() {
		if err := conv.Convert(&rec, out); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 1.0, "allocations per converted record")
	t.Logf("allocs per record: %v", allocs)
}

// pbCountDatums counts the datums a row's nested values hold.
func pbCountDatums(ds []fluss.Datum) int {
	n := len(ds)
	for _, d := range ds {
		if d.Nested != nil {
			n += pbCountDatums(d.Nested.Elems) + pbCountDatums(d.Nested.Keys) + pbCountDatums(d.Nested.Values) + pbCountDatums(d.Nested.Fields)
		}
	}
	return n
}

// FuzzProtobufDecode feeds arbitrary payloads to routes over every
// conversion: no panic, and what a record allocates grows at most
// linearly with its size.
func FuzzProtobufDecode(f *testing.F) {
	fx := pbFixtureOf(f, pbTestProto, pbTestDeps)
	routes := []*Route{
		pbRoute(f, pbOrderCols(), pbOrderSpec()),
		pbRoute(f, pbScalarCols(), RouteSpec{Value: ValueSpec{UnknownFields: FieldReject}}),
		pbRoute(f, []fluss.Column{
			col("i32", fluss.TinyInt()), col("i64", fluss.String()), col("u64", fluss.Decimal(20, 0)), col("fl", fluss.Decimal(5, 2)),
			col("str", fluss.TimestampLTZ(6)), col("status", fluss.Int()), col("street", fluss.Char(3)), col("by", fluss.Binary(2)),
		}, RouteSpec{}),
	}
	indexes := [][]int{{0}, {1}, {1, 0}}
	f.Add(fx.encode(f, "Order", pbOrderJSON), uint8(1))
	f.Add(fx.encode(f, "Scalars", `{"b": true, "i32": -5, "u64": "18446744073709551615", "fl": 1.5, "str": "2024-01-02T03:04:05Z", "status": "CLOSED"}`), uint8(0))
	f.Add(fx.encode(f, "Address", `{"street": "1 Main St", "city": "X"}`), uint8(2))
	f.Add([]byte{0x1a, 0x03, 0x01, 0x80, 0x01, 0x22, 0x01}, uint8(1))
	f.Add([]byte{0x2a, 0x04, 0x0a, 0x01, 0x78, 0x10}, uint8(1))
	f.Add([]byte{0x0b, 0x0c}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		out := &Converted{}
		for _, r := range routes {
			rec := pbRecord(fx.schema, indexes[int(sel)%len(indexes)], data)
			if err := r.Converter().Convert(&rec, out); err != nil {
				var re *RecordError
				if !errors.As(err, &re) {
					t.Fatalf("not a record error: %v", err)
				}
				continue
			}
			if n := pbCountDatums(out.Row); n > len(out.Row)+32*len(data)+64 {
				t.Fatalf("%d datums for %d bytes", n, len(data))
			}
		}
	})
}
