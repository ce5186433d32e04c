package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/klauspost/compress/gzip"
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

// errTransactionalBatch refuses a batch with the transactional bit in a
// Produce request without a transactional id.
var errTransactionalBatch = withMessage(ErrTransactionalIDAuthorizationFailed,
	"a transactional batch needs the produce request's transactional id")

// DecodedBatch is one decoded record batch. Its Records alias the request
// frame (codec none) or a decompression buffer of the decoder that made it.
// A batch the server decoded is charged to its memory budget until
// Release (see readBudget).
type DecodedBatch struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Codec         Codec
	// Transactional is the batch's transactional attribute bit; the
	// Produce handler checks it against the request's transactional id.
	Transactional bool
	Records       []Record

	// What the batch borrows from its decoder; Release gives it back, so
	// that in steady state a batch allocates nothing (but its budget
	// cleanup, see readBudget.chargeBatch).
	dec     *batchDecoder // nil once released
	raw     []byte        // decompressed records region
	records []Record      // backing array of Records
	headers []Header      // backing array of every record's Headers
	keys    map[string]string
	src     bytes.Reader // gzip input
	// charge is what the batch holds of the server's memory budget (none
	// from a Decoder); cleanup returns it if the batch is never released.
	charge  batchCharge
	cleanup runtime.Cleanup
}

// Limits on what a released batch keeps for reuse: a rare huge batch must
// not pin its memory in the pool.
const (
	maxPooledRawBytes    = 4 << 20
	maxPooledRecords     = 1 << 15
	maxPooledHeaders     = 1 << 15
	maxInternedKeys      = 64
	maxInternedKeyLength = 64
)

// Release hands the batch's buffers back to its decoder for the next batch
// and returns what the batch was charged to the server's memory budget.
// Without it both wait for the garbage collector. Call it once, when
// nothing reads Records, nor any slice taken from them, any more.
func (b *DecodedBatch) Release() {
	d := b.dec
	if d == nil {
		return
	}
	b.dec = nil
	b.releaseCharge()
	// Records of codec none alias the frame: do not pin it from the pool.
	clear(b.records[:len(b.Records)])
	clear(b.headers)
	b.Records, b.headers = nil, b.headers[:0]
	b.src.Reset(nil)
	if cap(b.raw) > maxPooledRawBytes {
		b.raw = nil
	}
	if cap(b.records) > maxPooledRecords {
		b.records = nil
	}
	if cap(b.headers) > maxPooledHeaders {
		b.headers = nil
	}
	if !d.spare.CompareAndSwap(nil, b) {
		d.batches.Put(b)
	}
}

// MemoryBytes is the memory the batch holds beyond the request frame.
func (b *DecodedBatch) MemoryBytes() int64 {
	return int64(cap(b.raw)) + int64(cap(b.records))*decodedRecordBytes + int64(cap(b.headers))*int64(unsafe.Sizeof(Header{}))
}

// heldBytes is what a batch decoded from wire bytes of codec pins: its
// buffers and, for codec none, the batch in the request frame, which its
// Records alias and keep alive after the frame is handled.
func (b *DecodedBatch) heldBytes(codec Codec, wire int) int64 {
	n := b.MemoryBytes()
	if codec == CodecNone {
		n += int64(wire)
	}
	return n
}

// releaseCharge returns the batch's charge, if it has one. b is reachable
// across the call (the caller uses it afterwards), so the cleanup is
// stopped before it can be queued.
func (b *DecodedBatch) releaseCharge() {
	c := b.charge
	if c.budget == nil {
		return
	}
	b.cleanup.Stop()
	b.charge, b.cleanup = batchCharge{}, runtime.Cleanup{}
	c.budget.release(c.n)
}

// headerKey returns k as a string, interned per pooled batch: header keys
// repeat from record to record (trace ids, content types), and a string
// that outlives the batch must not alias a buffer that is reused.
func (b *DecodedBatch) headerKey(k []byte) string {
	if s, ok := b.keys[string(k)]; ok {
		return s
	}
	s := string(k)
	if len(b.keys) < maxInternedKeys && len(k) <= maxInternedKeyLength {
		if b.keys == nil {
			b.keys = make(map[string]string, 8)
		}
		b.keys[s] = s
	}
	return s
}

// batchDecoder decodes RecordBatch v2 with bounded decompression. It is safe
// for concurrent use.
type batchDecoder struct {
	maxDecompressed int
	// mem is charged for the batches decoded (nil: nothing is charged).
	mem         *readBudget
	zstd        *zstd.Decoder
	gzipReaders sync.Pool // *gzip.Reader
	// Batches given back by Release. spare keeps the last one through
	// garbage collections (which empty the pool) and makes reuse
	// deterministic for one connection at a time.
	spare   atomic.Pointer[DecodedBatch]
	batches sync.Pool // *DecodedBatch
}

func newBatchDecoder(maxDecompressed int, mem *readBudget) (*batchDecoder, error) {
	zd, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(uint64(maxDecompressed)),
		zstd.WithDecoderMaxWindow(uint64(max(maxDecompressed, zstd.MinWindowSize))),
	)
	if err != nil {
		return nil, fmt.Errorf("create zstd decoder: %w", err)
	}
	return &batchDecoder{maxDecompressed: maxDecompressed, mem: mem, zstd: zd}, nil
}

func (d *batchDecoder) close() { d.zstd.Close() }

// Decoder decodes the record batch of one partition of a Produce request as
// the server does, for benchmarks and tools outside this package. It is
// safe for concurrent use.
type Decoder struct{ d *batchDecoder }

// NewDecoder returns a Decoder that refuses batches whose records decompress
// to more than maxDecompressedBytes (Config.MaxDecompressedBytes).
func NewDecoder(maxDecompressedBytes int) (*Decoder, error) {
	d, err := newBatchDecoder(maxDecompressedBytes, nil)
	if err != nil {
		return nil, err
	}
	return &Decoder{d: d}, nil
}

// Decode decodes exactly one RecordBatch v2 occupying all of data, for a
// Produce request of produceVersion. Errors wrap the Kafka error the server
// would answer with. The batch's Records alias data. Nothing is charged to
// a memory budget.
func (d *Decoder) Decode(data []byte, produceVersion int16) (*DecodedBatch, error) {
	return d.d.decode(data, produceVersion)
}

// Close frees the decoder's resources.
func (d *Decoder) Close() { d.d.close() }

func (d *batchDecoder) getBatch() *DecodedBatch {
	b := d.spare.Swap(nil)
	if b == nil {
		b, _ = d.batches.Get().(*DecodedBatch)
	}
	if b == nil {
		b = &DecodedBatch{}
	}
	b.dec = d
	return b
}

// decode checks and decodes exactly one RecordBatch v2 occupying all of data.
// produceVersion gates zstd (v7+). The returned error wraps one of the Kafka
// sentinels: ErrCorruptMessage for transport damage (short batch, CRC),
// ErrInvalidRecord for malformed content, ErrMessageTooLarge when the
// decompressed records exceed the limit, ErrUnsupportedCompressionType,
// ErrInvalidTimestamp. Record slices alias data or
// the batch's decompression buffer (see DecodedBatch.Release). With d.mem
// the batch is charged until Release.
func (d *batchDecoder) decode(data []byte, produceVersion int16) (*DecodedBatch, error) {
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
	case rb.Attributes&attrTransactional != 0 && rb.ProducerID < 0:
		return nil, withMessage(ErrInvalidRecord, "transactional batch without a producer id")
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
	b := d.getBatch()
	raw, err := d.decompress(b, codec, rb.Records)
	if err == nil {
		err = b.decodeRecords(raw, rb.NumRecords, rb.FirstTimestamp, d.maxDecompressed)
	}
	if err != nil {
		b.Release()
		return nil, err
	}
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Codec = rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, codec
	b.Transactional = rb.Attributes&attrTransactional != 0
	if d.mem != nil {
		// Forced: the frame is admitted already, and its reader waiting
		// here for memory other frames hold could deadlock.
		d.mem.chargeBatch(b, b.heldBytes(codec, len(data)))
	}
	return b, nil
}

// decompress returns the plain records region, never larger than
// maxDecompressed bytes. Compressed batches are decoded into b.raw, reused
// from batch to batch.
func (d *batchDecoder) decompress(b *DecodedBatch, codec Codec, src []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		out, err = d.gunzip(b, src)
	case CodecSnappy:
		out, err = d.snappy(b.raw[:0], src)
	case CodecLZ4:
		out, err = d.lz4(b.raw[:0], src)
	case CodecZstd:
		out, err = d.zstd.DecodeAll(src, b.raw[:0])
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
	if cap(out) > cap(b.raw) {
		b.raw = out[:0] // keep the grown buffer for the next batch
	}
	return out, nil
}

var errDecompressedTooLarge = errors.New("decompressed batch too large")

// maxDeflateRatio bounds how much deflate data can expand (RFC 1951: a
// 258-byte match costs at least 2 bits), so that a gzip trailer's size can
// be trusted as a buffer hint only up to what the input could hold.
const maxDeflateRatio = 1032

func (d *batchDecoder) gunzip(b *DecodedBatch, src []byte) ([]byte, error) {
	zr, _ := d.gzipReaders.Get().(*gzip.Reader)
	if zr == nil {
		zr = new(gzip.Reader)
	}
	defer d.gzipReaders.Put(zr)
	b.src.Reset(src)
	if err := zr.Reset(&b.src); err != nil {
		return nil, err
	}
	out := b.raw[:0]
	// The trailer's ISIZE is the last member's size mod 2^32: a hint only.
	if len(src) >= 4 {
		hint := int64(binary.LittleEndian.Uint32(src[len(src)-4:]))
		hint = min(hint, int64(d.maxDecompressed), int64(len(src))*maxDeflateRatio)
		out = slices.Grow(out, int(hint)+1) // +1: room to see EOF without growing
	}
	return readLimited(out, zr, d.maxDecompressed)
}

// readLimited appends what r yields to dst, failing once it passes max
// bytes.
func readLimited(dst []byte, r io.Reader, maxBytes int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(max(len(dst), 32<<10), maxBytes+1-len(dst)))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > maxBytes {
			return nil, errDecompressedTooLarge
		}
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// LZ4 frame format (lz4_Frame_format.md), decoded block by block straight
// into the output: no stream reader, so no block buffers and no copy.
const (
	lz4FrameMagic     = 0x184D2204
	lz4SkippableMagic = 0x184D2A50 // low 4 bits free
	lz4FlagVersion    = 0xC0
	lz4FlagIndep      = 0x20
	lz4FlagBlockSum   = 0x10
	lz4FlagSize       = 0x08
	lz4FlagContentSum = 0x04
	lz4FlagReserved   = 0x02
	lz4FlagDictID     = 0x01
	lz4BDReserved     = 0x8F
	lz4Uncompressed   = 1 << 31
	lz4WindowSize     = 64 << 10
)

// lz4 appends the decoded content of the lz4 frames in src to dst. Kafka
// batches hold one frame; concatenated and skippable frames are accepted
// as the format allows. Block and content checksums are not verified, as
// Kafka's broker does not either: the batch CRC already covers the bytes.
func (d *batchDecoder) lz4(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return nil, errors.New("empty lz4 data")
	}
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("truncated lz4 frame magic")
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&^0xF == lz4SkippableMagic {
			if len(src) < 8 || uint64(binary.LittleEndian.Uint32(src[4:])) > uint64(len(src)-8) {
				return nil, errors.New("truncated lz4 skippable frame")
			}
			src = src[8+binary.LittleEndian.Uint32(src[4:]):]
			continue
		}
		if magic != lz4FrameMagic {
			return nil, fmt.Errorf("not an lz4 frame (magic %#08x)", magic)
		}
		var err error
		if dst, src, err = d.lz4Frame(dst, src[4:]); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// lz4Frame decodes one frame after its magic and returns what follows it.
func (d *batchDecoder) lz4Frame(dst, src []byte) ([]byte, []byte, error) {
	if len(src) < 3 {
		return nil, nil, errors.New("truncated lz4 frame descriptor")
	}
	flg, bd := src[0], src[1]
	descLen := 2
	if flg&lz4FlagSize != 0 {
		descLen += 8
	}
	if flg&lz4FlagDictID != 0 {
		descLen += 4
	}
	if len(src) < descLen+1 {
		return nil, nil, errors.New("truncated lz4 frame descriptor")
	}
	if hc := byte(xxh32Short(src[:descLen]) >> 8); hc != src[descLen] {
		return nil, nil, fmt.Errorf("lz4 frame descriptor checksum %#02x, computed %#02x", src[descLen], hc)
	}
	switch {
	case flg&lz4FlagVersion != 0x40:
		return nil, nil, fmt.Errorf("lz4 frame version %d", flg>>6)
	case flg&lz4FlagReserved != 0 || bd&lz4BDReserved != 0:
		return nil, nil, errors.New("lz4 frame descriptor has reserved bits set")
	case flg&lz4FlagDictID != 0:
		return nil, nil, errors.New("lz4 frame needs a dictionary")
	case bd>>4 < 4:
		return nil, nil, fmt.Errorf("lz4 block size code %d", bd>>4)
	}
	blockMax := 1 << (8 + 2*int(bd>>4)) // 4: 64 KiB … 7: 4 MiB
	src = src[descLen+1:]
	remaining := func() int { return d.maxDecompressed - len(dst) }
	if cap(dst) == len(dst) {
		// A fresh buffer: size it exactly from the blocks (a walk over
		// their sequences, no decoding), so that it is allocated once.
		// A declared content size is not trusted for this: it is free to
		// lie.
		size, err := lz4FrameLen(src, flg, blockMax)
		if err != nil {
			return nil, nil, err
		}
		if size > remaining() {
			return nil, nil, errDecompressedTooLarge
		}
		dst = slices.Grow(dst, size)
	}
	for it := (lz4Blocks{src: src, flg: flg, blockMax: blockMax}); ; {
		block, stored, ok, err := it.next()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return dst, it.src, nil
		}
		switch {
		case stored && len(block) > remaining():
			return nil, nil, errDecompressedTooLarge
		case stored:
			dst = append(dst, block...)
		default:
			var dict []byte
			if flg&lz4FlagIndep == 0 {
				dict = dst[max(0, len(dst)-lz4WindowSize):]
			}
			if dst, err = d.lz4Block(dst, block, dict, blockMax); err != nil {
				return nil, nil, err
			}
		}
	}
}

// lz4Blocks walks the blocks of one lz4 frame, after its descriptor.
type lz4Blocks struct {
	src      []byte // what follows; after the end, what follows the frame
	flg      byte
	blockMax int
}

// next returns the next block and whether it is stored uncompressed;
// ok=false at the end mark.
func (it *lz4Blocks) next() (block []byte, stored, ok bool, err error) {
	if len(it.src) < 4 {
		return nil, false, false, errors.New("truncated lz4 block")
	}
	word := binary.LittleEndian.Uint32(it.src)
	it.src = it.src[4:]
	if word == 0 { // end mark
		if it.flg&lz4FlagContentSum != 0 {
			if len(it.src) < 4 {
				return nil, false, false, errors.New("truncated lz4 content checksum")
			}
			it.src = it.src[4:]
		}
		return nil, false, false, nil
	}
	size := int(word &^ lz4Uncompressed)
	if size > it.blockMax || size > len(it.src) {
		return nil, false, false, fmt.Errorf("lz4 block of %d bytes (block size %d, %d left)", size, it.blockMax, len(it.src))
	}
	block, it.src = it.src[:size], it.src[size:]
	if it.flg&lz4FlagBlockSum != 0 {
		if len(it.src) < 4 {
			return nil, false, false, errors.New("truncated lz4 block checksum")
		}
		it.src = it.src[4:]
	}
	return block, word&lz4Uncompressed != 0, true, nil
}

// lz4FrameLen is the decoded size of the frame's blocks.
func lz4FrameLen(src []byte, flg byte, blockMax int) (int, error) {
	total := 0
	for it := (lz4Blocks{src: src, flg: flg, blockMax: blockMax}); ; {
		block, stored, ok, err := it.next()
		if err != nil || !ok {
			return total, err
		}
		n := len(block)
		if !stored {
			if n, err = lz4BlockLen(block); err != nil {
				return 0, err
			}
		}
		total += n
	}
}

var errLZ4Block = errors.New("malformed lz4 block")

// lz4BlockLen is the decoded size of a compressed lz4 block, summed over
// its sequences (literal and match lengths) without decoding them.
func lz4BlockLen(src []byte) (int, error) {
	// extend reads the 255-continued length bytes of a length field of 15.
	extend := func(i, n int) (int, int, bool) {
		for {
			if i >= len(src) {
				return 0, 0, false
			}
			b := src[i]
			i++
			n += int(b)
			if b != 255 {
				return i, n, true
			}
		}
	}
	size := 0
	for i := 0; i < len(src); {
		token := src[i]
		i++
		lit, ok := int(token>>4), true
		if lit == 15 {
			if i, lit, ok = extend(i, lit); !ok {
				return 0, errLZ4Block
			}
		}
		if lit > len(src)-i {
			return 0, errLZ4Block
		}
		i += lit
		size += lit
		if i == len(src) {
			return size, nil // the last sequence is literals only
		}
		if len(src)-i < 2 {
			return 0, errLZ4Block
		}
		i += 2 // match offset
		match := int(token & 15)
		if match == 15 {
			if i, match, ok = extend(i, match); !ok {
				return 0, errLZ4Block
			}
		}
		size += match + 4
	}
	return size, nil
}

// lz4Block appends one compressed block. It is decoded straight into the
// free capacity, which a reused buffer has; else the buffer grows to the
// block's exact size first.
func (d *batchDecoder) lz4Block(dst, block, dict []byte, blockMax int) ([]byte, error) {
	remaining := d.maxDecompressed - len(dst)
	space := min(cap(dst)-len(dst), blockMax, max(remaining, 0))
	if space > 0 { // the library's assembly faults on an empty dst
		if n, err := lz4.UncompressBlockWithDict(block, dst[len(dst):len(dst)+space], dict); err == nil {
			return dst[:len(dst)+n], nil
		}
	}
	size, err := lz4BlockLen(block)
	switch {
	case err != nil:
		return nil, fmt.Errorf("lz4 block: %w", err)
	case size > remaining:
		return nil, errDecompressedTooLarge
	case size > blockMax:
		return nil, fmt.Errorf("lz4 block decodes to %d bytes, more than its frame's block size %d", size, blockMax)
	case size == 0:
		return dst, nil // an empty block (nothing to decode into)
	case size <= space:
		return nil, errLZ4Block // it had room and still failed
	}
	if cap(dst)-len(dst) < size {
		grown := slices.Grow(dst, size)
		if dict != nil {
			dict = grown[max(0, len(grown)-lz4WindowSize):]
		}
		dst = grown
	}
	n, err := lz4.UncompressBlockWithDict(block, dst[len(dst):len(dst)+size], dict)
	if err != nil {
		return nil, fmt.Errorf("lz4 block: %w", err)
	}
	return dst[:len(dst)+n], nil
}

// xxh32Short is XXH32 with seed 0 of fewer than 16 bytes (an lz4 frame
// descriptor), per the xxHash specification.
func xxh32Short(b []byte) uint32 {
	const (
		prime1 uint32 = 2654435761
		prime2 uint32 = 2246822519
		prime3 uint32 = 3266489917
		prime4 uint32 = 668265263
		prime5 uint32 = 374761393
	)
	h := prime5 + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * prime3
		h = bits.RotateLeft32(h, 17) * prime4
	}
	for _, c := range b {
		h += uint32(c) * prime5
		h = bits.RotateLeft32(h, 11) * prime1
	}
	h ^= h >> 15
	h *= prime2
	h ^= h >> 13
	h *= prime3
	h ^= h >> 16
	return h
}

// xerialHeader starts snappy data framed by xerial's SnappyOutputStream
// (Java, sarama, kafka-go); librdkafka and kgo send one raw snappy block.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialChunksOffset = 16 // header(8) + version(4) + compatible version(4)

func (d *batchDecoder) snappy(dst, src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialHeader) {
		return d.snappyBlock(dst, src)
	}
	if len(src) < xerialChunksOffset {
		return nil, errors.New("truncated xerial snappy header")
	}
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
		if dst, err = d.snappyBlock(dst, src[pos:pos+n]); err != nil {
			return nil, err
		}
		pos += n
	}
	return dst, nil
}

// snappyBlock appends one decoded raw snappy block to dst, checking the
// block's declared length before growing dst.
func (d *batchDecoder) snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > d.maxDecompressed-len(dst) {
		return nil, errDecompressedTooLarge
	}
	dst = slices.Grow(dst, n)
	if _, err := snappy.Decode(dst[len(dst):len(dst)+n], block); err != nil {
		return nil, err
	}
	return dst[:len(dst)+n], nil
}

// decodeRecords reads exactly n length-prefixed records from src into b.
// The decoded records may take at most maxBytes.
func (b *DecodedBatch) decodeRecords(src []byte, n int32, baseTimestamp int64, maxBytes int) error {
	if int64(n)*minRecordWireBytes > int64(len(src)) {
		return withMessage(ErrInvalidRecord, "record batch claims %d records but holds only %d bytes of records", n, len(src))
	}
	if int64(n)*decodedRecordBytes > int64(maxBytes) {
		// A Record takes ~88 bytes, over ten times the wire size of an
		// empty record: bound that memory too.
		return withMessage(ErrMessageTooLarge, "record batch of %d records decodes to more than %d bytes", n, maxBytes)
	}
	if cap(b.records) < int(n) {
		b.records = make([]Record, n)
	}
	records := b.records[:n]
	// Set before the loop: on failure Release clears what was written.
	b.Records = records
	for i := range records {
		length, l := kbin.Varint(src)
		if l <= 0 || length < minRecordWireBytes-1 || int64(length) > int64(len(src)-l) {
			return withMessage(ErrInvalidRecord, "record %d: invalid length", i)
		}
		body := src[l : l+int(length)]
		src = src[l+int(length):]
		if err := b.decodeRecord(body, &records[i], baseTimestamp); err != nil {
			return withMessage(ErrInvalidRecord, "record %d: %v", i, err)
		}
		records[i].Index = int32(i)
	}
	if len(src) != 0 {
		return withMessage(ErrInvalidRecord, "%d bytes left after the last of %d records", len(src), n)
	}
	return nil
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

// decodeRecord decodes one record body into rec, overwriting every field
// (rec is reused from an earlier batch). Headers go to b.headers.
func (b *DecodedBatch) decodeRecord(body []byte, rec *Record, baseTimestamp int64) error {
	r := recordReader{src: body}
	if len(r.src) < 1 {
		return errors.New("missing attributes")
	}
	r.src = r.src[1:] // attributes, unused
	*rec = Record{}
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
		start := len(b.headers)
		for range nh {
			k := r.bytes("header key", false)
			v := r.bytes("header value", true)
			if r.err != nil {
				return r.err
			}
			b.headers = append(b.headers, Header{Key: b.headerKey(k), Value: v})
		}
		rec.Headers = b.headers[start:len(b.headers):len(b.headers)]
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
