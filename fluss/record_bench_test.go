package fluss

import (
	"runtime"
	"testing"
)

// benchSchema is a typical 10-column row.
var benchSchema = &Schema{Columns: []Column{
	{Name: "id", Type: BigInt().NonNull()},
	{Name: "user_id", Type: Int()},
	{Name: "event", Type: String()},
	{Name: "page", Type: String()},
	{Name: "amount", Type: Double()},
	{Name: "ok", Type: Boolean()},
	{Name: "ts", Type: TimestampLTZ(3)},
	{Name: "price", Type: Decimal(10, 2)},
	{Name: "payload", Type: Bytes()},
	{Name: "day", Type: Date()},
}}

func benchRows(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{
			IntDatum(int64(i)), IntDatum(int64(i % 1000)), StringDatum("page_view"),
			StringDatum("/products/item-" + string(rune('a'+i%26))), FloatDatum(float64(i) * 1.25),
			BoolDatum(i%3 == 0), TimestampDatum(1_700_000_000_000+int64(i), 0), IntDatum(int64(i * 7)),
			BytesDatum([]byte("0123456789abcdef")), IntDatum(19_000 + int64(i%30)),
		}
		if i%10 == 0 {
			rows[i][3] = NullDatum()
		}
	}
	return rows
}

type batchBuilder interface {
	Append(Row) error
	AppendTo([]byte) ([]byte, error)
	Reset()
}

// benchmarkBuild appends rows in batches of batchRows and builds each batch,
// reporting rows/s and allocations per row.
func benchmarkBuild(b *testing.B, bb batchBuilder) {
	benchmarkBuildRows(b, bb, benchRows(2000))
}

func benchmarkBuildRows(b *testing.B, bb batchBuilder, rows []Row) {
	batchRows := len(rows)
	out := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		bb.Reset()
		for _, r := range rows {
			if err := bb.Append(r); err != nil {
				b.Fatal(err)
			}
		}
		var err error
		if out, err = bb.AppendTo(out[:0]); err != nil {
			b.Fatal(err)
		}
		n += batchRows
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n), "allocs/row")
	sec := b.Elapsed().Seconds()
	if sec > 0 {
		b.ReportMetric(float64(n)/sec, "rows/s")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/row")
}

func BenchmarkArrowLogBatch(b *testing.B) {
	for _, codec := range []ArrowCompression{ArrowCompressionNone, ArrowCompressionLZ4, ArrowCompressionZstd} {
		b.Run(string(codec), func(b *testing.B) {
			bb, err := NewArrowLogBuilder(benchSchema, 1, codec, 3)
			if err != nil {
				b.Fatal(err)
			}
			benchmarkBuild(b, bb)
		})
	}
}

// BenchmarkArrowLogBatchSmall builds batches of two rows: a small
// producer's Kafka batch on the exactly-once path is its own Fluss batch.
func BenchmarkArrowLogBatchSmall(b *testing.B) {
	for _, codec := range []ArrowCompression{ArrowCompressionNone, ArrowCompressionLZ4, ArrowCompressionZstd} {
		b.Run(string(codec), func(b *testing.B) {
			bb, err := NewArrowLogBuilder(benchSchema, 1, codec, 3)
			if err != nil {
				b.Fatal(err)
			}
			benchmarkBuildRows(b, bb, benchRows(2))
		})
	}
}

func BenchmarkIndexedLogBatch(b *testing.B) {
	bb, err := NewIndexedLogBuilder(benchSchema, 1)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkBuild(b, bb)
}

func BenchmarkKvBatchCompacted(b *testing.B) {
	kb, err := NewKvBatchBuilder(benchSchema, 1, KvFormatCompacted)
	if err != nil {
		b.Fatal(err)
	}
	ke, err := NewKeyEncoder(benchSchema, []string{"id"}, "")
	if err != nil {
		b.Fatal(err)
	}
	benchmarkBuild(b, &kvBench{kb: kb, ke: ke})
}

type kvBench struct {
	kb  *KvBatchBuilder
	ke  *KeyEncoder
	key []byte
}

func (k *kvBench) Append(r Row) error {
	var err error
	if k.key, err = k.ke.Encode(k.key[:0], r); err != nil {
		return err
	}
	_ = BucketForKey(k.key, 16)
	return k.kb.Upsert(k.key, r)
}
func (k *kvBench) AppendTo(dst []byte) ([]byte, error) { return k.kb.AppendTo(dst) }
func (k *kvBench) Reset()                              { k.kb.Reset() }

// benchNestedSchema: scalar columns and the common nested shapes.
var benchNestedSchema = &Schema{Columns: []Column{
	{Name: "id", Type: BigInt().NonNull()},
	{Name: "event", Type: String()},
	{Name: "tags", Type: Array(String())},
	{Name: "attrs", Type: Map(String(), BigInt())},
	{Name: "geo", Type: RowType(RowField("lat", Double()), RowField("lon", Double()), RowField("city", String()))},
	{Name: "items", Type: Array(RowType(RowField("sku", String()), RowField("qty", Int())))},
}}

func benchNestedRows(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{
			IntDatum(int64(i)), StringDatum("page_view"),
			ArrayDatum(StringDatum("a"), StringDatum("promo-2024"), NullDatum()),
			MapDatum([]Datum{StringDatum("clicks"), StringDatum("views")}, []Datum{IntDatum(int64(i)), IntDatum(7)}),
			RowDatum(FloatDatum(52.5), FloatDatum(13.4), StringDatum("Berlin")),
			ArrayDatum(RowDatum(StringDatum("sku-1"), IntDatum(1)), RowDatum(StringDatum("sku-22"), IntDatum(3))),
		}
	}
	return rows
}

// BenchmarkNestedBatches: rows with ARRAY, MAP and ROW columns (no
// allocations per row either: nested values are written from the datums).
func BenchmarkNestedBatches(b *testing.B) {
	rows := benchNestedRows(2000)
	b.Run("ARROW_NONE", func(b *testing.B) {
		bb, err := NewArrowLogBuilder(benchNestedSchema, 1, ArrowCompressionNone, 0)
		if err != nil {
			b.Fatal(err)
		}
		benchmarkBuildRows(b, bb, rows)
	})
	b.Run("INDEXED", func(b *testing.B) {
		bb, err := NewIndexedLogBuilder(benchNestedSchema, 1)
		if err != nil {
			b.Fatal(err)
		}
		benchmarkBuildRows(b, bb, rows)
	})
	b.Run("KV_COMPACTED", func(b *testing.B) {
		kb, err := NewKvBatchBuilder(benchNestedSchema, 1, KvFormatCompacted)
		if err != nil {
			b.Fatal(err)
		}
		ke, err := NewKeyEncoder(benchNestedSchema, []string{"id"}, "")
		if err != nil {
			b.Fatal(err)
		}
		benchmarkBuildRows(b, &kvBench{kb: kb, ke: ke}, rows)
	})
}
