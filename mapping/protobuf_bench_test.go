package mapping

import (
	"strconv"
	"testing"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

const pbBenchProto = `syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";

enum Status {
  UNKNOWN = 0;
  NEW = 1;
  PAID = 2;
  SHIPPED = 3;
}

message Order {
  message Address {
    string street = 1;
    string city = 2;
    string zip = 3;
  }
  int64 order_id = 1;
  string customer = 2;
  int32 quantity = 3;
  double price = 4;
  bool paid = 5;
  google.protobuf.Timestamp created_at = 6;
  Status status = 7;
  Address address = 8;
  repeated string tags = 9;
  uint32 amount_cents = 10;
}
`

// pbBenchRoute is the Protobuf counterpart of benchRoute: a primary-key
// table, the key as a string, a 10-field value with a nested message (a
// ROW column and a path into it), a repeated field (ARRAY), a Timestamp
// and an enum; the writer schema is cached (one *Schema).
func pbBenchRoute(tb testing.TB) (*Route, []Record) {
	info := tableInfo("db", "orders", []fluss.Column{
		col("order_id", fluss.BigInt().NonNull()),
		col("customer", fluss.String()),
		col("quantity", fluss.Int()),
		col("price", fluss.Double()),
		col("paid", fluss.Boolean()),
		col("created_at", fluss.TimestampLTZ(3)),
		col("status", fluss.String()),
		col("address", fluss.RowType(fluss.RowField("street", fluss.String()), fluss.RowField("city", fluss.String()), fluss.RowField("zip", fluss.String()))),
		col("tags", fluss.Array(fluss.String())),
		col("amount_cents", fluss.BigInt()),
		col("city", fluss.String()),
		col("kafka_ts", fluss.TimestampLTZ(3)),
	}, []string{"order_id"}, buckets(8))
	r := bind(tb, RouteSpec{
		Topic:    "orders",
		Key:      KeySpec{Format: KeyString, Column: "order_id"},
		Value:    ValueSpec{Format: ValueProtobuf, Paths: map[string]string{"city": "address.city"}},
		Metadata: MetadataSpec{Timestamp: "kafka_ts"},
	}, info)
	f := pbFixtureOf(tb, pbBenchProto, nil)
	recs := make([]Record, 64)
	for i := range recs {
		v := f.encode(tb, "Order", `{"order_id": "`+strconv.Itoa(i)+`", "customer": "customer-`+strconv.Itoa(i)+`", "quantity": 3,
			"price": 41.15, "paid": true, "created_at": "2024-01-02T03:04:05.678Z", "status": "PAID",
			"address": {"street": "1 Main St", "city": "Springfield", "zip": "12345"}, "tags": ["new", "gift", "express"],
			"amount_cents": 12345}`)
		recs[i] = Record{Topic: "orders", Key: []byte(strconv.Itoa(i)), Value: v, Timestamp: 1_700_000_000_000,
			SerializedValue: Serialized{Schema: f.schema, Ref: schemaregistry.Ref{MessageIndexes: []int{0}}, Payload: v}}
	}
	return r, recs
}

// BenchmarkProtobufConvert measures Protobuf value -> row on a cached
// writer schema (the whole Convert: key, metadata, primary key, bucket).
func BenchmarkProtobufConvert(b *testing.B) {
	r, recs := pbBenchRoute(b)
	conv := r.Converter()
	out := &Converted{}
	b.SetBytes(int64(len(recs[0].Value)))
	b.ReportAllocs()
	i := 0
	start := time.Now()
	for b.Loop() {
		if err := conv.Convert(&recs[i%len(recs)], out); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "records/s")
}
