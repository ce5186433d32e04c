package fluss

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The Arrow IPC framing of an ARROW log batch, written by hand.
//
// Fluss stores exactly one encapsulated RecordBatch message after the batch
// header, with no Schema message and no end-of-stream marker (Java:
// ArrowWriter.serializeToOutputView → MessageSerializer.serialize with
// VectorUnloader(root, includeNullCount=true, codec, alignBuffers=true)):
//
//	0xFFFFFFFF continuation · int32 LE metadata length M · M bytes of
//	flatbuffer Message{version V5, header RecordBatch, bodyLength} padded
//	so 8+M is a multiple of 8 · body: each buffer at an 8-aligned offset,
//	total padded to 8.
//
// Why not arrow-go's ipc.GetRecordBatchPayload: it (1) drops the validity
// bitmap of columns without nulls (a zero-length buffer), where Java always
// writes it; (2) cannot take the table's zstd level; (3) builds new
// compressors and an arrow.RecordBatch per call. So the columns are kept in
// Arrow's buffer layout by ArrowLogBuilder, and this file writes the
// flatbuffer and the per-buffer compression itself. arrow-go's IPC reader
// reads the result back in the tests (arrow_crosscheck_test.go).
//
// Compression (Arrow BodyCompression, method BUFFER): each buffer is an
// int64 LE uncompressed length and the compressed bytes; -1 means the bytes
// follow uncompressed (used when compression does not pay, as Arrow Java
// does); an empty buffer is the 8-byte prefix 0 (Arrow Java's
// AbstractCompressionCodec.compress). ZSTD is a standard zstd frame; LZ4 is
// an LZ4 frame with 64 KiB independent blocks and no checksums, which
// Fluss's FlussLZ4BlockInputStream accepts. NONE writes no compression
// field.

type arrowNode struct{ length, nulls int64 }

type arrowSpan struct{ offset, length int64 }

// Flatbuffer enum values (Arrow format/Message.fbs, Schema.fbs).
const (
	fbMetadataV5         = 4
	fbHeaderRecordBatch  = 3
	fbCompressionLZ4     = 0
	fbCompressionZSTD    = 1
	arrowContinuation    = 0xffffffff
	maxArrowUncompressed = 1 << 26 // decoder limit per buffer
	maxArrowDecodeCells  = 1 << 22 // decoder limit of rows x columns per batch
)

// ArrowCompressor compresses Arrow body buffers with one codec and keeps
// the compression-ratio estimate EstimatedSize uses. It is safe for
// concurrent use; share one per table between that table's ArrowLogBuilders
// (WithArrowCompressor), as the Java client shares its per-table estimator:
// a zstd encoder holds about 1.3 MiB.
type ArrowCompressor struct {
	codec ArrowCompression
	zstd  *zstd.Encoder
	lz4   sync.Pool     // *lz4.Writer
	ratio atomic.Uint64 // float64 bits: estimated compressed/uncompressed body size
}

// NewArrowCompressor returns a compressor for codec, to share between
// builders; zstdLevel (1..22, default 3) applies to ZSTD.
func NewArrowCompressor(codec ArrowCompression, zstdLevel int) (*ArrowCompressor, error) {
	return newArrowCompressor(codec, zstdLevel, min(runtime.GOMAXPROCS(0), 4))
}

func newArrowCompressor(codec ArrowCompression, zstdLevel, concurrency int) (*ArrowCompressor, error) {
	c := &ArrowCompressor{codec: codec}
	c.ratio.Store(math.Float64bits(1))
	switch codec {
	case ArrowCompressionNone:
	case ArrowCompressionLZ4:
		c.lz4.New = func() any {
			w := lz4.NewWriter(nil)
			// Errors are impossible for these constant options.
			_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.BlockChecksumOption(false), lz4.ConcurrencyOption(1))
			return w
		}
	case ArrowCompressionZstd:
		if zstdLevel <= 0 {
			zstdLevel = 3
		}
		// A 1 MiB window keeps each encoder near 3 MiB instead of about 10:
		// a table's compressor lives as long as the gateway, and Arrow body
		// buffers of a batch are rarely larger, so the ratio barely moves.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(zstdLevel)),
			zstd.WithEncoderConcurrency(concurrency), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(1<<20))
		if err != nil {
			return nil, fmt.Errorf("create zstd encoder: %w", err)
		}
		c.zstd = enc
	default:
		return nil, fmt.Errorf("fluss: unknown arrow compression %q", codec)
	}
	return c, nil
}

// estimatedRatio returns the current compressed/uncompressed estimate.
func (c *ArrowCompressor) estimatedRatio() float64 { return math.Float64frombits(c.ratio.Load()) }

// observeRatio follows the Java client's ArrowCompressionRatioEstimator in
// spirit: move up at once when compression got worse, drift down slowly
// when it got better.
func (c *ArrowCompressor) observeRatio(observed float64) {
	for {
		old := c.ratio.Load()
		cur := math.Float64frombits(old)
		next := observed
		if observed < cur {
			next = math.Max(observed, cur-0.005)
		}
		if c.ratio.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// flatbufCodec is the BodyCompression codec, or -1 for none.
func (c *ArrowCompressor) flatbufCodec() int {
	switch c.codec {
	case ArrowCompressionLZ4:
		return fbCompressionLZ4
	case ArrowCompressionZstd:
		return fbCompressionZSTD
	}
	return -1
}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// appendCompressed appends one compressed buffer (with its length prefix).
func (c *ArrowCompressor) appendCompressed(dst, src []byte) ([]byte, error) {
	start := len(dst)
	dst = leAppendU64(dst, uint64(len(src)))
	if len(src) == 0 {
		return dst, nil
	}
	switch c.codec {
	case ArrowCompressionZstd:
		dst = c.zstd.EncodeAll(src, dst)
	case ArrowCompressionLZ4:
		w := c.lz4.Get().(*lz4.Writer)
		aw := appendWriter{b: dst}
		w.Reset(&aw)
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		w.Reset(nil)
		c.lz4.Put(w)
		if err != nil {
			return dst[:start], fmt.Errorf("lz4 compress: %w", err)
		}
		dst = aw.b
	}
	if len(dst)-start-8 > len(src) {
		dst = leAppendU64(dst[:start], ^uint64(0))
		dst = append(dst, src...)
	}
	return dst, nil
}

// arrowMetadataSize is the padded flatbuffer size M written by
// appendFlatbufMessage for a batch with nodes field nodes and nbufs buffers.
func arrowMetadataSize(nodes, nbufs int, compressed bool) int {
	p := 72
	if compressed {
		p = 88
	}
	for (p+4)%8 != 0 {
		p++
	}
	q := p + 4 + 16*nodes
	for (q+4)%8 != 0 {
		q++
	}
	return pad8(q + 4 + 16*nbufs)
}

// appendFlatbufMessage appends the flatbuffer Message (padded to its
// arrowMetadataSize). Layout, positions relative to the flatbuffer start:
//
//	 0 root uoffset → Message table at 16
//	 4 Message vtable (4 fields, 12 bytes)
//	16 Message table: soffset, header uoffset@20, bodyLength@24, version@32, header_type@34
//	36 RecordBatch vtable (4 fields, 12 bytes)
//	48 RecordBatch table: soffset, nodes@52, length@56, buffers@64, compression@68
//	72 BodyCompression vtable (2 fields, 8 bytes)   -- only when compressed
//	80 BodyCompression table: soffset, codec@84, method@85
//	then the nodes vector and the buffers vector, each with 8-aligned structs.
//
// Every uoffset points forward; every scalar is naturally aligned, so
// verifying readers (arrow-rs) accept it.
func appendFlatbufMessage(dst []byte, rows int64, nodes []arrowNode, spans []arrowSpan, codec int, bodyLen int64) []byte {
	compressed := codec >= 0
	size := arrowMetadataSize(len(nodes), len(spans), compressed)
	base := len(dst)
	dst = append(dst, make([]byte, size)...)
	fb := dst[base:]
	lePutU32(fb, 0, 16)
	// Message vtable
	lePutU16(fb, 4, 12)
	lePutU16(fb, 6, 20)
	lePutU16(fb, 8, 16)  // version
	lePutU16(fb, 10, 18) // header_type
	lePutU16(fb, 12, 4)  // header
	lePutU16(fb, 14, 8)  // bodyLength
	// Message table
	lePutU32(fb, 16, 12)
	lePutU32(fb, 20, 48-20)
	lePutU64(fb, 24, uint64(bodyLen))
	lePutU16(fb, 32, fbMetadataV5)
	fb[34] = fbHeaderRecordBatch
	// RecordBatch vtable
	lePutU16(fb, 36, 12)
	lePutU16(fb, 38, 24)
	lePutU16(fb, 40, 8)  // length
	lePutU16(fb, 42, 4)  // nodes
	lePutU16(fb, 44, 16) // buffers
	p := 72
	if compressed {
		lePutU16(fb, 46, 20) // compression
		lePutU16(fb, 72, 8)
		lePutU16(fb, 74, 8)
		lePutU16(fb, 76, 4) // codec
		lePutU16(fb, 78, 5) // method
		lePutU32(fb, 80, 8)
		fb[84] = byte(codec)
		fb[85] = 0 // BUFFER
		lePutU32(fb, 68, 80-68)
		p = 88
	}
	// RecordBatch table
	lePutU32(fb, 48, 12)
	lePutU64(fb, 56, uint64(rows))
	for (p+4)%8 != 0 {
		p++
	}
	lePutU32(fb, 52, uint32(p-52))
	lePutU32(fb, p, uint32(len(nodes)))
	e := p + 4
	for _, n := range nodes {
		lePutU64(fb, e, uint64(n.length))
		lePutU64(fb, e+8, uint64(n.nulls))
		e += 16
	}
	q := e
	for (q+4)%8 != 0 {
		q++
	}
	lePutU32(fb, 64, uint32(q-64))
	lePutU32(fb, q, uint32(len(spans)))
	e = q + 4
	for _, s := range spans {
		lePutU64(fb, e, uint64(s.offset))
		lePutU64(fb, e+8, uint64(s.length))
		e += 16
	}
	return dst
}

// appendMessage appends the encapsulated RecordBatch message for the
// builder's current buffers (b.bufs, in depth-first buffer order).
func (b *ArrowLogBuilder) appendMessage(dst []byte, nodes []arrowNode) ([]byte, error) {
	codec := b.comp.flatbufCodec()
	b.spans = b.spans[:0]
	var bodyLen int64
	if codec >= 0 {
		// Compress first: the metadata records the compressed lengths.
		b.body = b.body[:0]
		for _, buf := range b.bufs {
			off := len(b.body)
			var err error
			b.body, err = b.comp.appendCompressed(b.body, buf)
			if err != nil {
				return dst, err
			}
			b.spans = append(b.spans, arrowSpan{offset: int64(off), length: int64(len(b.body) - off)})
			for len(b.body)%8 != 0 {
				b.body = append(b.body, 0)
			}
		}
		bodyLen = int64(len(b.body))
	} else {
		for _, buf := range b.bufs {
			b.spans = append(b.spans, arrowSpan{offset: bodyLen, length: int64(len(buf))})
			bodyLen += int64(pad8(len(buf)))
		}
	}
	dst = leAppendU32(dst, arrowContinuation)
	dst = leAppendU32(dst, uint32(b.metaLen))
	dst = appendFlatbufMessage(dst, int64(b.count), nodes, b.spans, codec, bodyLen)
	if codec >= 0 {
		return append(dst, b.body...), nil
	}
	for _, buf := range b.bufs {
		dst = append(dst, buf...)
		for k := len(buf); k%8 != 0; k++ {
			dst = append(dst, 0)
		}
	}
	return dst, nil
}
