package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestDecoder(t *testing.T, maxDecompressed int) *batchDecoder {
	t.Helper()
	d, err := newBatchDecoder(maxDecompressed)
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
		{"transactional", TestBatch{ProducerID: 1, Attributes: attrTransactional, Records: SimpleRecords(1)}.Build(), 9, ErrTransactionalIDAuthorizationFailed},
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
