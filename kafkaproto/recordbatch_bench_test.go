package kafkaproto

import (
	"fmt"
	"testing"
)

func BenchmarkDecodeRecordBatch(b *testing.B) {
	recs := make([]Record, 500)
	for i := range recs {
		recs[i] = Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("%0100d", i)), Timestamp: int64(i)}
	}
	d, err := newBatchDecoder(64 << 20)
	if err != nil {
		b.Fatal(err)
	}
	defer d.close()
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		data := TestBatch{ProducerID: -1, BaseSequence: -1, Codec: c, Records: recs}.Build()
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := d.decode(data, 9); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(recs)), "records/op")
		})
	}
}
