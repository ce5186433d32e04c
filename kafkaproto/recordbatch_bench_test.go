package kafkaproto

import (
	"runtime"
	"testing"
)

// BenchmarkDecodeRecordBatch decodes 500 records of 100-byte values per
// codec. "released" gives every batch back (the steady state once the sink
// releases what it was handed); "kept" drops it to the GC, as when
// nobody calls Release.
func BenchmarkDecodeRecordBatch(b *testing.B) {
	recs := benchRecords(500, 100)
	d, err := newBatchDecoder(64<<20, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.close()
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		data := TestBatch{ProducerID: -1, BaseSequence: -1, Codec: c, Records: recs}.Build()
		for _, release := range []bool{true, false} {
			name := c.String() + "/kept"
			if release {
				name = c.String() + "/released"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				perRecord(b, len(recs), func() {
					batch, err := d.decode(data, 9)
					if err != nil {
						b.Fatal(err)
					}
					if release {
						batch.Release()
					}
				})
			})
		}
	}
}

// perRecord runs op in the benchmark loop and reports its cost per record.
func perRecord(b *testing.B, records int, op func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(records)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/record")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/record")
}
