package mapping

import (
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

const avroBenchSchema = `{"type": "record", "name": "Order", "namespace": "shop", "fields": [
	{"name": "id", "type": "long"},
	{"name": "name", "type": "string"},
	{"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "flag", "type": "boolean"},
	{"name": "score", "type": "double"},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "address", "type": {"type": "record", "name": "Address", "fields": [
		{"name": "street", "type": "string"},
		{"name": "city", "type": "string"},
		{"name": "zip", "type": "string"}
	]}},
	{"name": "country", "type": {"type": "enum", "name": "Country", "symbols": ["DE", "FR", "NL", "US"]}},
	{"name": "note", "type": ["null", "string"]}
]}`

func avroBenchColumns() []fluss.Column {
	return []fluss.Column{
		col("id", fluss.BigInt().NonNull()),
		col("name", fluss.String()),
		col("amount", fluss.Decimal(10, 2)),
		col("ts", fluss.TimestampLTZ(3)),
		col("flag", fluss.Boolean()),
		col("score", fluss.Double()),
		col("tags", fluss.Array(fluss.String())),
		col("address", fluss.RowType(fluss.RowField("street", fluss.String()), fluss.RowField("city", fluss.String()),
			fluss.RowField("zip", fluss.String()))),
		col("country", fluss.String()),
		col("note", fluss.String()),
	}
}

// avroBenchRoute is a log table filled from a 10-field Avro record with a
// nested record and an array, and 64 encoded values.
func avroBenchRoute(tb testing.TB) (*Route, avroWriter, [][]byte) {
	w := newAvroWriter(tb, avroBenchSchema)
	r := avroRoute(tb, tableInfo("db", "orders", avroBenchColumns(), nil, buckets(8)))
	return r, w, avroBenchPayloads(tb, w)
}

func avroBenchPayloads(tb testing.TB, w avroWriter) [][]byte {
	payloads := make([][]byte, 64)
	for i := range payloads {
		var note any
		if i%2 == 0 {
			note = map[string]any{"string": "note " + strconv.Itoa(i)}
		}
		payloads[i] = w.encode(tb, map[string]any{
			"id":      int64(i),
			"name":    "customer-" + strconv.Itoa(i),
			"amount":  big.NewRat(12345+int64(i), 100),
			"ts":      time.UnixMilli(1_704_164_645_678 + int64(i)).UTC(),
			"flag":    i%3 == 0,
			"score":   41.15 + float64(i),
			"tags":    []any{"new", "priority", "tag-" + strconv.Itoa(i%5)},
			"address": map[string]any{"street": "1 Main St", "city": "Springfield", "zip": "12345"},
			"country": []string{"DE", "FR", "NL", "US"}[i%4],
			"note":    note,
		})
	}
	return payloads
}

// BenchmarkAvroConvert measures Avro value -> row on a cached writer
// schema: a log table, and a primary-key table keyed by the Kafka key.
func BenchmarkAvroConvert(b *testing.B) {
	run := func(b *testing.B, r *Route, w avroWriter, payloads [][]byte, keys [][]byte) {
		conv := r.Converter()
		out := &Converted{}
		b.SetBytes(int64(len(payloads[0])))
		b.ReportAllocs()
		// One Record reused, as the gateway's bridge does (a Record built
		// per iteration escapes to the heap through Convert).
		rec := &Record{}
		i := 0
		for b.Loop() {
			p := payloads[i%len(payloads)]
			*rec = Record{Topic: "orders", Value: p, Timestamp: 1_700_000_000_000,
				SerializedValue: Serialized{Schema: w.reg, Payload: p}}
			if keys != nil {
				rec.Key = keys[i%len(keys)]
			}
			if err := conv.Convert(rec, out); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("log", func(b *testing.B) {
		r, w, payloads := avroBenchRoute(b)
		run(b, r, w, payloads, nil)
	})
	b.Run("pk", func(b *testing.B) {
		w := newAvroWriter(b, avroBenchSchema)
		r := bind(b, RouteSpec{Topic: "orders", Key: KeySpec{Format: KeyString, Column: "id"}, Value: ValueSpec{Format: ValueAvro}},
			tableInfo("db", "orders", avroBenchColumns(), []string{"id"}, buckets(8)))
		keys := make([][]byte, 64)
		for i := range keys {
			keys[i] = []byte(strconv.Itoa(i))
		}
		run(b, r, w, avroBenchPayloads(b, w), keys)
	})
}
