package kafkaproto

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Codec is a record batch compression codec (attributes bits 0-2).
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// RecordBatch v2 layout constants (DefaultRecordBatch.java).
const (
	batchHeaderLen     = 61 // bytes before the records
	batchLengthOffset  = 8  // int32 batchLength: bytes after this field
	batchMagicOffset   = 16 // same offset in magic 0/1 message sets
	batchCRCOffset     = 17
	batchAttrOffset    = 21 // CRC covers [21, end)
	minRecordWireBytes = 7  // length, attributes, ts delta, offset delta, key len, value len, header count

	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decodedRecordBytes is the memory of one decoded Record.
const decodedRecordBytes = int64(unsafe.Sizeof(Record{}))

// errTransactionalBatch marks a batch with the transactional bit; the
// Produce handler answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
var errTransactionalBatch = withMessage(ErrTransactionalIDAuthorizationFailed,
	"transactional batches are not supported by this gateway")

// decodedBatch is one decoded record batch.
type decodedBatch struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Codec         Codec
	Records       []Record
}

// batchDecoder decodes RecordBatch v2 with bounded decompression. It is safe
// for concurrent use.
type batchDecoder struct {
	maxDecompressed int
	zstd            *zstd.Decoder
	gzipReaders     sync.Pool // *gzip.Reader
	lz4Readers      sync.Pool // *lz4.Reader
}

func newBatchDecoder(maxDecompressed int) (*batchDecoder, error) {
	zd, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(uint64(maxDecompressed)),
		zstd.WithDecoderMaxWindow(uint64(max(maxDecompressed, zstd.MinWindowSize))),
	)
	if err != nil {
		return nil, fmt.Errorf("create zstd decoder: %w", err)
	}
	return &batchDecoder{maxDecompressed: maxDecompressed, zstd: zd}, nil
}

func (d *batchDecoder) close() { d.zstd.Close() }

// decode checks and decodes exactly one RecordBatch v2 occupying all of data.
// produceVersion gates zstd (v7+). The returned error wraps one of the Kafka
// sentinels: ErrCorruptMessage for transport damage (short batch, CRC),
// ErrInvalidRecord for malformed content, ErrMessageTooLarge when the
// decompressed records exceed the limit, ErrUnsupportedCompressionType,
// ErrInvalidTimestamp, or errTransactionalBatch. Record slices alias data or
// the decompressed buffer.
func (d *batchDecoder) decode(data []byte, produceVersion int16) (*decodedBatch, error) {
	if len(data) > batchMagicOffset {
		if magic := int8(data[batchMagicOffset]); magic != 2 {
			return nil, withMessage(ErrInvalidRecord,
				"record batch magic %d: only magic 2 (Kafka 0.11+ record batches) is supported; configure the client for Kafka >= 0.11", magic)
		}
	}
	if len(data) < batchHeaderLen {
		return nil, withMessage(ErrCorruptMessage, "record batch of %d bytes is shorter than its %d-byte header", len(data), batchHeaderLen)
	}
	batchLen := int64(int32(binary.BigEndian.Uint32(data[batchLengthOffset:])))
	total := batchLen + 12
	switch {
	case batchLen < batchHeaderLen-12:
		return nil, withMessage(ErrCorruptMessage, "record batch length %d is invalid", batchLen)
	case total > int64(len(data)):
		return nil, withMessage(ErrCorruptMessage, "record batch length %d exceeds the %d bytes sent", batchLen, len(data)-12)
	case total < int64(len(data)):
		return nil, withMessage(ErrInvalidRecord, "produce requests must contain exactly one record batch per partition")
	}
	if got, want := crc32Checksum(data[batchAttrOffset:]), binary.BigEndian.Uint32(data[batchCRCOffset:]); got != want {
		return nil, withMessage(ErrCorruptMessage, "record batch crc mismatch: computed %08x, batch says %08x", got, want)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(data); err != nil {
		return nil, withMessage(ErrCorruptMessage, "read record batch header: %v", err)
	}
	codec := Codec(rb.Attributes & attrCodecMask)
	switch {
	case rb.Attributes&attrControl != 0:
		return nil, withMessage(ErrInvalidRecord, "control batches may not be produced by clients")
	case rb.Attributes&attrTransactional != 0:
		return nil, errTransactionalBatch
	case rb.Attributes&attrLogAppendTime != 0:
		return nil, withMessage(ErrInvalidTimestamp, "batches with timestamp type LogAppendTime may not be produced by clients")
	case codec > CodecZstd:
		return nil, withMessage(ErrInvalidRecord, "unknown compression codec %d", codec)
	case codec == CodecZstd && produceVersion < 7:
		return nil, withMessage(ErrUnsupportedCompressionType, "zstd requires produce v7+, got v%d", produceVersion)
	case rb.NumRecords <= 0:
		return nil, withMessage(ErrInvalidRecord, "record batch has %d records", rb.NumRecords)
	case rb.LastOffsetDelta != rb.NumRecords-1:
		return nil, withMessage(ErrInvalidRecord, "last offset delta %d does not match record count %d", rb.LastOffsetDelta, rb.NumRecords)
	case rb.ProducerID >= 0 && rb.FirstSequence < 0:
		return nil, withMessage(ErrInvalidRecord, "idempotent batch (producer id %d) has negative base sequence %d", rb.ProducerID, rb.FirstSequence)
	}
	raw, err := d.decompress(codec, rb.Records)
	if err != nil {
		return nil, err
	}
	records, err := decodeRecords(raw, rb.NumRecords, rb.FirstTimestamp, d.maxDecompressed)
	if err != nil {
		return nil, err
	}
	return &decodedBatch{
		ProducerID:    rb.ProducerID,
		ProducerEpoch: rb.ProducerEpoch,
		BaseSequence:  rb.FirstSequence,
		Codec:         codec,
		Records:       records,
	}, nil
}

// decompress returns the plain records region, never larger than
// maxDecompressed bytes.
func (d *batchDecoder) decompress(codec Codec, src []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		zr, _ := d.gzipReaders.Get().(*gzip.Reader)
		if zr == nil {
			zr = new(gzip.Reader)
		}
		if err = zr.Reset(bytes.NewReader(src)); err == nil {
			out, err = d.readLimited(zr)
		}
		d.gzipReaders.Put(zr)
	case CodecSnappy:
		out, err = d.snappy(src)
	case CodecLZ4:
		lr, _ := d.lz4Readers.Get().(*lz4.Reader)
		if lr == nil {
			lr = lz4.NewReader(nil)
		}
		lr.Reset(bytes.NewReader(src))
		out, err = d.readLimited(lr)
		lr.Reset(nil)
		d.lz4Readers.Put(lr)
	case CodecZstd:
		out, err = d.zstd.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || len(out) > d.maxDecompressed {
			err = errDecompressedTooLarge
		}
	}
	if errors.Is(err, errDecompressedTooLarge) {
		return nil, withMessage(ErrMessageTooLarge, "%s batch decompresses to more than %d bytes", codec, d.maxDecompressed)
	}
	if err != nil {
		return nil, withMessage(ErrInvalidRecord, "decompress %s batch: %v", codec, err)
	}
	return out, nil
}

var errDecompressedTooLarge = errors.New("decompressed batch too large")

func (d *batchDecoder) readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(d.maxDecompressed)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > d.maxDecompressed {
		return nil, errDecompressedTooLarge
	}
	return out, nil
}

// xerialHeader starts snappy data framed by xerial's SnappyOutputStream
// (Java, sarama, kafka-go); librdkafka and kgo send one raw snappy block.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialChunksOffset = 16 // header(8) + version(4) + compatible version(4)

func (d *batchDecoder) snappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialHeader) {
		return d.snappyBlock(nil, src)
	}
	if len(src) < xerialChunksOffset {
		return nil, errors.New("truncated xerial snappy header")
	}
	var out []byte
	for pos := xerialChunksOffset; pos < len(src); {
		if len(src)-pos < 4 {
			return nil, errors.New("truncated xerial snappy chunk length")
		}
		n := int(binary.BigEndian.Uint32(src[pos:]))
		pos += 4
		if n < 0 || n > len(src)-pos {
			return nil, fmt.Errorf("xerial snappy chunk of %d bytes exceeds the %d remaining", n, len(src)-pos)
		}
		var err error
		if out, err = d.snappyBlock(out, src[pos:pos+n]); err != nil {
			return nil, err
		}
		pos += n
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// snappyBlock appends one decoded raw snappy block to dst, checking the
// block's declared length before allocating.
func (d *batchDecoder) snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > d.maxDecompressed-len(dst) {
		return nil, errDecompressedTooLarge
	}
	buf := make([]byte, n)
	buf, err = snappy.Decode(buf, block)
	if err != nil {
		return nil, err
	}
	if dst == nil {
		return buf, nil
	}
	return append(dst, buf...), nil
}

// decodeRecords reads exactly n length-prefixed records from src. The
// decoded records may take at most maxBytes.
func decodeRecords(src []byte, n int32, baseTimestamp int64, maxBytes int) ([]Record, error) {
	if int64(n)*minRecordWireBytes > int64(len(src)) {
		return nil, withMessage(ErrInvalidRecord, "record batch claims %d records but holds only %d bytes of records", n, len(src))
	}
	if int64(n)*decodedRecordBytes > int64(maxBytes) {
		// A Record takes ~88 bytes, over ten times the wire size of an
		// empty record: bound that memory too.
		return nil, withMessage(ErrMessageTooLarge, "record batch of %d records decodes to more than %d bytes", n, maxBytes)
	}
	records := make([]Record, n)
	for i := range records {
		length, l := kbin.Varint(src)
		if l <= 0 || length < minRecordWireBytes-1 || int64(length) > int64(len(src)-l) {
			return nil, withMessage(ErrInvalidRecord, "record %d: invalid length", i)
		}
		body := src[l : l+int(length)]
		src = src[l+int(length):]
		if err := decodeRecord(body, &records[i], baseTimestamp); err != nil {
			return nil, withMessage(ErrInvalidRecord, "record %d: %v", i, err)
		}
		records[i].Index = int32(i)
	}
	if len(src) != 0 {
		return nil, withMessage(ErrInvalidRecord, "%d bytes left after the last of %d records", len(src), n)
	}
	return records, nil
}

// recordReader is a sticky-error cursor over one record body.
type recordReader struct {
	src []byte
	err error
}

func (r *recordReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("truncated or invalid %s", what)
	}
}

func (r *recordReader) varint(what string) int32 {
	if r.err != nil {
		return 0
	}
	v, n := kbin.Varint(r.src)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.src = r.src[n:]
	return v
}

func (r *recordReader) varlong(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := kbin.Varlong(r.src)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.src = r.src[n:]
	return v
}

// bytes reads a varint-length-prefixed byte string; -1 is null.
func (r *recordReader) bytes(what string, nullable bool) []byte {
	l := r.varint(what)
	if r.err != nil {
		return nil
	}
	switch {
	case l == -1 && nullable:
		return nil
	case l < 0 || int(l) > len(r.src):
		r.fail(what)
		return nil
	}
	b := r.src[:l:l]
	r.src = r.src[l:]
	return b
}

func decodeRecord(body []byte, rec *Record, baseTimestamp int64) error {
	r := recordReader{src: body}
	if len(r.src) < 1 {
		return errors.New("missing attributes")
	}
	r.src = r.src[1:] // attributes, unused
	rec.Timestamp = baseTimestamp + r.varlong("timestamp delta")
	rec.OffsetDelta = r.varint("offset delta")
	rec.Key = r.bytes("key", true)
	rec.Value = r.bytes("value", true)
	nh := r.varint("header count")
	if r.err != nil {
		return r.err
	}
	if nh < 0 || int(nh)*2 > len(r.src) {
		return fmt.Errorf("invalid header count %d", nh)
	}
	if nh > 0 {
		rec.Headers = make([]Header, nh)
		for i := range rec.Headers {
			k := r.bytes("header key", false)
			v := r.bytes("header value", true)
			if r.err != nil {
				return r.err
			}
			rec.Headers[i] = Header{Key: string(k), Value: v}
		}
	}
	if r.err != nil {
		return r.err
	}
	if len(r.src) != 0 {
		return fmt.Errorf("%d trailing bytes", len(r.src))
	}
	return nil
}

// crc32Checksum is the RecordBatch CRC-32C.
func crc32Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
