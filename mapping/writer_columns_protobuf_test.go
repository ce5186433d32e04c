package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// pbPlanProto has a field of each writer type the plan types; its second
// message shows that the first one is planned.
const pbPlanProto = `syntax = "proto3";
package shop.v1;

import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/type/date.proto";
import "google/type/timeofday.proto";
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "common.proto";

enum State {
  NEW = 0;
  DONE = 1;
}

message Order {
  message Address {
    string city = 1 [(confluent.field_meta).doc = "the city"];
  }
  int64 id = 1 [(confluent.field_meta).doc = "the order"];
  int32 qty = 2;
  sint32 s32 = 3;
  sfixed32 sf32 = 4;
  uint32 u32 = 5;
  fixed32 f32 = 6;
  sint64 s64 = 7;
  sfixed64 sf64 = 8;
  uint64 u64 = 9;
  fixed64 f64 = 10;
  bool ok = 11;
  float f = 12;
  double d = 13;
  string note = 14;
  bytes raw = 15;
  State state = 16;
  optional string opt = 17;
  Address addr = 18;
  repeated string tags = 19;
  map<string, int64> attrs = 20;
  map<int32, Address> by_id = 21;
  repeated Address history = 22;
  oneof pay {
    string card = 23;
    int64 cash = 24;
  }
  google.protobuf.Timestamp at = 25;
  google.protobuf.Duration took = 26;
  google.protobuf.StringValue w_str = 27;
  google.protobuf.UInt64Value w_u64 = 28;
  google.protobuf.Int32Value w_i32 = 29;
  google.type.Date day = 30;
  google.type.TimeOfDay tod = 31;
  confluent.type.Decimal price = 32 [(confluent.field_meta) = {
    params: [{key: "precision", value: "10"}, {key: "scale", value: "2"}]
  }];
  common.Money money = 33;
  repeated google.protobuf.Timestamp stamps = 34;
  google.protobuf.Any any = 35;
}

message Other {
  string x = 1;
}
`

func pbPlanWant() []fluss.Column {
	addr := fluss.RowType(fluss.Field{Name: "city", Type: fluss.String(), Description: "the city"})
	return []fluss.Column{
		{Name: "id", Type: fluss.BigInt(), Comment: "the order"}, col("qty", fluss.Int()), col("s32", fluss.Int()),
		col("sf32", fluss.Int()), col("u32", fluss.BigInt()), col("f32", fluss.BigInt()), col("s64", fluss.BigInt()),
		col("sf64", fluss.BigInt()), col("u64", fluss.Decimal(20, 0)), col("f64", fluss.Decimal(20, 0)),
		col("ok", fluss.Boolean()), col("f", fluss.Float()), col("d", fluss.Double()), col("note", fluss.String()),
		col("raw", fluss.Bytes()), col("state", fluss.String()), col("opt", fluss.String()), col("addr", addr),
		col("tags", fluss.Array(fluss.String())), col("attrs", fluss.Map(fluss.String(), fluss.BigInt())),
		col("by_id", fluss.Map(fluss.Int(), addr)), col("history", fluss.Array(addr)),
		col("card", fluss.String()), col("cash", fluss.BigInt()),
		col("at", fluss.TimestampLTZ(9)), col("took", fluss.BigInt()), col("w_str", fluss.String()),
		col("w_u64", fluss.Decimal(20, 0)), col("w_i32", fluss.Int()), col("day", fluss.Date()), col("tod", fluss.Time(3)),
		col("price", fluss.Decimal(10, 2)),
		col("money", fluss.RowType(fluss.RowField("currency", fluss.String()), fluss.RowField("units", fluss.BigInt()))),
		col("stamps", fluss.Array(fluss.TimestampLTZ(9))),
		col("any", fluss.RowType(fluss.RowField("type_url", fluss.String()), fluss.RowField("value", fluss.Bytes()))),
	}
}

// Columns derived from a Protobuf writer schema are what the protobuf
// format reads that schema into: a table made of them binds a protobuf
// route, the schema checks against it, and a record converts.
func TestWriterColumnsProtobuf(t *testing.T) {
	f := pbFixtureOf(t, pbPlanProto, pbTestDeps)
	cols, _, err := WriterColumns("protobuf", f.schema, "shop.v1.Order")
	require.NoError(t, err)
	assert.Equal(t, pbPlanWant(), cols)

	// As Python's serializer registers it (base64 FileDescriptorProto,
	// options as unknown bytes): the same columns, docs and decimal.
	b64 := &schemaregistry.Schema{Type: "PROTOBUF", ID: 21, Text: pbBase64Form(t, f.fd), Deps: pbTestDeps}
	cols64, _, err := WriterColumns("protobuf", b64, "shop.v1.Order")
	require.NoError(t, err)
	assert.Equal(t, cols, cols64)

	r := pbRoute(t, cols, RouteSpec{})
	require.NoError(t, r.Converter().CheckWriterSchema(f.schema, false), "the schema fills the table made from it")
	payload := f.encode(t, "Order", `{"id": "7", "qty": -2, "s32": -3, "sf32": -4, "u32": 4294967295, "f32": 4000000000,
		"s64": "-9000000000", "sf64": "-6", "u64": "18446744073709551615", "f64": "5", "ok": true, "f": 1.5, "d": 2.5,
		"note": "n", "raw": "AQ==", "state": "DONE", "addr": {"city": "Lyon"}, "tags": ["a", "b"], "attrs": {"k": "1"},
		"by_id": {"3": {"city": "Q"}}, "history": [{"city": "A"}], "card": "visa",
		"at": "2024-01-02T03:04:05.123456789Z", "took": "1.5s", "w_str": "", "w_u64": "18446744073709551615", "w_i32": 9,
		"day": {"year": 2024, "month": 2, "day": 29}, "tod": {"hours": 12, "minutes": 30, "seconds": 1, "nanos": 250000000},
		"price": {"value": "BNI=", "scale": 2}, "money": {"currency": "EUR", "units": "12"},
		"stamps": ["1970-01-01T00:00:01Z"]}`)
	out, err := convert(t, r, pbRecord(f.schema, []int{0}, payload))
	require.NoError(t, err)
	maxU64, reason := decimalDatum([]byte("18446744073709551615"), 20, 0)
	require.Empty(t, reason)
	five, reason := decimalDatum([]byte("5"), 20, 0)
	require.Empty(t, reason)
	assertRow(t, fluss.Row{
		{I: 7}, {I: -2}, {I: -3}, {I: -4}, {I: 4294967295}, {I: 4000000000}, {I: -9000000000}, {I: -6}, maxU64, five,
		{I: 1}, {F: 1.5}, {F: 2.5}, str("n"), {B: []byte{1}}, str("DONE"), null, fluss.RowDatum(str("Lyon")),
		fluss.ArrayDatum(str("a"), str("b")), fluss.MapDatum([]fluss.Datum{str("k")}, []fluss.Datum{{I: 1}}),
		fluss.MapDatum([]fluss.Datum{{I: 3}}, []fluss.Datum{fluss.RowDatum(str("Q"))}),
		fluss.ArrayDatum(fluss.RowDatum(str("A"))), str("visa"), null,
		{I: 1704164645123, N: 456789}, {I: 1500}, str(""), maxU64, {I: 9}, {I: 19782}, {I: 45001250},
		{I: 1234}, fluss.RowDatum(str("EUR"), fluss.Datum{I: 12}), fluss.ArrayDatum(fluss.Datum{I: 1000}), null,
	}, out.Row)
}

func TestWriterColumnsProtobufRefused(t *testing.T) {
	for _, c := range []struct{ name, schema, reason string }{
		{"no message", `syntax = "proto3"; enum E { A = 0; }`, "declares no message"},
		{"does not compile", `syntax = "proto3"; message {`, "does not compile"},
		{"recursive", `syntax = "proto3"; message N { int64 id = 1; N next = 2; }`, `field "next" (N): message N is recursive`},
		{"mutually recursive", `syntax = "proto3"; message A { message B { repeated A a = 1; } B b = 1; }`,
			`field "b" (A.B): field "a": elements: message A is recursive`},
		{"several messages, none named", `syntax = "proto3"; package shop; message Meta { string source = 1; } message Event { int64 id = 1; }`,
			"declares 2 messages (shop.Meta, shop.Event): name the records' message with value.message"},
		{"struct", `syntax = "proto3"; import "google/protobuf/struct.proto"; message R { google.protobuf.Struct s = 1; }`,
			`field "s" (google.protobuf.Struct): google.protobuf.Struct holds any JSON value`},
		{"value in a map", `syntax = "proto3"; import "google/protobuf/struct.proto"; message R { map<string, google.protobuf.Value> m = 1; }`,
			`field "m" (map<string, google.protobuf.Value>): map values: google.protobuf.Value holds any JSON value`},
		{"empty", `syntax = "proto3"; import "google/protobuf/empty.proto"; message R { google.protobuf.Empty e = 1; }`,
			`field "e" (google.protobuf.Empty): message google.protobuf.Empty has no fields`},
		{"group", `syntax = "proto2"; message R { optional group G = 1 { optional int32 a = 2; } }`, `field "g" (R.G): group fields are not supported`},
		{"decimal without precision", `syntax = "proto3"; import "confluent/type/decimal.proto"; message R { confluent.type.Decimal p = 1; }`,
			`field "p" (confluent.type.Decimal): confluent.type.Decimal without a "precision" param`},
		{"wide decimal", `syntax = "proto3"; import "confluent/meta.proto"; import "confluent/type/decimal.proto";
			message R { confluent.type.Decimal p = 1 [(confluent.field_meta).params = {key: "precision", value: "40"}]; }`,
			"precision 1 to 38"},
	} {
		assert.Contains(t, columnsProblem(t, "protobuf", &schemaregistry.Schema{Type: "PROTOBUF", Text: c.schema}), c.reason, c.name)
	}
	_, _, err := WriterColumns("protobuf", &schemaregistry.Schema{Type: "AVRO", Text: `"long"`}, "")
	assert.ErrorContains(t, err, "not Protobuf")
}
