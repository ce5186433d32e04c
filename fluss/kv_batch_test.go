package fluss

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Header offsets from apache/fluss v0.9.1-incubating
// fluss-common/src/main/java/org/apache/fluss/record/DefaultKvRecordBatch.java.
func TestKvBatchHeaderOffsets(t *testing.T) {
	assert.Equal(t, []int{0, 4, 5, 9, 11, 12, 20, 24, 28},
		[]int{kvLengthOffset, kvMagicOffset, kvCRCOffset, kvSchemaIDOffset, kvAttributesOffset,
			kvWriterIDOffset, kvBatchSequenceOffset, kvRecordCountOffset, kvHeaderSize})
}

// Vectors for key 01 / value (1, "a") in table (id INT NOT NULL PK, name
// STRING), schema id 1 (the Fluss batch layout; row bytes checked against Java
// in java_golden_test.go).
func TestKvBatchVectors(t *testing.T) {
	b, err := NewKvBatchBuilder(idNameSchema, 1, KvFormatCompacted)
	require.NoError(t, err)
	require.NoError(t, b.Upsert([]byte{1}, Row{IntDatum(1), StringDatum("a")}))
	got, err := b.AppendTo(nil)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, `22000000 00 d23b5c7e 0100 00 ffffffffffffffff ffffffff 01000000 06000000010100010161`), got)
	assert.Equal(t, len(got), b.EstimatedSize())

	require.NoError(t, b.Delete([]byte{1}))
	got, err = b.AppendTo(nil)
	require.NoError(t, err)
	SetKvBatchWriter(got, 7, 0)
	assert.Equal(t, unhex(t, `28000000 00 226e12e2 0100 00 0700000000000000 00000000 02000000
		06000000010100010161 020000000101`), got)
}

func TestKvBatchRoundTrip(t *testing.T) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(11, 12))
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		t.Run(string(format), func(t *testing.T) {
			b, err := NewKvBatchBuilder(s, 5, format)
			require.NoError(t, err)
			type rec struct {
				key []byte
				row Row
			}
			var want []rec
			for i := 0; i < 200; i++ {
				key := []byte{byte(i), byte(i >> 8), 0xff}
				if i%4 == 3 {
					require.NoError(t, b.Delete(key))
					want = append(want, rec{key: key})
					continue
				}
				row := randomRow(r, s, 20)
				require.NoError(t, b.Upsert(key, row))
				want = append(want, rec{key, row})
			}
			require.Error(t, b.Upsert(nil, want[0].row))
			require.Error(t, b.Delete(nil))
			require.Error(t, b.Upsert([]byte{1}, Row{}))
			require.Equal(t, len(want), b.Len())

			batch, err := b.AppendTo([]byte{0xEE})
			require.NoError(t, err)
			batch = batch[1:]
			SetKvBatchWriter(batch, 99, 3)
			assert.Equal(t, crc32.Checksum(batch[9:], crc32.MakeTable(crc32.Castagnoli)), leU32(batch, 5))
			dec, err := DecodeKvBatch(batch, s, format)
			require.NoError(t, err)
			assert.Equal(t, int16(5), dec.SchemaID)
			assert.Equal(t, int64(99), dec.WriterID)
			assert.Equal(t, int32(3), dec.BatchSequence)
			require.Len(t, dec.Records, len(want))
			for i, w := range want {
				assert.Equal(t, w.key, dec.Records[i].Key)
				if w.row == nil {
					assert.Nil(t, dec.Records[i].Row, "record %d is a delete", i)
				} else {
					requireRowEqual(t, w.row, dec.Records[i].Row)
				}
			}

			b.Reset()
			assert.Equal(t, 0, b.Len())
			assert.Equal(t, kvHeaderSize, b.EstimatedSize())
		})
	}
}

func TestDecodeKvBatchRejectsCorruption(t *testing.T) {
	b, err := NewKvBatchBuilder(idNameSchema, 1, KvFormatCompacted)
	require.NoError(t, err)
	require.NoError(t, b.Upsert([]byte{1}, Row{IntDatum(1), StringDatum("a")}))
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	bad := append([]byte(nil), batch...)
	bad[len(bad)-1] ^= 1
	_, err = DecodeKvBatch(bad, idNameSchema, KvFormatCompacted)
	require.ErrorIs(t, err, ErrCorruptBatch)
	for cut := 0; cut < len(batch); cut++ {
		_, err := DecodeKvBatch(batch[:cut], idNameSchema, KvFormatCompacted)
		require.Error(t, err)
	}
}

func FuzzDecodeKvBatch(f *testing.F) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(13, 14))
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		b, _ := NewKvBatchBuilder(s, 1, format)
		_ = b.Upsert([]byte{1, 2}, randomRow(r, s, 30))
		_ = b.Delete([]byte{3})
		seed, _ := b.AppendTo(nil)
		f.Add(seed, format == KvFormatIndexed)
	}
	f.Fuzz(func(t *testing.T, batch []byte, indexed bool) {
		format := KvFormatCompacted
		if indexed {
			format = KvFormatIndexed
		}
		SetKvBatchWriter(batch, 1, 1)          // get past the CRC check
		_, _ = DecodeKvBatch(batch, s, format) // must not panic
	})
}
