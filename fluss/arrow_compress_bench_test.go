package fluss

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The compression benchmarks use the rows the gateway's routes produce: the
// JSON route's six columns (BIGINT id, BIGINT user_id, STRING event, DOUBLE
// amount, BOOLEAN ok, STRING payload) sized so the Kafka JSON value is about
// 100 B or 1 KB, and the raw route's single BYTES column of 1 KB values. The
// payload text is drawn from a word list with numbers, so the codecs find the
// redundancy of real event logs rather than of repeated bytes.

type compressWorkload struct {
	name   string
	schema *Schema
	rows   []Row
	values []byte // the Kafka values concatenated: the raw-codec baseline's input
}

var jsonRouteSchema = &Schema{Columns: []Column{
	{Name: "id", Type: BigInt().NonNull()},
	{Name: "user_id", Type: BigInt()},
	{Name: "event", Type: String()},
	{Name: "amount", Type: Double()},
	{Name: "ok", Type: Boolean()},
	{Name: "payload", Type: String()},
}}

var rawRouteSchema = &Schema{Columns: []Column{{Name: "payload", Type: Bytes()}}}

// eventFields are record k's fields, and its JSON value of about valueLen bytes.
func eventFields(r *rand.Rand, words []string, k, valueLen int) (user int64, event string, amount float64, ok bool, payload, value []byte) {
	events := [...]string{"page_view", "add_to_cart", "checkout", "search", "login"}
	user = int64(r.IntN(1_000_000))
	event = events[r.IntN(len(events))]
	amount = float64(r.IntN(1_000_000)) / 100
	ok = r.IntN(2) == 1
	value = append(value, `{"id":`...)
	value = strconv.AppendInt(value, int64(k), 10)
	value = append(value, `,"user_id":`...)
	value = strconv.AppendInt(value, user, 10)
	value = append(value, `,"event":"`...)
	value = append(value, event...)
	value = append(value, `","amount":`...)
	value = strconv.AppendFloat(value, amount, 'f', 2, 64)
	value = append(value, `,"ok":`...)
	value = strconv.AppendBool(value, ok)
	value = append(value, `,"payload":"`...)
	want := max(valueLen-len(value)-2, 8)
	for len(payload) < want {
		if len(payload) > 0 {
			payload = append(payload, ' ')
		}
		payload = append(payload, words[r.IntN(len(words))]...)
		if r.IntN(4) == 0 {
			payload = strconv.AppendInt(payload, int64(r.IntN(100000)), 10)
		}
	}
	payload = payload[:want]
	value = append(append(value, payload...), `"}`...)
	return
}

// newCompressWorkload makes n rows for route "json" or "raw" with Kafka values of about valueLen bytes.
func newCompressWorkload(route string, valueLen, n int) compressWorkload {
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " +
		"november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu " +
		"checkout cart search login logout view click scroll purchase refund mobile desktop tablet")
	r := rand.New(rand.NewPCG(7, uint64(valueLen)))
	w := compressWorkload{name: route + strconv.Itoa(valueLen), schema: jsonRouteSchema}
	if route == "raw" {
		w.schema = rawRouteSchema
	}
	for k := range n {
		user, event, amount, ok, payload, value := eventFields(r, words, 1_000_000+k, valueLen)
		w.values = append(w.values, value...)
		if route == "raw" {
			w.rows = append(w.rows, Row{BytesDatum(value)})
			continue
		}
		row := Row{IntDatum(int64(1_000_000 + k)), IntDatum(user), StringDatum(event), FloatDatum(amount), BoolDatum(ok), BytesDatum(payload)}
		if k%16 == 0 {
			row[1] = NullDatum() // some nulls, so validity bitmaps are not all ones
		}
		w.rows = append(w.rows, row)
	}
	return w
}

// compressWorkloads are batches of about 256 KiB of Kafka values, the size a
// busy bucket's batch reaches between two Fluss round trips.
func compressWorkloads() []compressWorkload {
	return []compressWorkload{
		newCompressWorkload("json", 100, 2500),
		newCompressWorkload("json", 1000, 256),
		newCompressWorkload("raw", 1000, 256),
	}
}

// fullBatchWorkloads are batches as large as the writer lets them grow under
// saturation: about 2 MiB once ZSTD-compressed (writer.batch_size), several
// MiB of column data.
func fullBatchWorkloads() []compressWorkload {
	ws := []compressWorkload{
		newCompressWorkload("json", 100, 90_000),
		newCompressWorkload("json", 1000, 6500),
		newCompressWorkload("raw", 1000, 6500),
	}
	for i := range ws {
		ws[i].name += "-full"
	}
	return ws
}

// smallBatchWorkloads are batches as many tables make them: with 500
// tables of 4 buckets a bucket's batch held about 30 records, or a few.
func smallBatchWorkloads() []compressWorkload {
	ws := []compressWorkload{
		newCompressWorkload("json", 100, 30),
		newCompressWorkload("json", 100, 4),
	}
	for i := range ws {
		ws[i].name += "-" + strconv.Itoa(len(ws[i].rows)) + "rows"
	}
	return ws
}

// buildOnce appends the workload's rows to bb and builds the batch into out.
func buildOnce(tb testing.TB, bb *ArrowLogBuilder, rows []Row, out []byte) []byte {
	bb.Reset()
	for _, r := range rows {
		if err := bb.Append(r); err != nil {
			tb.Fatal(err)
		}
	}
	out, err := bb.AppendTo(out[:0])
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// newBenchBuilder returns a builder with its own table compressor for
// codec; previous gives ZSTD the encoder settings used before this file's
// (one zstd.Encoder of concurrency min(GOMAXPROCS, 4) taking turns per
// buffer, 1 MiB window, low-memory history, frame checksum).
func newBenchBuilder(tb testing.TB, s *Schema, codec ArrowCompression, previous bool) *ArrowLogBuilder {
	comp, err := NewArrowCompressor(codec, 3)
	if err != nil {
		tb.Fatal(err)
	}
	if previous {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)),
			zstd.WithEncoderConcurrency(min(runtime.GOMAXPROCS(0), 4)), zstd.WithLowerEncoderMem(true),
			zstd.WithWindowSize(1<<20))
		if err != nil {
			tb.Fatal(err)
		}
		mk := func() (*zstd.Encoder, error) { return enc, nil }
		comp.zstd = &zstdEncoders{
			full:  zstdPool{make: mk, slots: make(chan struct{}, 64)},
			small: zstdPool{make: mk, slots: make(chan struct{}, 64)}, // the previous settings for every buffer
		}
	}
	bb, err := NewArrowLogBuilder(s, 1, codec, 3, WithArrowCompressor(comp))
	if err != nil {
		tb.Fatal(err)
	}
	return bb
}

// BenchmarkArrowCompression builds batches of each workload with each codec
// (one compressor per table, as gateway/tables.go shares it), one batch
// after the other as a busy table's sender does, and reports wall and
// thread-CPU time per row, allocations and the batch size against the
// uncompressed batch. ZSTD-previous is ZSTD with the previous settings
// (newBenchBuilder).
func BenchmarkArrowCompression(b *testing.B) {
	for _, w := range slices.Concat(compressWorkloads(), fullBatchWorkloads(), smallBatchWorkloads()) {
		for _, variant := range []string{"NONE", "LZ4_FRAME", "ZSTD", "ZSTD-previous"} {
			b.Run(w.name+"/"+variant, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				codec, _, previous := strings.Cut(variant, "-")
				bb := newBenchBuilder(b, w.schema, ArrowCompression(codec), previous)
				out := make([]byte, 0, 2*len(w.values)+4096)
				out = buildOnce(b, bb, w.rows, out) // warm the buffers, as a table's builders are
				raw := bb.RawSize()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := threadCPU()
				for b.Loop() {
					out = buildOnce(b, bb, w.rows, out)
				}
				rows := float64(b.N * len(w.rows))
				b.ReportMetric(float64(threadCPU()-cpu0)/rows, "cpu-ns/row")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
				b.ReportMetric(float64(len(out))/float64(raw), "size/raw")
			})
		}
	}
}

// BenchmarkArrowCompressionCost puts the cost of compressing a batch in
// ratios measured in one process, so that it depends little on how busy the
// shared machine is: each iteration does every variant once, timed in CPU
// time of the benchmark's locked OS thread (threadCPU). Variants: the batch
// built with the codec; built with NONE; the concatenated Kafka values
// compressed in one call of the same library (zstd EncodeAll at the same
// level with the library's default window, one encoder; LZ4 one
// CompressBlock per 64 KiB); for ZSTD also the batch built with the
// encoder settings used before (newBenchBuilder). Reported:
//
//	codec/none     build CPU with the codec ÷ build CPU without
//	share          (codec - none) ÷ codec: the part of the build that is compression
//	cost/oneshot   (codec - none) ÷ the one-shot compression of the values
//	cost/previous  (codec - none) ÷ (previous - none), ZSTD only
//	ratio          batch bytes ÷ NONE batch bytes (previous-ratio: with the previous settings)
//	oneshot-ratio  one-shot output ÷ the values (Kafka values, JSON syntax included)
//
// With -arrow-values-dir DIR it also writes each workload's values there
// (DIR/NAME.values), to time libzstd, what Fluss's Java client compresses
// with, on the same bytes: zstd -b1 -e3 --single-thread DIR/*.values.
func BenchmarkArrowCompressionCost(b *testing.B) {
	for _, w := range slices.Concat(compressWorkloads(), fullBatchWorkloads(), smallBatchWorkloads()) {
		if *valuesDir != "" {
			if err := os.WriteFile(filepath.Join(*valuesDir, w.name+".values"), w.values, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, codec := range []ArrowCompression{ArrowCompressionLZ4, ArrowCompressionZstd} {
			b.Run(w.name+"/"+string(codec), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				newBuilder := func(codec ArrowCompression, previous bool) *ArrowLogBuilder {
					return newBenchBuilder(b, w.schema, codec, previous)
				}
				builders := []*ArrowLogBuilder{newBuilder(codec, false), newBuilder(ArrowCompressionNone, false)}
				if codec == ArrowCompressionZstd {
					builders = append(builders, newBuilder(codec, true))
				}
				oneShot, err := newOneShot(codec)
				if err != nil {
					b.Fatal(err)
				}
				outs := make([][]byte, len(builders)+1)
				for i := range outs {
					outs[i] = make([]byte, 0, 2*len(w.values)+4096)
				}
				run := func(i int) {
					if i == len(builders) {
						outs[i] = oneShot(outs[i][:0], w.values)
						return
					}
					outs[i] = buildOnce(b, builders[i], w.rows, outs[i])
				}
				cpu := make([]time.Duration, len(outs))
				for i := range outs {
					run(i) // warm up
				}
				b.ResetTimer()
				for b.Loop() {
					for i := range outs {
						t0 := threadCPU()
						run(i)
						cpu[i] += threadCPU() - t0
					}
				}
				tCodec, tNone, tShot := float64(cpu[0]), float64(cpu[1]), float64(cpu[len(builders)])
				rows := float64(b.N * len(w.rows))
				b.ReportMetric(tCodec/rows, "codec-cpu-ns/row")
				b.ReportMetric(tNone/rows, "none-cpu-ns/row")
				b.ReportMetric(tShot/rows, "oneshot-cpu-ns/row")
				b.ReportMetric(tCodec/tNone, "codec/none")
				b.ReportMetric((tCodec-tNone)/tCodec, "share")
				b.ReportMetric((tCodec-tNone)/tShot, "cost/oneshot")
				b.ReportMetric(float64(len(outs[0]))/float64(len(outs[1])), "ratio")
				b.ReportMetric(float64(len(outs[len(builders)]))/float64(len(w.values)), "oneshot-ratio")
				if codec == ArrowCompressionZstd {
					b.ReportMetric(float64(cpu[2])/rows, "previous-cpu-ns/row")
					b.ReportMetric((tCodec-tNone)/(float64(cpu[2])-tNone), "cost/previous")
					b.ReportMetric(float64(len(outs[2]))/float64(len(outs[1])), "previous-ratio")
				}
			})
		}
	}
}

var valuesDir = flag.String("arrow-values-dir", "", "BenchmarkArrowCompressionCost: write each workload's values into this directory")

// newOneShot returns the baseline compressor of codec: the whole input in
// one call, the library's own fast path, output discarded by the caller.
func newOneShot(codec ArrowCompression) (func(dst, src []byte) []byte, error) {
	if codec == ArrowCompressionZstd {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) []byte { return enc.EncodeAll(src, dst) }, nil
	}
	var c lz4.Compressor
	return func(dst, src []byte) []byte {
		for len(src) > 0 {
			n := min(len(src), 64<<10)
			start := len(dst)
			bound := lz4.CompressBlockBound(n)
			dst = slices.Grow(dst, bound)[:start+bound]
			k, _ := c.CompressBlock(src[:n], dst[start:])
			dst = dst[:start+k]
			src = src[n:]
		}
		return dst
	}, nil
}
