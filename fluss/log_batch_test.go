package fluss

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var idNameSchema = &Schema{Columns: []Column{{Name: "id", Type: Int().NonNull()}, {Name: "name", Type: String()}}}

// Header offsets from apache/fluss v0.9.1-incubating
// fluss-common/src/test/java/org/apache/fluss/record/LogRecordBatchFormatTest.java (V0).
func TestLogBatchV0HeaderOffsets(t *testing.T) {
	assert.Equal(t, 21, logCRCOffset)
	assert.Equal(t, 25, logSchemaIDOffset)
	assert.Equal(t, 27, logAttributesOffset)
	assert.Equal(t, 28, logLastOffsetDeltaOffset)
	assert.Equal(t, 32, logWriterIDOffset)
	assert.Equal(t, 40, logBatchSequenceOffset)
	assert.Equal(t, 44, logRecordCountOffset)
	assert.Equal(t, 48, logV0HeaderSize)
}

// Whole-batch vectors for (1, "a") with schema id 1 (the Fluss batch layout;
// the row layouts are checked against the Java writers in
// java_golden_test.go).
func TestRowLogBatchVectors(t *testing.T) {
	ib, err := NewIndexedLogBuilder(idNameSchema, 1)
	require.NoError(t, err)
	require.NoError(t, ib.Append(Row{IntDatum(1), StringDatum("a")}))
	got, err := ib.AppendTo(nil)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, `0000000000000000 33000000 00 0000000000000000 907788a7 0100 01 00000000
		ffffffffffffffff ffffffff 01000000 0b000000 00 00010000000100000061`), got)
	assert.Equal(t, len(got), ib.EstimatedSize())

	cb, err := NewCompactedLogBuilder(idNameSchema, 1)
	require.NoError(t, err)
	require.NoError(t, cb.Append(Row{IntDatum(1), StringDatum("a")}))
	got, err = cb.AppendTo(nil)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, `0000000000000000 2d000000 00 0000000000000000 1912186b 0100 01 00000000
		ffffffffffffffff ffffffff 01000000 05000000 00 00010161`), got)
}

func TestSetLogBatchWriterPatchesOnlyWriterFieldsAndCRC(t *testing.T) {
	b, err := NewIndexedLogBuilder(idNameSchema, 3)
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		require.NoError(t, b.Append(Row{IntDatum(int64(i)), StringDatum("x")}))
	}
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	orig := append([]byte(nil), batch...)

	SetLogBatchWriter(batch, 42, 7)
	id, seq, ok := LogBatchWriter(batch)
	require.True(t, ok)
	assert.Equal(t, int64(42), id)
	assert.Equal(t, int32(7), seq)
	assert.Equal(t, crc32.Checksum(batch[25:], crc32.MakeTable(crc32.Castagnoli)), leU32(batch, 21))
	assert.NotEqual(t, leU32(orig, 21), leU32(batch, 21))
	assert.Equal(t, orig[:21], batch[:21])
	assert.Equal(t, orig[25:32], batch[25:32])
	assert.Equal(t, orig[44:], batch[44:])

	SetLogBatchWriter(batch, NoWriterID, NoBatchSequence)
	assert.Equal(t, orig, batch)
	SetLogBatchWriter(batch[:10], 1, 1) // too short: untouched, no panic
}

func TestRowLogBuilderRoundTripAndReset(t *testing.T) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(7, 8))
	for _, format := range []LogFormat{LogFormatIndexed, LogFormatCompacted} {
		t.Run(string(format), func(t *testing.T) {
			var b interface {
				Append(Row) error
				AppendTo([]byte) ([]byte, error)
				Len() int
				EstimatedSize() int
				Reset()
			}
			if format == LogFormatIndexed {
				ib, err := NewIndexedLogBuilder(s, 2)
				require.NoError(t, err)
				b = ib
			} else {
				cb, err := NewCompactedLogBuilder(s, 2)
				require.NoError(t, err)
				b = cb
			}
			var all []byte
			var want []Row
			for batch := 0; batch < 3; batch++ {
				b.Reset()
				n := 1 + r.IntN(50)
				for i := 0; i < n; i++ {
					row := randomRow(r, s, 15)
					require.NoError(t, b.Append(row))
					want = append(want, row)
				}
				require.Equal(t, n, b.Len())
				before := len(all)
				var err error
				all, err = b.AppendTo(all)
				require.NoError(t, err)
				require.Equal(t, b.EstimatedSize(), len(all)-before)
			}
			recs, err := DecodeLogBatchesFormat(all, s, format)
			require.NoError(t, err)
			got := make([]Row, len(recs))
			for i, rec := range recs {
				got[i] = rec.Row
				assert.Equal(t, ChangeAppendOnly, rec.ChangeType)
			}
			requireRowsEqual(t, want, got)
			if format == LogFormatIndexed {
				auto, err := DecodeLogBatches(all, s)
				require.NoError(t, err)
				require.Len(t, auto, len(recs))
			}
		})
	}
}

func TestRowLogBuilderAppendErrorLeavesBatchUnchanged(t *testing.T) {
	b, err := NewIndexedLogBuilder(idNameSchema, 1)
	require.NoError(t, err)
	require.NoError(t, b.Append(Row{IntDatum(1), StringDatum("a")}))
	size := b.EstimatedSize()
	require.Error(t, b.Append(Row{NullDatum(), StringDatum("b")}))
	require.Error(t, b.Append(Row{IntDatum(1)}))
	assert.Equal(t, size, b.EstimatedSize())
	assert.Equal(t, 1, b.Len())
}

func TestDecodeLogBatchesChecksStructure(t *testing.T) {
	b, err := NewIndexedLogBuilder(idNameSchema, 1)
	require.NoError(t, err)
	require.NoError(t, b.Append(Row{IntDatum(1), StringDatum("a")}))
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)

	// trailing partial batch is ignored
	recs, err := DecodeLogBatches(append(append([]byte(nil), batch...), batch[:30]...), idNameSchema)
	require.NoError(t, err)
	require.Len(t, recs, 1)

	bad := append([]byte(nil), batch...)
	bad[len(bad)-1] ^= 0xff
	_, err = DecodeLogBatches(bad, idNameSchema)
	require.ErrorIs(t, err, ErrCorruptBatch)

	// every truncation of the records, with a valid CRC, is an error, not a panic
	for cut := logV0HeaderSize; cut < len(batch); cut++ {
		tr := append([]byte(nil), batch[:cut]...)
		lePutU32(tr, logLengthOffset, uint32(cut-logOverhead))
		SetLogBatchWriter(tr, NoWriterID, NoBatchSequence)
		_, err := DecodeLogBatches(tr, idNameSchema)
		require.Error(t, err, "cut %d", cut)
	}
}

func FuzzDecodeLogBatches(f *testing.F) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(9, 10))
	ib, _ := NewIndexedLogBuilder(s, 1)
	ab, _ := NewArrowLogBuilder(s, 1, ArrowCompressionZstd, 3)
	for i := 0; i < 3; i++ {
		row := randomRow(r, s, 30)
		_ = ib.Append(row)
		_ = ab.Append(row)
	}
	seed, _ := ib.AppendTo(nil)
	f.Add(seed)
	seed, _ = ab.AppendTo(nil)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= logV0HeaderSize {
			SetLogBatchWriter(b, NoWriterID, NoBatchSequence) // get past the CRC check
		}
		_, _ = DecodeLogBatches(b, s) // must not panic
	})
}

// An empty batch is the header alone: no records, one offset, the writer's
// stamp, a valid CRC; the decoders take it and give no rows.
func TestEmptyLogBatch(t *testing.T) {
	data := AppendEmptyLogBatch(nil, 3, 77, 9)
	data = AppendEmptyLogBatch(data, 3, 77, 10)
	batches, err := LogBatches(data)
	require.NoError(t, err)
	require.Len(t, batches, 2)
	for i, b := range batches {
		assert.Len(t, b, logV0HeaderSize)
		h, err := ReadLogBatchHeader(b)
		require.NoError(t, err)
		assert.Equal(t, LogBatchHeader{Records: 0, WriterID: 77, Sequence: int32(9 + i)}, h)
		assert.Equal(t, int64(1), h.NextOffset(), "an empty batch takes one offset")
		assert.Equal(t, byte(logAppendOnlyFlag), b[logAttributesOffset])
		assert.Equal(t, uint16(3), leU16(b, logSchemaIDOffset))
	}
	schema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}}}
	recs, err := DecodeLogBatches(data, &schema)
	require.NoError(t, err, "the CRC holds")
	assert.Empty(t, recs)

	data[logWriterIDOffset]++ // a changed header fails its CRC
	_, err = DecodeLogBatches(data, &schema)
	assert.Error(t, err)
	_, err = ReadLogBatchHeader(data[:20])
	assert.Error(t, err)
}
