package fluss

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compressInputs are buffers around the LZ4 block size, compressible and
// not, and the tiny ones validity bitmaps are.
func compressInputs() map[string][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	text := func(n int) []byte {
		w := newCompressWorkload("raw", 1000, n/1000+1)
		return w.values[:n]
	}
	// Compressible first half, random second: one frame with both block kinds.
	mixed := append(text(lz4BlockSize), random(lz4BlockSize+100)...)
	return map[string][]byte{
		"1 byte": {0xff}, "bitmap": bytes.Repeat([]byte{0xff}, 313),
		"text 64K-1": text(lz4BlockSize - 1), "text 64K": text(lz4BlockSize), "text 64K+1": text(lz4BlockSize + 1),
		"text 1.3M": text(1300 << 10), "random 200K": random(200 << 10), "mixed": mixed,
	}
}

// The LZ4 frame written by hand is the frame lz4.Writer writes with the
// options of Fluss's FlussLZ4BlockOutputStream, and reads back.
func TestArrowLZ4FrameMatchesFrameWriter(t *testing.T) {
	for name, src := range compressInputs() {
		t.Run(name, func(t *testing.T) {
			prefix := []byte("xyz") // not at the start of dst, as in a batch
			got := appendLZ4Frame(new(lz4.Compressor), append([]byte(nil), prefix...), src)
			require.Equal(t, prefix, got[:len(prefix)])
			frame := got[len(prefix):]

			var want bytes.Buffer
			w := lz4.NewWriter(&want)
			require.NoError(t, w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.BlockChecksumOption(false), lz4.ConcurrencyOption(1)))
			_, err := w.Write(src)
			require.NoError(t, err)
			require.NoError(t, w.Close())
			assert.Equal(t, want.Bytes(), frame, "the bytes of the frame writer")

			back, err := io.ReadAll(lz4.NewReader(bytes.NewReader(frame)))
			require.NoError(t, err)
			assert.Equal(t, src, back)
		})
	}
}

// ZSTD buffers are single standard frames without a checksum (what libzstd
// writes by default, so what the Java client writes) and within the window
// a reader must support.
func TestArrowZstdFrames(t *testing.T) {
	c, err := NewArrowCompressor(ArrowCompressionZstd, 3)
	require.NoError(t, err)
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	for _, bufs := range [][][]byte{fullBufs, smallBufs, bothBufs} {
		enc, err := c.encoder(bufs)
		require.NoError(t, err)
		testArrowZstdFrames(t, enc, dec)
		enc.release()
	}
}

// Buffer sets that take the full zstd encoder, the small one, or both.
var (
	fullBufs  = [][]byte{make([]byte, zstdSmallBuffer)}
	smallBufs = [][]byte{make([]byte, minCompressedBuffer)}
	bothBufs  = [][]byte{make([]byte, minCompressedBuffer), make([]byte, zstdSmallBuffer)}
)

func testArrowZstdFrames(t *testing.T, enc batchEncoder, dec *zstd.Decoder) {
	for name, src := range compressInputs() {
		t.Run(fmt.Sprintf("%s/full=%v/small=%v", name, enc.zstd != nil, enc.zstdSmall != nil), func(t *testing.T) {
			buf := enc.appendCompressed([]byte("abc"), src)[3:]
			n := int64(leU64(buf, 0))
			if n == -1 {
				assert.Equal(t, src, buf[8:], "stored as is when it does not shrink")
				return
			}
			require.Equal(t, int64(len(src)), n)
			var h zstd.Header
			require.NoError(t, h.Decode(buf[8:]))
			assert.False(t, h.HasCheckSum)
			assert.True(t, h.HasFCS, "the frame says its content size")
			assert.LessOrEqual(t, h.WindowSize, uint64(zstdWindow))
			back, err := dec.DecodeAll(buf[8:], nil)
			require.NoError(t, err)
			assert.Equal(t, src, back)
		})
	}
}

// Buffers shorter than zstdSmallBuffer are compressed by a small encoder
// (no Huffman coding of literals), longer ones by the level's own; a batch
// takes only the kinds its buffers need, and both kinds read back.
func TestArrowZstdSmallBuffers(t *testing.T) {
	c, err := newArrowCompressor(ArrowCompressionZstd, 3, 1)
	require.NoError(t, err)
	s := Schema{Columns: []Column{{Name: "id", Type: Int()}, {Name: "v", Type: String()}}}
	b, err := NewArrowLogBuilder(&s, 1, ArrowCompressionZstd, 3, WithArrowCompressor(c))
	require.NoError(t, err)
	value := func(n int) string { return strings.Repeat(`{"user":"u-1234","event":"click"}`, n/33+1)[:n] }

	require.Len(t, c.zstd.full.idle, 1, "the level's first encoder, made at start")
	fullEnc := c.zstd.full.idle[0]
	out := buildOnce(t, b, []Row{{IntDatum(1), StringDatum(value(300))}, {IntDatum(2), StringDatum(value(300))}}, nil)
	require.NotEmpty(t, out)
	require.Len(t, c.zstd.small.idle, 1, "a batch of short buffers took a small encoder")
	smallEnc := c.zstd.small.idle[0]

	out = buildOnce(t, b, []Row{{IntDatum(3), StringDatum(value(zstdSmallBuffer + 10))}}, nil)
	require.NotEmpty(t, out)
	assert.Equal(t, []*zstd.Encoder{fullEnc}, c.zstd.full.idle)
	assert.Equal(t, []*zstd.Encoder{smallEnc}, c.zstd.small.idle, "no second small encoder made")

	enc, err := c.encoder(bothBufs)
	require.NoError(t, err)
	assert.Same(t, fullEnc, enc.zstd)
	assert.Same(t, smallEnc, enc.zstdSmall)
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	for _, n := range []int{minCompressedBuffer, 600, zstdSmallBuffer - 1, zstdSmallBuffer, 5000} {
		src := []byte(value(n))
		got := enc.appendCompressed(nil, src)
		require.Equal(t, uint64(n), leU64(got, 0), "%d bytes compressed, not stored as is", n)
		back, err := dec.DecodeAll(got[8:], nil)
		require.NoError(t, err)
		assert.Equal(t, src, back)
	}
	enc.release()
	assert.Empty(t, c.zstd.full.slots, "both slots given back")
	assert.Empty(t, c.zstd.small.slots)
}

// A buffer compression makes larger, or a small one, is stored as is behind
// -1; an empty one is the length 0 alone (Arrow Java's
// AbstractCompressionCodec reads both).
func TestArrowCompressedBufferPrefix(t *testing.T) {
	random := compressInputs()["random 200K"]
	for _, codec := range []ArrowCompression{ArrowCompressionLZ4, ArrowCompressionZstd} {
		c, err := NewArrowCompressor(codec, 3)
		require.NoError(t, err)
		enc, err := c.encoder(fullBufs)
		require.NoError(t, err)
		assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 0}, enc.appendCompressed(nil, nil), codec)
		got := enc.appendCompressed(nil, random)
		assert.Equal(t, ^uint64(0), leU64(got, 0), codec)
		assert.Equal(t, random, got[8:], codec)
		// Below minCompressedBuffer even a buffer of zeros is stored as is;
		// at it, zeros are compressed.
		small := make([]byte, minCompressedBuffer-1)
		got = enc.appendCompressed(nil, small)
		assert.Equal(t, ^uint64(0), leU64(got, 0), codec)
		assert.Equal(t, small, got[8:], codec)
		got = enc.appendCompressed(nil, make([]byte, minCompressedBuffer))
		assert.Equal(t, uint64(minCompressedBuffer), leU64(got, 0), codec)
		assert.Less(t, len(got), 8+minCompressedBuffer, codec)
		enc.release()
	}
}

// Batches appended after bytes that are not a multiple of 8 keep their
// body buffers 8-aligned relative to the body, for every codec.
func TestArrowBatchAfterUnalignedPrefix(t *testing.T) {
	w := newCompressWorkload("json", 100, 300)
	for _, codec := range arrowCodecs {
		b, err := NewArrowLogBuilder(w.schema, 1, codec, 3)
		require.NoError(t, err)
		for _, r := range w.rows {
			require.NoError(t, b.Append(r))
		}
		aligned, err := b.AppendTo(nil)
		require.NoError(t, err)
		shifted, err := b.AppendTo([]byte("12345"))
		require.NoError(t, err)
		assert.Equal(t, aligned, shifted[5:], codec)
		recs, err := DecodeLogBatches(shifted[5:], w.schema)
		require.NoError(t, err)
		got := make([]Row, len(recs))
		for i := range recs {
			got[i] = recs[i].Row
		}
		requireRowsEqual(t, w.rows, got)
	}
}

// Building a batch allocates nothing once the builder's buffers and the
// table's compressor are warm: the compressed body goes straight into dst.
func TestArrowBuildAllocatesNothing(t *testing.T) {
	if raceBuild() {
		t.Skip("the race detector's instrumentation allocates")
	}
	for _, w := range compressWorkloads() {
		for _, codec := range arrowCodecs {
			comp, err := NewArrowCompressor(codec, 3)
			require.NoError(t, err)
			b, err := NewArrowLogBuilder(w.schema, 1, codec, 3, WithArrowCompressor(comp))
			require.NoError(t, err)
			out := make([]byte, 0, 2*len(w.values)+4096)
			out = buildOnce(t, b, w.rows, out)
			allocs := testing.AllocsPerRun(5, func() { out = buildOnce(t, b, w.rows, out) })
			// A GC may empty the LZ4 compressor pool once.
			assert.Less(t, allocs, 1.0, "%s %s", w.name, codec)
		}
	}
}

// A table's zstd encoders are made when first needed, at most one per
// concurrent batch, and the most recently released one is taken next, so
// that a lone sender keeps compressing with the same cache-warm encoder.
func TestArrowZstdEncodersReusedLastInFirstOut(t *testing.T) {
	c, err := newArrowCompressor(ArrowCompressionZstd, 3, 2)
	require.NoError(t, err)
	made := 0
	inner := c.zstd.full.make
	c.zstd.full.make = func() (*zstd.Encoder, error) { made++; return inner() }

	first, err := c.encoder(fullBufs)
	require.NoError(t, err)
	first.release()
	again, err := c.encoder(fullBufs)
	require.NoError(t, err)
	assert.Same(t, first.zstd, again.zstd, "the idle encoder is reused")
	second, err := c.encoder(fullBufs)
	require.NoError(t, err)
	assert.NotSame(t, again.zstd, second.zstd, "a concurrent batch gets its own")
	assert.Equal(t, 1, made, "one made for the second batch, besides the compressor's first")

	third := make(chan batchEncoder)
	go func() {
		e, err := c.encoder(fullBufs)
		assert.NoError(t, err)
		third <- e
	}()
	select {
	case <-third:
		t.Fatal("a third encoder while the bound of 2 is in use")
	case <-time.After(50 * time.Millisecond):
	}
	second.release()
	got := <-third
	assert.Same(t, second.zstd, got.zstd, "the waiting batch takes the released encoder")
	got.release()
	again.release()
	last, err := c.encoder(fullBufs)
	require.NoError(t, err)
	assert.Same(t, again.zstd, last.zstd, "last in, first out")
	last.release()
	assert.Equal(t, 1, made)
}

// Tables' compressors taken from one ArrowEncoders share its encoders: a
// thousand tables compressing one batch each, in turn, make one zstd
// encoder per level, not one per table, while each table keeps its own
// compression-ratio estimate.
func TestArrowEncodersSharedBetweenTables(t *testing.T) {
	enc := newArrowEncoders(2)
	made := 0
	p, err := enc.zstdLevel(3)
	require.NoError(t, err)
	inner := p.full.make
	p.full.make = func() (*zstd.Encoder, error) { made++; return inner() }

	s := Schema{Columns: []Column{{Name: "id", Type: Int()}, {Name: "v", Type: String()}}}
	comps := make([]*ArrowCompressor, 1000)
	for i := range comps {
		comps[i], err = enc.Compressor(ArrowCompressionZstd, 3)
		require.NoError(t, err)
		b, err := NewArrowLogBuilder(&s, 1, ArrowCompressionZstd, 3, WithArrowCompressor(comps[i]))
		require.NoError(t, err)
		v := strings.Repeat(string(rune('a'+i%26)), zstdSmallBuffer+i%7)
		out := buildOnce(t, b, []Row{{IntDatum(int64(i)), StringDatum(v)}}, nil)
		require.NotEmpty(t, out)
	}
	assert.Zero(t, made, "every table compressed with the level's first encoder")
	assert.Same(t, comps[0].zstd, comps[999].zstd, "one zstd pool per level")

	other, err := enc.Compressor(ArrowCompressionZstd, 1)
	require.NoError(t, err)
	assert.NotSame(t, comps[0].zstd, other.zstd, "another level, other encoders")

	before := comps[1].estimatedRatio()
	comps[0].observeRatio(2)
	assert.InDelta(t, 2, comps[0].estimatedRatio(), 1e-9)
	assert.InDelta(t, before, comps[1].estimatedRatio(), 1e-9, "ratio estimates stay per table")

	_, err = enc.Compressor(ArrowCompression("brotli"), 0)
	require.Error(t, err)
}

// raceBuild reports a -race build.
func raceBuild() bool {
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
