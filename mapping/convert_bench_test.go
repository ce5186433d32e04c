package mapping

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func benchRoute(tb testing.TB) (*Route, [][]byte) {
	info := tableInfo("db", "orders", []fluss.Column{
		col("order_id", fluss.BigInt().NonNull()),
		col("customer", fluss.String()),
		col("amount", fluss.Decimal(10, 2)),
		col("quantity", fluss.Int()),
		col("price", fluss.Double()),
		col("paid", fluss.Boolean()),
		col("created_at", fluss.TimestampLTZ(3)),
		col("city", fluss.String()),
		col("kafka_ts", fluss.TimestampLTZ(3)),
	}, []string{"order_id"}, buckets(8))
	r := bind(tb, RouteSpec{
		Topic: "orders",
		Key:   KeySpec{Format: KeyString, Column: "order_id"},
		Value: ValueSpec{Paths: map[string]string{"city": "address.city"}},
		Metadata: MetadataSpec{
			Timestamp: "kafka_ts",
		},
	}, info)
	values := make([][]byte, 64)
	for i := range values {
		values[i] = []byte(`{"order_id": ` + strconv.Itoa(i) + `, "customer": "customer-` + strconv.Itoa(i) +
			`", "amount": "123.45", "quantity": 3, "price": 41.15, "paid": true, "created_at": "2024-01-02T03:04:05.678Z",` +
			` "address": {"street": "1 Main St", "city": "Springfield"}, "note": "unknown field, skipped"}`)
	}
	return r, values
}

// BenchmarkConvertJSON measures JSON value -> row, the gateway's hot path.
func BenchmarkConvertJSON(b *testing.B) {
	r, values := benchRoute(b)
	conv := r.Converter()
	out := &Converted{}
	keys := make([][]byte, len(values))
	for i := range keys {
		keys[i] = []byte(strconv.Itoa(i))
	}
	b.SetBytes(int64(len(values[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec := Record{Topic: "orders", Key: keys[i%len(keys)], Value: values[i%len(values)], Timestamp: 1_700_000_000_000}
		if err := conv.Convert(&rec, out); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// TestConvertJSONAllocs pins the JSON fast path at zero allocations per
// record once the Converted is warm.
func TestConvertJSONAllocs(t *testing.T) {
	r, values := benchRoute(t)
	conv := r.Converter()
	out := &Converted{}
	rec := Record{Topic: "orders", Key: []byte("17"), Value: values[17], Timestamp: 1_700_000_000_000}
	require.NoError(t, conv.Convert(&rec, out))
	allocs := testing.AllocsPerRun(200, func() {
		if err := conv.Convert(&rec, out); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "allocations per converted record")
}
