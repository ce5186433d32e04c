package fluss

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression of Arrow body buffers (Arrow IPC BodyCompression, method
// BUFFER: every buffer is compressed on its own, behind its int64 LE
// uncompressed length, or stored as is behind -1 when compression would
// make it larger, as Arrow Java's AbstractCompressionCodec does; Fluss's
// reader decompresses exactly that).
//
// What the codecs cost, and why the settings below (figures from
// BenchmarkArrowCompression and BenchmarkArrowCompressionCost): nearly all
// the time is the codec's own match search and entropy coding of the one
// large buffer of a batch (the payload's data); compressing the buffers one
// by one costs no more than compressing the Kafka values in one call of the
// same library. What cost more than the codec needs was around it:
//
//   - ZSTD: one EncodeAll per buffer, every buffer of a batch with the same
//     encoder (zstdEncoders says why), shared between tables (ArrowEncoders). Level n maps with
//     zstd.EncoderLevelFromZstd (3 → SpeedDefault), which compresses these
//     buffers at least as well as libzstd's level 3, what the Java client
//     writes (zstd-jni Zstd.compressDirectByteBuffer at
//     table.log.arrow.compression.zstd.level); levels 1 and 2 give
//     SpeedFastest, about 0.65× the CPU for 2 to 8 % more bytes. The frames
//     carry no checksum (libzstd's default, so the Java client writes none
//     either): it is a second pass over the data, and the batch has its own
//     CRC. The window is 512 KiB with the low-memory history: with a 1 MiB
//     window that history moves 1 MiB down for every 128 KiB block of a
//     larger buffer, which made the multi-MiB payload buffers of a full
//     batch of 1 KB values about 1.5× slower to compress; the ratio on log
//     data does not depend on the window beyond a few hundred KiB.
//   - LZ4: the LZ4 frame Fluss's FlussLZ4BlockOutputStream writes (64 KiB
//     independent blocks, no checksums, no content size), written here
//     around lz4.Compressor.CompressBlock so that blocks go straight into
//     the batch: the frame writer (lz4.Writer) copied every block into and
//     out of buffers of its own and allocated 14 objects per batch. The
//     bytes are the frame writer's (TestArrowLZ4FrameMatchesFrameWriter).

// zstdWindow is the ZSTD encoder's window; see above.
const zstdWindow = 512 << 10

// lz4BlockSize is the LZ4 frame's maximum block size (BD byte 0x40).
const lz4BlockSize = 64 << 10

// lz4FrameHeader is the LZ4 frame header of Fluss's writer: magic, FLG 0x60
// (version 1, independent blocks, no block or content checksum, no content
// size), BD 0x40 (64 KiB blocks), and the header checksum byte
// (xxh32(FLG BD) >> 8); lz4 Frame Format Description, "Frame descriptor".
const lz4FrameHeader = "\x04\x22\x4d\x18\x60\x40\x82"

// lz4Uncompressed flags an LZ4 frame block stored as is.
const lz4Uncompressed = 1 << 31

// ArrowCompressor compresses Arrow body buffers with one codec and keeps
// the compression-ratio estimate EstimatedSize uses. It is safe for
// concurrent use; share one per table between that table's ArrowLogBuilders
// (WithArrowCompressor), as the Java client shares its per-table estimator.
// Its encoders come from an [ArrowEncoders], shared between tables when the
// compressor was made by [ArrowEncoders.Compressor].
type ArrowCompressor struct {
	codec ArrowCompression
	zstd  *zstdEncoders
	lz4   *sync.Pool    // *lz4.Compressor: its 136 KiB hash table, reused
	ratio atomic.Uint64 // float64 bits: estimated compressed/uncompressed body size
}

// ArrowEncoders holds the compression encoders that tables' compressors
// share: for each zstd level at most concurrency encoders, and LZ4's hash
// tables in a pool. Encoders are what a table's compression costs in memory
// (a zstd encoder holds 0.7 to 2.4 MiB); kept per table, they made memory
// grow with the number of tables written, outside the writer's memory
// budget, while compressing is CPU work that never runs on more batches at
// once than there are CPUs. Shared, they cost the same for one table or a
// thousand, and an idle table holds none. Safe for concurrent use.
type ArrowEncoders struct {
	concurrency int
	lz4         sync.Pool

	mu   sync.Mutex
	zstd map[int]*zstdEncoders // by zstd level
}

// NewArrowEncoders returns encoders to share between tables, at most
// GOMAXPROCS zstd encoders per level.
func NewArrowEncoders() *ArrowEncoders { return newArrowEncoders(runtime.GOMAXPROCS(0)) }

func newArrowEncoders(concurrency int) *ArrowEncoders {
	e := &ArrowEncoders{concurrency: max(concurrency, 1), zstd: make(map[int]*zstdEncoders)}
	e.lz4.New = func() any { return new(lz4.Compressor) }
	return e
}

// zstdEncoders holds the zstd encoders of one level, each of concurrency 1,
// made when first needed and at most one per concurrent batch (slots). A
// batch takes one encoder for all its buffers, and the idle ones are reused
// last in, first out: a zstd.Encoder of concurrency N hands its N encoders
// out in turn, so every buffer landed on the encoder whose tables and
// history were least recently in the CPU's caches, which measured 1.3 to 2
// times the CPU of reusing one (BenchmarkArrowCompressionCost).
//
// Buffers shorter than zstdSmallBuffer go to a *small* encoder instead:
// the fastest match search, and literals stored without Huffman coding.
// On buffers of a few hundred bytes building the Huffman table was half of
// each call's cost, a fixed few µs, and with 500 tables (batches of about
// 30 records, half a dozen such buffers each) compression was a third of
// the gateway's CPU (docs/benchmarks.md, 7 Dec 2026). The frames are
// ordinary ZSTD frames, a little larger. A batch that needs both kinds
// takes the small one first, so that batches waiting for slots cannot hold
// one kind each while waiting for the other.
type zstdEncoders struct {
	full, small zstdPool
}

// zstdPool is one kind of encoder of a level.
type zstdPool struct {
	make  func() (*zstd.Encoder, error)
	slots chan struct{} // one per encoder in use
	mu    sync.Mutex
	idle  []*zstd.Encoder // most recently used last
}

func (p *zstdPool) get() (*zstd.Encoder, error) {
	p.slots <- struct{}{}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		e := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return e, nil
	}
	p.mu.Unlock()
	e, err := p.make()
	if err != nil {
		<-p.slots
		return nil, fmt.Errorf("create zstd encoder: %w", err)
	}
	return e, nil
}

func (p *zstdPool) put(e *zstd.Encoder) {
	p.mu.Lock()
	p.idle = append(p.idle, e)
	p.mu.Unlock()
	<-p.slots
}

// zstdSmallBuffer: a buffer shorter than this goes to a small encoder
// (zstdEncoders). Of JSON text, the small encoder's frames were 0.72 of
// 247 bytes against the full encoder's 0.57, in 1.2 against 3.8 µs, and
// 0.41 of 991 bytes against 0.29, in 2.7 against 5.7 µs: at 24 ns of CPU
// per byte saved, Huffman coding is not worth it below 1 KiB.
const zstdSmallBuffer = 1 << 10

// zstdLevel returns the encoders of one level, made on first use; the
// first encoder is made at once, so that a bad level fails here, not on a
// batch.
func (e *ArrowEncoders) zstdLevel(level int) (*zstdEncoders, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.zstd[level]; p != nil {
		return p, nil
	}
	opts := []zstd.EOption{
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true),
		zstd.WithWindowSize(zstdWindow),
	}
	small := []zstd.EOption{
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithNoEntropyCompression(true),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true),
		zstd.WithWindowSize(zstdWindow),
	}
	p := &zstdEncoders{
		full:  zstdPool{make: func() (*zstd.Encoder, error) { return zstd.NewWriter(nil, opts...) }, slots: make(chan struct{}, e.concurrency)},
		small: zstdPool{make: func() (*zstd.Encoder, error) { return zstd.NewWriter(nil, small...) }, slots: make(chan struct{}, e.concurrency)},
	}
	enc, err := p.full.get()
	if err != nil {
		return nil, err
	}
	p.full.put(enc)
	e.zstd[level] = p
	return p, nil
}

// Compressor returns a compressor for one table: its own ratio estimate,
// these shared encoders. zstdLevel (1..22, default 3) applies to ZSTD.
func (e *ArrowEncoders) Compressor(codec ArrowCompression, zstdLevel int) (*ArrowCompressor, error) {
	c := &ArrowCompressor{codec: codec}
	c.ratio.Store(math.Float64bits(1))
	switch codec {
	case ArrowCompressionNone:
	case ArrowCompressionLZ4:
		c.lz4 = &e.lz4
	case ArrowCompressionZstd:
		if zstdLevel <= 0 {
			zstdLevel = 3
		}
		p, err := e.zstdLevel(zstdLevel)
		if err != nil {
			return nil, err
		}
		c.zstd = p
	default:
		return nil, fmt.Errorf("fluss: unknown arrow compression %q", codec)
	}
	return c, nil
}

// NewArrowCompressor returns a compressor for codec with encoders of its
// own, to share between builders; zstdLevel (1..22, default 3) applies to
// ZSTD. Many tables should take theirs from one [ArrowEncoders].
func NewArrowCompressor(codec ArrowCompression, zstdLevel int) (*ArrowCompressor, error) {
	return newArrowCompressor(codec, zstdLevel, min(runtime.GOMAXPROCS(0), 4))
}

// newArrowCompressor: concurrency bounds the zstd encoders (batches
// compressed at once; more wait).
func newArrowCompressor(codec ArrowCompression, zstdLevel, concurrency int) (*ArrowCompressor, error) {
	return newArrowEncoders(concurrency).Compressor(codec, zstdLevel)
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

// batchEncoder is what one batch compresses its buffers with: the
// compressor's encoders it needs, taken for the whole batch.
type batchEncoder struct {
	c         *ArrowCompressor
	zstd      *zstd.Encoder // buffers of zstdSmallBuffer bytes or more
	zstdSmall *zstd.Encoder // shorter buffers
	lz4       *lz4.Compressor
}

// encoder takes the encoders for one batch whose buffers are bufs;
// release them after the batch.
func (c *ArrowCompressor) encoder(bufs [][]byte) (batchEncoder, error) {
	e := batchEncoder{c: c}
	switch c.codec {
	case ArrowCompressionZstd:
		needSmall, needFull := false, false
		for _, b := range bufs {
			needSmall = needSmall || (len(b) >= minCompressedBuffer && len(b) < zstdSmallBuffer)
			needFull = needFull || len(b) >= zstdSmallBuffer
		}
		var err error
		if needSmall { // small first: see zstdEncoders
			if e.zstdSmall, err = c.zstd.small.get(); err != nil {
				return e, err
			}
		}
		if needFull {
			if e.zstd, err = c.zstd.full.get(); err != nil {
				e.release()
				return batchEncoder{c: c}, err
			}
		}
	case ArrowCompressionLZ4:
		e.lz4 = c.lz4.Get().(*lz4.Compressor)
	}
	return e, nil
}

func (e batchEncoder) release() {
	if e.zstd != nil {
		e.c.zstd.full.put(e.zstd)
	}
	if e.zstdSmall != nil {
		e.c.zstd.small.put(e.zstdSmall)
	}
	if e.lz4 != nil {
		e.c.lz4.Put(e.lz4)
	}
}

// minCompressedBuffer is the smallest buffer handed to the codec; smaller
// ones are stored as is. A ZSTD frame spends 9 bytes on its headers and an
// LZ4 frame 15, so they seldom shrink, and the codec's set-up per call cost
// more than their bytes: a batch of a record or two (a small producer's
// Kafka batch on the exactly-once path) is nearly all such buffers.
const minCompressedBuffer = 64

// appendCompressed appends one body buffer: its uncompressed length and
// the compressed bytes, or -1 and src when compressing does not shrink it
// or src is shorter than minCompressedBuffer. An empty buffer is the length
// 0 alone.
func (e batchEncoder) appendCompressed(dst, src []byte) []byte {
	start := len(dst)
	if len(src) == 0 {
		return leAppendU64(dst, 0)
	}
	if len(src) < minCompressedBuffer {
		return append(leAppendU64(dst, ^uint64(0)), src...)
	}
	dst = leAppendU64(dst, uint64(len(src)))
	switch {
	case e.zstd != nil || e.zstdSmall != nil:
		enc := e.zstd
		if e.zstdSmall != nil && (len(src) < zstdSmallBuffer || enc == nil) {
			enc = e.zstdSmall
		}
		dst = enc.EncodeAll(src, dst)
	case e.lz4 != nil:
		dst = appendLZ4Frame(e.lz4, dst, src)
	}
	if len(dst)-start-8 > len(src) {
		dst = leAppendU64(dst[:start], ^uint64(0))
		dst = append(dst, src...)
	}
	return dst
}

// appendLZ4Frame appends src as one LZ4 frame (lz4FrameHeader, blocks of
// at most 64 KiB each behind its uint32 LE size, a block that does not
// shrink stored as is with lz4Uncompressed set, then the end mark 0).
func appendLZ4Frame(comp *lz4.Compressor, dst, src []byte) []byte {
	dst = append(dst, lz4FrameHeader...)
	for len(src) > 0 {
		blk := src[:min(len(src), lz4BlockSize)]
		src = src[len(blk):]
		at := len(dst)
		bound := lz4.CompressBlockBound(len(blk))
		dst = slices.Grow(dst, 4+bound)[:at+4+bound]
		// With a CompressBlockBound destination it cannot fail; treat any
		// refusal as incompressible rather than as an error.
		n, err := comp.CompressBlock(blk, dst[at+4:])
		if err != nil || n <= 0 || n >= len(blk) {
			dst = leAppendU32(dst[:at], uint32(len(blk))|lz4Uncompressed)
			dst = append(dst, blk...)
			continue
		}
		lePutU32(dst, at, uint32(n))
		dst = dst[:at+4+n]
	}
	return leAppendU32(dst, 0)
}
