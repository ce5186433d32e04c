package fluss

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var arrowCodecs = []ArrowCompression{ArrowCompressionNone, ArrowCompressionLZ4, ArrowCompressionZstd}

// buildArrowBatches writes nBatches batches of random rows and returns the
// concatenated bytes and the rows.
func buildArrowBatches(t *testing.T, s *Schema, codec ArrowCompression, nBatches, maxRows, nullPct int, seed uint64) ([]byte, []Row, [][]byte) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+1))
	b, err := NewArrowLogBuilder(s, 4, codec, 3)
	require.NoError(t, err)
	var all []byte
	var rows []Row
	var batches [][]byte
	for i := 0; i < nBatches; i++ {
		b.Reset()
		n := 1 + r.IntN(maxRows)
		for j := 0; j < n; j++ {
			row := randomRow(r, s, nullPct)
			require.NoError(t, b.Append(row))
			rows = append(rows, row)
		}
		require.Equal(t, n, b.Len())
		before := len(all)
		all, err = b.AppendTo(all)
		require.NoError(t, err)
		batches = append(batches, all[before:])
	}
	return all, rows, batches
}

func TestArrowLogBuilderRoundTripEveryTypeAndCodec(t *testing.T) {
	s := allTypesSchema()
	for _, codec := range arrowCodecs {
		t.Run(string(codec), func(t *testing.T) {
			for _, nullPct := range []int{0, 25, 100} {
				all, rows, _ := buildArrowBatches(t, s, codec, 4, 300, nullPct, uint64(nullPct))
				recs, err := DecodeLogBatches(all, s)
				require.NoError(t, err)
				got := make([]Row, len(recs))
				for i, rec := range recs {
					got[i] = rec.Row
					assert.Equal(t, ChangeAppendOnly, rec.ChangeType)
				}
				requireRowsEqual(t, rows, got)
				explicit, err := DecodeLogBatchesFormat(all, s, LogFormatArrow)
				require.NoError(t, err)
				require.Len(t, explicit, len(recs))
			}
		})
	}
}

func TestArrowBatchHeaderAndFraming(t *testing.T) {
	s := allTypesSchema()
	for _, codec := range arrowCodecs {
		_, _, batches := buildArrowBatches(t, s, codec, 1, 10, 10, 1)
		b := batches[0]
		assert.Equal(t, uint32(len(b)-12), leU32(b, logLengthOffset))
		assert.Equal(t, byte(0), b[logMagicOffset])
		assert.Equal(t, byte(1), b[logAttributesOffset], "append-only")
		count := int32(leU32(b, logRecordCountOffset))
		assert.Equal(t, count-1, int32(leU32(b, logLastOffsetDeltaOffset)))
		assert.Equal(t, int16(4), int16(leU16(b, logSchemaIDOffset)))
		id, seq, _ := LogBatchWriter(b)
		assert.Equal(t, NoWriterID, id)
		assert.Equal(t, NoBatchSequence, seq)

		arrowPart := b[logV0HeaderSize:]
		assert.Equal(t, uint32(0xffffffff), leU32(arrowPart, 0), "continuation marker")
		m := int(leU32(arrowPart, 4))
		assert.Zero(t, (8+m)%8, "metadata padded to 8")
		msg, err := parseArrowMessage(arrowPart)
		require.NoError(t, err)
		assert.Equal(t, len(arrowPart), msg.metaSize+len(msg.body), "nothing after the body")
		assert.Zero(t, len(msg.body)%8, "body length multiple of 8")
		nbufs := 0
		var validity []int
		for _, c := range s.Columns {
			validity = append(validity, nbufs)
			nbufs += 2
			if c.Type.Root == TypeString || c.Type.Root == TypeChar || c.Type.Root == TypeBytes {
				nbufs++
			}
		}
		require.Len(t, msg.spans, nbufs)
		require.Len(t, msg.nodes, len(s.Columns))
		for i, sp := range msg.spans {
			assert.Zero(t, sp.offset%8, "buffer %d aligned", i)
		}
		for _, i := range validity {
			// Java always writes the validity bitmap; so do we
			assert.NotZero(t, msg.spans[i].length, "validity buffer %d", i)
		}
		switch codec {
		case ArrowCompressionNone:
			assert.Equal(t, -1, msg.codec)
		case ArrowCompressionLZ4:
			assert.Equal(t, fbCompressionLZ4, msg.codec)
			// first compressed buffer: int64 length, then an LZ4 frame with
			// FLG version 1 + independent blocks, no checksums, BD 64 KiB.
			buf := msg.body[msg.spans[0].offset:]
			if int64(leU64(buf, 0)) != -1 {
				assert.Equal(t, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40}, buf[8:14])
			}
		case ArrowCompressionZstd:
			assert.Equal(t, fbCompressionZSTD, msg.codec)
		}
	}
}

func TestArrowEstimatedSize(t *testing.T) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(21, 22))
	for _, codec := range arrowCodecs {
		b, err := NewArrowLogBuilder(s, 1, codec, 3)
		require.NoError(t, err)
		assert.Equal(t, logV0HeaderSize, b.EstimatedSize())
		for round := 0; round < 3; round++ {
			b.Reset()
			for i := 0; i < 500; i++ {
				require.NoError(t, b.Append(randomRow(r, s, 10)))
			}
			est := b.EstimatedSize()
			out, err := b.AppendTo(nil)
			require.NoError(t, err)
			if codec == ArrowCompressionNone {
				assert.Equal(t, len(out), est, "uncompressed estimate is exact")
			} else {
				// never below the real size by more than a few percent; the
				// ratio estimate starts at 1 and then tracks the real ratio
				assert.GreaterOrEqual(t, float64(est), 0.9*float64(len(out)), "round %d", round)
				if round > 0 {
					assert.LessOrEqual(t, float64(est), 1.3*float64(len(out)), "round %d", round)
				}
			}
		}
	}
}

func TestArrowRawSize(t *testing.T) {
	s := &Schema{Columns: []Column{{Name: "a", Type: BigInt()}, {Name: "b", Type: String()}}}
	row := Row{IntDatum(7), StringDatum(strings.Repeat("x", 200))}
	for _, codec := range arrowCodecs {
		b, err := NewArrowLogBuilder(s, 1, codec, 3)
		require.NoError(t, err)
		for i := 0; i < 1000; i++ {
			require.NoError(t, b.Append(row))
		}
		out, err := b.AppendTo(nil)
		require.NoError(t, err)
		raw := b.RawSize()
		assert.Greater(t, raw, 1000*208, "raw size counts every value byte")
		if codec == ArrowCompressionNone {
			assert.Equal(t, len(out), raw, "uncompressed raw size is the batch size")
		} else {
			assert.Greater(t, raw, 10*len(out), "repetitive data compresses far below its raw size")
		}
	}
}

func TestArrowAppendErrorsLeaveBuilderUnchanged(t *testing.T) {
	s := &Schema{Columns: []Column{{Name: "a", Type: Int().NonNull()}, {Name: "b", Type: Binary(2)}, {Name: "c", Type: Decimal(38, 0)}}}
	b, err := NewArrowLogBuilder(s, 1, ArrowCompressionNone, 0)
	require.NoError(t, err)
	good := Row{IntDatum(1), BytesDatum([]byte{1, 2}), BytesDatum([]byte{5})}
	require.NoError(t, b.Append(good))
	size := b.EstimatedSize()
	require.Error(t, b.Append(Row{NullDatum(), NullDatum(), NullDatum()}))
	require.Error(t, b.Append(Row{IntDatum(1), BytesDatum([]byte{1, 2, 3}), NullDatum()}))
	require.Error(t, b.Append(Row{IntDatum(1), NullDatum(), BytesDatum(append([]byte{1}, make([]byte, 16)...))}))
	require.Error(t, b.Append(Row{IntDatum(1)}))
	assert.Equal(t, size, b.EstimatedSize())
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	recs, err := DecodeLogBatches(out, s)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	requireRowEqual(t, good, recs[0].Row)
}

func TestArrowBuilderRejectsBadConfig(t *testing.T) {
	_, err := NewArrowLogBuilder(idNameSchema, 1, "SNAPPY", 0)
	require.Error(t, err)
	_, err = NewArrowLogBuilder(idNameSchema, 1<<16, ArrowCompressionNone, 0)
	require.Error(t, err)
	_, err = NewArrowLogBuilder(&Schema{Columns: []Column{{Name: "m", Type: DataType{Root: TypeMap}}}}, 1, ArrowCompressionNone, 0)
	require.ErrorContains(t, err, "MAP without key or value type")
	shared, err := NewArrowCompressor(ArrowCompressionLZ4, 0)
	require.NoError(t, err)
	_, err = NewArrowLogBuilder(idNameSchema, 1, ArrowCompressionZstd, 0, WithArrowCompressor(shared))
	require.Error(t, err)
	b, err := NewArrowLogBuilder(idNameSchema, 1, ArrowCompressionLZ4, 0, WithArrowCompressor(shared))
	require.NoError(t, err)
	empty, err := b.AppendTo(nil)
	require.NoError(t, err)
	assert.Len(t, empty, logV0HeaderSize, "an empty batch is a bare header")
	recs, err := DecodeLogBatches(empty, idNameSchema)
	require.NoError(t, err)
	assert.Empty(t, recs)
}

// TestArrowReadByArrowGoIPCReader reads our batches with arrow-go's own IPC
// reader (schema message from ArrowSchema + our RecordBatch message + EOS)
// and compares every value with what was appended.
func TestArrowReadByArrowGoIPCReader(t *testing.T) {
	s := allTypesSchema()
	as, err := ArrowSchema(s)
	require.NoError(t, err)
	for _, codec := range arrowCodecs {
		t.Run(string(codec), func(t *testing.T) {
			_, rows, batches := buildArrowBatches(t, s, codec, 3, 200, 20, 77)
			var stream bytes.Buffer
			p := ipc.GetSchemaPayload(as, memory.DefaultAllocator)
			_, err := p.WritePayload(&stream)
			require.NoError(t, err)
			for _, b := range batches {
				stream.Write(b[logV0HeaderSize:])
			}
			stream.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
			rd, err := ipc.NewReader(&stream)
			require.NoError(t, err)
			defer rd.Release()
			var got []Row
			for rd.Next() {
				got = append(got, rowsFromArrowRecord(t, s, rd.RecordBatch())...)
			}
			require.NoError(t, rd.Err())
			requireRowsEqual(t, rows, got)
		})
	}
}

// rowsFromArrowRecord converts an arrow-go record back to Datums with the
// Fluss unit conventions (independently of arrow_decode.go).
func rowsFromArrowRecord(t *testing.T, s *Schema, rec arrow.RecordBatch) []Row {
	out := make([]Row, rec.NumRows())
	for i := range out {
		out[i] = make(Row, len(s.Columns))
	}
	for c, col := range rec.Columns() {
		for r := 0; r < col.Len(); r++ {
			out[r][c] = arrowGoDatum(t, &s.Columns[c].Type, col, r)
		}
	}
	return out
}

// arrowGoDatum converts value r of an arrow-go array of Fluss type ft.
func arrowGoDatum(t *testing.T, ft *DataType, col arrow.Array, r int) Datum {
	if col.IsNull(r) {
		return NullDatum()
	}
	var d Datum
	switch a := col.(type) {
	case *array.Boolean:
		d = BoolDatum(a.Value(r))
	case *array.Int8:
		d = IntDatum(int64(a.Value(r)))
	case *array.Int16:
		d = IntDatum(int64(a.Value(r)))
	case *array.Int32:
		d = IntDatum(int64(a.Value(r)))
	case *array.Int64:
		d = IntDatum(a.Value(r))
	case *array.Float32:
		d = FloatDatum(float64(a.Value(r)))
	case *array.Float64:
		d = FloatDatum(a.Value(r))
	case *array.String:
		d = StringDatum(a.Value(r))
	case *array.Binary:
		d = BytesDatum(a.Value(r))
	case *array.FixedSizeBinary:
		d = BytesDatum(a.Value(r))
	case *array.Date32:
		d = IntDatum(int64(a.Value(r)))
	case *array.Decimal128:
		v := a.Value(r)
		if ft.Precision <= 18 {
			d = IntDatum(int64(v.LowBits()))
		} else {
			d = BytesDatum(bigToTwos(decimal128ToBig(v)))
		}
	case *array.Time32:
		v := int64(a.Value(r))
		if a.DataType().(*arrow.Time32Type).Unit == arrow.Second {
			v *= 1000
		}
		d = IntDatum(v)
	case *array.Time64:
		v := int64(a.Value(r))
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Microsecond {
			d = IntDatum(v / 1000)
		} else {
			d = IntDatum(v / 1_000_000)
		}
	case *array.Timestamp:
		v := int64(a.Value(r))
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			d = TimestampDatum(v*1000, 0)
		case arrow.Millisecond:
			d = TimestampDatum(v, 0)
		case arrow.Microsecond:
			ms, rem := floorDivMod(v, 1000)
			d = TimestampDatum(ms, int32(rem*1000))
		default:
			ms, rem := floorDivMod(v, 1_000_000)
			d = TimestampDatum(ms, int32(rem))
		}
	case *array.Map:
		lo, hi := a.ValueOffsets(r)
		keys, items := a.Keys(), a.Items()
		var ks, vs []Datum
		for i := int(lo); i < int(hi); i++ {
			ks = append(ks, arrowGoDatum(t, ft.Key, keys, i))
			vs = append(vs, arrowGoDatum(t, ft.Value, items, i))
		}
		d = MapDatum(ks, vs)
	case *array.List:
		lo, hi := a.ValueOffsets(r)
		var es []Datum
		for i := int(lo); i < int(hi); i++ {
			es = append(es, arrowGoDatum(t, ft.Elem, a.ListValues(), i))
		}
		d = ArrayDatum(es...)
	case *array.Struct:
		fs := make([]Datum, a.NumField())
		for i := range fs {
			fs[i] = arrowGoDatum(t, &ft.Fields[i].Type, a.Field(i), r)
		}
		d = RowDatum(fs...)
	default:
		t.Fatalf("unexpected arrow array %T", col)
	}
	return d
}

func decimal128ToBig(v decimal128.Num) *big.Int {
	return v.BigInt()
}

// Pre-1970 timestamps with a sub-millisecond part: written as Java's
// writers do (millis*1000 + nanos/1000), read back with floor division.
func TestArrowNegativeSubMillisTimestamps(t *testing.T) {
	s := &Schema{Columns: []Column{{Name: "us", Type: Timestamp(6)}, {Name: "ns", Type: TimestampLTZ(9)}, {Name: "s", Type: Timestamp(0)}}}
	row := Row{TimestampDatum(-1, 999_000), TimestampDatum(-1_000_001, 1), TimestampDatum(-3000, 0)}
	b, err := NewArrowLogBuilder(s, 1, ArrowCompressionNone, 0)
	require.NoError(t, err)
	require.NoError(t, b.Append(row))
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	msg, err := parseArrowMessage(out[logV0HeaderSize:])
	require.NoError(t, err)
	us := msg.body[msg.spans[1].offset:]
	assert.Equal(t, int64(-1000+999), int64(leU64(us, 0)))
	ns := msg.body[msg.spans[3].offset:]
	assert.Equal(t, int64(-1_000_001*1_000_000+1), int64(leU64(ns, 0)))
	recs, err := DecodeLogBatches(out, s)
	require.NoError(t, err)
	requireRowEqual(t, row, recs[0].Row)
}

// One compressor shared by builders on several goroutines (one per table in
// the gateway): outputs stay correct and the ratio estimate is pooled.
func TestArrowSharedCompressorConcurrent(t *testing.T) {
	s := allTypesSchema()
	for _, codec := range []ArrowCompression{ArrowCompressionLZ4, ArrowCompressionZstd} {
		shared, err := NewArrowCompressor(codec, 3)
		require.NoError(t, err)
		type result struct {
			rows []Row
			out  []byte
			err  error
		}
		results := make(chan result, 4)
		for g := 0; g < 4; g++ {
			go func(seed uint64) {
				r := rand.New(rand.NewPCG(seed, 9))
				b, err := NewArrowLogBuilder(s, 1, codec, 3, WithArrowCompressor(shared))
				if err != nil {
					results <- result{err: err}
					return
				}
				var res result
				for batch := 0; batch < 3; batch++ {
					b.Reset()
					for i := 0; i < 100; i++ {
						row := randomRow(r, s, 20)
						if res.err = b.Append(row); res.err != nil {
							results <- res
							return
						}
						res.rows = append(res.rows, row)
					}
					if res.out, res.err = b.AppendTo(res.out); res.err != nil {
						break
					}
				}
				results <- res
			}(uint64(g))
		}
		for g := 0; g < 4; g++ {
			res := <-results
			require.NoError(t, res.err)
			recs, err := DecodeLogBatches(res.out, s)
			require.NoError(t, err)
			got := make([]Row, len(recs))
			for i := range recs {
				got[i] = recs[i].Row
			}
			requireRowsEqual(t, res.rows, got)
		}
		assert.Less(t, shared.estimatedRatio(), 1.0, "%s: ratio learned from the batches", codec)
	}
}
