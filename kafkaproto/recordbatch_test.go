package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTestDecoder(t *testing.T, maxDecompressed int) *batchDecoder {
	t.Helper()
	d, err := newBatchDecoder(maxDecompressed, nil)
	require.NoError(t, err)
	t.Cleanup(d.close)
	return d
}

func TestDecodeRecordBatchCodecs(t *testing.T) {
	t.Parallel()
	d := newTestDecoder(t, 1<<20)
	records := []Record{
		{Key: nil, Value: []byte("null key"), Timestamp: 5000},
		{Key: []byte{}, Value: []byte("empty key"), Timestamp: 5001},
		{Key: []byte("k"), Value: nil, Timestamp: 4999}, // tombstone, earlier timestamp
		{Key: []byte("h"), Value: []byte("headers"), Timestamp: 5002,
			Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "null", Value: nil}, {Key: "", Value: []byte{}}}},
	}
	for _, tc := range []struct {
		name   string
		codec  Codec
		xerial bool
	}{
		{"none", CodecNone, false},
		{"gzip", CodecGzip, false},
		{"snappy_raw", CodecSnappy, false},
		{"snappy_xerial", CodecSnappy, true},
		{"lz4", CodecLZ4, false},
		{"zstd", CodecZstd, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := TestBatch{ProducerID: 7, ProducerEpoch: 2, BaseSequence: 11, Codec: tc.codec, XerialSnappy: tc.xerial,
				BaseTimestamp: 5000, Records: records}.Build()
			b, err := d.decode(data, 9)
			require.NoError(t, err)
			assert.Equal(t, tc.codec, b.Codec)
			assert.Equal(t, int64(7), b.ProducerID)
			assert.Equal(t, int16(2), b.ProducerEpoch)
			assert.Equal(t, int32(11), b.BaseSequence)
			require.Len(t, b.Records, len(records))
			for i, want := range records {
				got := b.Records[i]
				assert.Equal(t, int32(i), got.Index)
				assert.Equal(t, int32(i), got.OffsetDelta)
				assert.Equal(t, want.Timestamp, got.Timestamp)
				assert.Equal(t, want.Key == nil, got.Key == nil, "record %d key nullness", i)
				assert.Equal(t, want.Value == nil, got.Value == nil, "record %d value nullness", i)
				assert.Equal(t, string(want.Key), string(got.Key))
				assert.Equal(t, string(want.Value), string(got.Value))
				require.Len(t, got.Headers, len(want.Headers))
				for j, h := range want.Headers {
					assert.Equal(t, h.Key, got.Headers[j].Key)
					assert.Equal(t, h.Value == nil, got.Headers[j].Value == nil)
					assert.Equal(t, string(h.Value), string(got.Headers[j].Value))
				}
			}
		})
	}
}

func TestDecodeRecordBatchRejects(t *testing.T) {
	t.Parallel()
	d := newTestDecoder(t, 64<<10)
	good := func() []byte { return TestBatch{ProducerID: -1, BaseSequence: -1, Records: SimpleRecords(3)}.Build() }
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32c(b[batchAttrOffset:]))
		return b
	}
	bomb := bytes.Repeat([]byte{0}, 1<<20)
	for _, tc := range []struct {
		name    string
		data    []byte
		version int16
		want    *Error
	}{
		{"bad crc", func() []byte { b := good(); b[len(b)-1] ^= 0xff; return b }(), 9, ErrCorruptMessage},
		{"truncated", good()[:70], 9, ErrCorruptMessage},
		{"short header", good()[:40], 9, ErrCorruptMessage},
		{"two batches", append(good(), good()...), 9, ErrInvalidRecord},
		{"negative length", func() []byte { b := good(); binary.BigEndian.PutUint32(b[8:], 0xfffffff0); return b }(), 9, ErrCorruptMessage},
		{"magic 1", func() []byte { b := good(); b[batchMagicOffset] = 1; return b }(), 9, ErrInvalidRecord},
		{"magic 0 short", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20, 1, 2, 3, 4, 0, 0, 0}, 9, ErrInvalidRecord},
		{"control", TestBatch{ProducerID: -1, Attributes: attrControl, Records: SimpleRecords(1)}.Build(), 9, ErrInvalidRecord},
		{"transactional without producer id", TestBatch{ProducerID: -1, Attributes: attrTransactional, Records: SimpleRecords(1)}.Build(), 9, ErrInvalidRecord},
		{"log append time", TestBatch{ProducerID: -1, Attributes: attrLogAppendTime, Records: SimpleRecords(1)}.Build(), 9, ErrInvalidTimestamp},
		{"codec 5", TestBatch{ProducerID: -1, Codec: 5, Records: SimpleRecords(1)}.Build(), 9, ErrInvalidRecord},
		{"zstd on v6", TestBatch{ProducerID: -1, Codec: CodecZstd, Records: SimpleRecords(1)}.Build(), 6, ErrUnsupportedCompressionType},
		{"idempotent negative sequence", TestBatch{ProducerID: 3, BaseSequence: -1, Records: SimpleRecords(1)}.Build(), 9, ErrInvalidRecord},
		{"record count mismatch", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[57:], 2)
			binary.BigEndian.PutUint32(b[23:], 1)
			return recrc(b)
		}(), 9, ErrInvalidRecord},
		{"huge record count", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[57:], 1<<30)
			binary.BigEndian.PutUint32(b[23:], 1<<30-1)
			return recrc(b)
		}(), 9, ErrInvalidRecord},
		{"garbage gzip", func() []byte {
			b := good()
			b[22] |= byte(CodecGzip)
			return recrc(b)
		}(), 9, ErrInvalidRecord},
		{"gzip bomb", TestBatch{ProducerID: -1, Codec: CodecGzip, Records: []Record{{Value: bomb}}}.Build(), 9, ErrMessageTooLarge},
		{"zstd bomb", TestBatch{ProducerID: -1, Codec: CodecZstd, Records: []Record{{Value: bomb}}}.Build(), 9, ErrMessageTooLarge},
		{"lz4 bomb", TestBatch{ProducerID: -1, Codec: CodecLZ4, Records: []Record{{Value: bomb}}}.Build(), 9, ErrMessageTooLarge},
		{"snappy bomb", TestBatch{ProducerID: -1, Codec: CodecSnappy, Records: []Record{{Value: bomb}}}.Build(), 9, ErrMessageTooLarge},
		{"xerial bomb", TestBatch{ProducerID: -1, Codec: CodecSnappy, XerialSnappy: true, Records: []Record{{Value: bomb}}}.Build(), 9, ErrMessageTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.decode(tc.data, tc.version)
			require.Error(t, err)
			var ke *Error
			require.True(t, errors.As(err, &ke), "error %v carries no kafka code", err)
			assert.Equal(t, tc.want.Code, ke.Code, "got %v", err)
		})
	}
}

func crc32c(b []byte) uint32 {
	return crc32Checksum(b)
}

// batchWithRegion builds a batch of n records whose (compressed) records
// region is given as is.
func batchWithRegion(codec Codec, n int, region []byte) []byte {
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec),
		LastOffsetDelta:      int32(n - 1),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              region,
	}
	rb.Length = int32(49 + len(region))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchCRCOffset:], crc32c(out[batchAttrOffset:]))
	return out
}

// recordsRegion encodes records as a batch's uncompressed records region.
func recordsRegion(records []Record) []byte {
	var raw []byte
	for i, r := range records {
		raw = appendTestRecord(raw, int32(i), r.Timestamp, r)
	}
	return raw
}

func lz4Frame(t *testing.T, raw []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	require.NoError(t, w.Apply(opts...))
	_, err := w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func requireSameRecords(t *testing.T, want, got []Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, string(want[i].Key), string(got[i].Key), "record %d key", i)
		require.Equal(t, string(want[i].Value), string(got[i].Value), "record %d value", i)
		require.Equal(t, want[i].Timestamp, got[i].Timestamp, "record %d timestamp", i)
		require.Len(t, got[i].Headers, len(want[i].Headers), "record %d headers", i)
		for j, h := range want[i].Headers {
			require.Equal(t, h.Key, got[i].Headers[j].Key)
			require.Equal(t, string(h.Value), string(got[i].Headers[j].Value))
		}
	}
}

// benchRecords returns n records of a valueSize-byte value, every third
// with a header.
func benchRecords(n, valueSize int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{'a' + byte(i%26)}, valueSize)
		copy(v, strconv.Itoa(i))
		recs[i] = Record{Key: []byte("key-" + strconv.Itoa(i)), Value: v, Timestamp: int64(i)}
		if i%3 == 0 {
			recs[i].Headers = []Header{{Key: "trace-id", Value: []byte(strconv.Itoa(i))}}
		}
	}
	return recs
}

// TestDecodeLZ4Frames: the block-by-block lz4 decoder reads every frame
// layout pierrec/lz4 writes (block sizes, checksums, declared size),
// concatenated and skippable frames, and blocks that refer to earlier ones.
func TestDecodeLZ4Frames(t *testing.T) {
	t.Parallel()
	d := newTestDecoder(t, 8<<20)
	records := benchRecords(3000, 300) // ~1 MB: several blocks of 64 KiB and 256 KiB
	raw := recordsRegion(records)
	for _, tc := range []struct {
		name string
		opts []lz4.Option
	}{
		{"defaults", nil},
		{"64k blocks", []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb)}},
		{"256k blocks, block checksums", []lz4.Option{lz4.BlockSizeOption(lz4.Block256Kb), lz4.BlockChecksumOption(true)}},
		{"1m blocks, no content checksum", []lz4.Option{lz4.BlockSizeOption(lz4.Block1Mb), lz4.ChecksumOption(false)}},
		{"declared size", []lz4.Option{lz4.SizeOption(uint64(len(raw)))}},
		{"level 9", []lz4.Option{lz4.CompressionLevelOption(lz4.Level9)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := d.decode(batchWithRegion(CodecLZ4, len(records), lz4Frame(t, raw, tc.opts...)), 9)
			require.NoError(t, err)
			requireSameRecords(t, records, b.Records)
			b.Release()
		})
	}
	t.Run("concatenated and skippable frames", func(t *testing.T) {
		half := len(recordsRegion(records[:1500]))
		skippable := []byte{0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'}
		region := slices.Concat(skippable, lz4Frame(t, raw[:half]), lz4Frame(t, raw[half:], lz4.BlockSizeOption(lz4.Block64Kb)))
		b, err := d.decode(batchWithRegion(CodecLZ4, len(records), region), 9)
		require.NoError(t, err)
		requireSameRecords(t, records, b.Records)
	})
	t.Run("dependent blocks", func(t *testing.T) {
		// Block 1 stores record 0; block 2 is record 1: 4 literals (it
		// differs in its offset delta), a match into block 1, 5 literals.
		region := recordsRegion([]Record{{Value: []byte("abcdefghij")}, {Value: []byte("abcdefghij")}})
		one := len(region) / 2
		rec0, rec1 := region[:one], region[one:]
		frame := []byte{0x04, 0x22, 0x4D, 0x18, 0x40, 0x40} // version 1, dependent blocks, 64 KiB
		frame = append(frame, byte(xxh32Short(frame[4:6])>>8))
		frame = binary.LittleEndian.AppendUint32(frame, uint32(one)|lz4Uncompressed)
		frame = append(frame, rec0...)
		matchLen := len(rec1) - 4 - 5
		require.Equal(t, rec0[4:4+matchLen], rec1[4:4+matchLen])
		require.Less(t, matchLen-4, 15)
		block := append([]byte{4<<4 | byte(matchLen-4)}, rec1[:4]...)
		block = binary.LittleEndian.AppendUint16(block, uint16(one)) // back to rec0[4]
		block = append(block, 5<<4)
		block = append(block, rec1[len(rec1)-5:]...)
		frame = binary.LittleEndian.AppendUint32(frame, uint32(len(block)))
		frame = append(frame, block...)
		frame = binary.LittleEndian.AppendUint32(frame, 0)
		b, err := d.decode(batchWithRegion(CodecLZ4, 2, frame), 9)
		require.NoError(t, err)
		require.Len(t, b.Records, 2)
		assert.Equal(t, "abcdefghij", string(b.Records[1].Value))
	})
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
		want   *Error
	}{
		{"header checksum", func(f []byte) []byte { f[6] ^= 0xff; return f }, ErrInvalidRecord},
		{"not a frame", func(f []byte) []byte { f[0] = 0; return f }, ErrInvalidRecord},
		{"truncated", func(f []byte) []byte { return f[:len(f)/2] }, ErrInvalidRecord},
		{"trailing garbage", func(f []byte) []byte { return append(f, 1, 2) }, ErrInvalidRecord},
		{"corrupt block", func(f []byte) []byte {
			for i := 11; i < len(f)-8; i += 7 {
				f[i] = 0xff
			}
			return f
		}, ErrInvalidRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame := tc.mutate(lz4Frame(t, raw[:4096], lz4.ChecksumOption(false)))
			_, err := d.decode(batchWithRegion(CodecLZ4, 30, frame), 9)
			var ke *Error
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, tc.want.Code, ke.Code, "got %v", err)
		})
	}
}

// TestDecodedBatchesOwnTheirBuffers: a batch not released keeps its
// records when later batches are decoded; a released batch's buffers are
// reused without disturbing the others.
func TestDecodedBatchesOwnTheirBuffers(t *testing.T) {
	t.Parallel()
	d := newTestDecoder(t, 8<<20)
	for _, codec := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			recs := func(seed int) []Record {
				r := benchRecords(200, 50)
				for i := range r {
					r[i].Value[len(r[i].Value)-1] = byte(seed)
				}
				return r
			}
			a, b, c := recs(1), recs(2), recs(3)
			build := func(r []Record) []byte {
				return TestBatch{ProducerID: -1, BaseSequence: -1, Codec: codec, Records: r}.Build()
			}
			da, err := d.decode(build(a), 9)
			require.NoError(t, err)
			db, err := d.decode(build(b), 9)
			require.NoError(t, err)
			requireSameRecords(t, a, da.Records)
			da.Release()
			assert.Nil(t, da.Records, "a released batch hands out no records")
			dc, err := d.decode(build(c), 9)
			require.NoError(t, err)
			requireSameRecords(t, b, db.Records)
			requireSameRecords(t, c, dc.Records)
			db.Release()
			dc.Release()
		})
	}
}

// raceEnabled reports a -race build, in which sync.Pool drops some of what
// it is given.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestDecodeSteadyStateAllocs pins the decoder at zero allocations per
// batch once warm, for every codec, when batches are released: the
// decompression output, the Record and Header slices and header keys are
// reused.
func TestDecodeSteadyStateAllocs(t *testing.T) {
	d := newTestDecoder(t, 8<<20)
	records := benchRecords(500, 100)
	for _, tc := range []struct {
		name   string
		codec  Codec
		xerial bool
	}{
		{"none", CodecNone, false},
		{"gzip", CodecGzip, false},
		{"snappy", CodecSnappy, false},
		{"snappy_xerial", CodecSnappy, true},
		{"lz4", CodecLZ4, false},
		{"zstd", CodecZstd, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := TestBatch{ProducerID: -1, BaseSequence: -1, Codec: tc.codec, XerialSnappy: tc.xerial, Records: records}.Build()
			run := func() {
				b, err := d.decode(data, 9)
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
			}
			run()
			allocs := testing.AllocsPerRun(50, run)
			// The gzip readers and klauspost's zstd internals are pooled
			// in sync.Pools, which drop items under -race; everything
			// else is held by the decoder.
			limit := 0.0
			if (tc.codec == CodecGzip || tc.codec == CodecZstd) && raceEnabled() {
				limit = 10
			}
			assert.LessOrEqual(t, allocs, limit, "allocations per decoded batch of %d records", len(records))
		})
	}
}

// TestLZ4BlockLen: the size walk over a block's sequences is the size it
// decodes to, for literal and match lengths of every width.
func TestLZ4BlockLen(t *testing.T) {
	t.Parallel()
	random := make([]byte, 70_000)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>3*31 ^ i>>11)
	}
	for name, data := range map[string][]byte{
		"zeros":          make([]byte, 65_536),
		"short":          []byte("abc"),
		"text":           bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog "), 1000),
		"incompressible": random,
		"records":        recordsRegion(benchRecords(200, 100)),
	} {
		t.Run(name, func(t *testing.T) {
			block := make([]byte, lz4.CompressBlockBound(len(data)))
			var c lz4.Compressor
			n, err := c.CompressBlock(data, block)
			require.NoError(t, err)
			if n == 0 {
				t.Skip("incompressible: the writer stores such blocks")
			}
			size, err := lz4BlockLen(block[:n])
			require.NoError(t, err)
			assert.Equal(t, len(data), size)
			for cut := 1; cut < min(n, 40); cut += 7 {
				if s, err := lz4BlockLen(block[:n-cut]); err == nil {
					assert.NotEqual(t, len(data), s, "truncated by %d", cut)
				}
			}
		})
	}
}
