package fluss

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// Readers other than ours decode the compressed buffers of every path in
// arrow_compress.go: LZ4 frames of many blocks, some stored as is; ZSTD
// frames larger than the encoder's window (several blocks, matches into
// the history); buffers stored as is behind -1 because they do not shrink;
// tiny buffers. The batches are built as the gateway builds them, with a
// table's shared compressor.

var compressedBuffersSchema = &Schema{Columns: []Column{
	{Name: "id", Type: BigInt().NonNull()},
	{Name: "payload", Type: String()}, // ~1 KB of text: 1.2 MB per batch, over the zstd window
	{Name: "blob", Type: Bytes()},     // text, then random: LZ4 blocks compressed and stored as is
	{Name: "noise", Type: Bytes()},    // random: stored as is behind -1
	{Name: "ok", Type: Boolean()},
}}

// Buffer indexes of compressedBuffersSchema's data buffers.
const (
	cbPayloadData = 4
	cbBlobData    = 7
	cbNoiseData   = 10
)

// compressedBuffersBatches builds a large batch and a 3-row one for codec.
func compressedBuffersBatches(t *testing.T, schemaID int32, codec ArrowCompression) ([][]byte, []Row) {
	t.Helper()
	text := newCompressWorkload("raw", 1000, 1200)
	r := rand.New(rand.NewPCG(5, 6))
	var rows []Row
	random := func(n int) []byte {
		b := make([]byte, n)
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		return b
	}
	for i := range 1203 {
		blob := text.rows[(i+1)%len(text.rows)][0].B[:700]
		if i >= 600 {
			blob = random(700)
		}
		row := Row{IntDatum(int64(i)), text.rows[i%len(text.rows)][0], BytesDatum(blob), BytesDatum(random(64)), BoolDatum(r.IntN(2) == 0)}
		if i%7 == 0 {
			row[1] = NullDatum()
		}
		rows = append(rows, row)
	}
	comp, err := NewArrowCompressor(codec, 3)
	require.NoError(t, err)
	b, err := NewArrowLogBuilder(compressedBuffersSchema, schemaID, codec, 3, WithArrowCompressor(comp))
	require.NoError(t, err)
	var out [][]byte
	for _, part := range [][]Row{rows[:1200], rows[1200:]} {
		b.Reset()
		for _, row := range part {
			require.NoError(t, b.Append(row))
		}
		batch, err := b.AppendTo(nil)
		require.NoError(t, err)
		out = append(out, batch)
	}
	return out, rows
}

// The batches take the paths they are meant to.
func TestCompressedBuffersBatchesTakeEveryPath(t *testing.T) {
	for _, codec := range []ArrowCompression{ArrowCompressionLZ4, ArrowCompressionZstd} {
		batches, _ := compressedBuffersBatches(t, 1, codec)
		msg, err := parseArrowMessage(batches[0][logV0HeaderSize:])
		require.NoError(t, err)
		buffer := func(i int) (int64, []byte) {
			b := msg.body[msg.spans[i].offset : msg.spans[i].offset+msg.spans[i].length]
			return int64(leU64(b, 0)), b[8:]
		}
		n, _ := buffer(cbNoiseData)
		require.Equal(t, int64(-1), n, "%s: random bytes stored as is", codec)
		switch codec {
		case ArrowCompressionZstd:
			n, frame := buffer(cbPayloadData)
			var h zstd.Header
			require.NoError(t, h.Decode(frame))
			require.Greater(t, n, int64(zstdWindow), "payload data larger than the window")
			require.Equal(t, uint64(zstdWindow), h.WindowSize, "a windowed frame, matches into the history")
			require.Less(t, len(frame), int(n)/2)
		case ArrowCompressionLZ4:
			n, frame := buffer(cbBlobData)
			require.Greater(t, n, int64(0))
			raw, packed := 0, 0
			for p := len(lz4FrameHeader); ; {
				size := leU32(frame, p)
				if size == 0 {
					break
				}
				if size&lz4Uncompressed != 0 {
					raw++
				} else {
					packed++
				}
				p += 4 + int(size&^lz4Uncompressed)
			}
			require.Positive(t, raw, "blocks stored as is")
			require.Positive(t, packed, "compressed blocks")
		}
	}
}

func TestJavaOracleReadsCompressedBuffers(t *testing.T) {
	s := compressedBuffersSchema
	forEachJavaOracle(t, func(t *testing.T, o *javaOracle) {
		for _, codec := range arrowCodecs {
			t.Run(string(codec), func(t *testing.T) {
				batches, rows := compressedBuffersBatches(t, 3, codec)
				path := filepath.Join(t.TempDir(), "batches.bin")
				require.NoError(t, os.WriteFile(path, append(batches[0], batches[1]...), 0o644))
				out := o.golden(t, javaSchemaLine(s)+"\n", "read", string(LogFormatArrow), path, "3")
				lines := strings.Split(strings.TrimSpace(out), "\n")
				require.Len(t, lines, len(rows))
				for i, row := range rows {
					_, rest, _ := strings.Cut(lines[i], " ")
					require.Equal(t, "+A "+javaRowLine(s, row), rest, "record %d", i)
				}
			})
		}
	})
}

func TestPyFlussReadsCompressedBuffers(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	c := newClusterClient(t)
	for _, codec := range arrowCodecs {
		t.Run(string(codec), func(t *testing.T) {
			path, info := createTestTable(t, c, TableDescriptor{Schema: *compressedBuffersSchema, BucketCount: 1,
				Properties: map[string]string{PropArrowCompression: string(codec)}})
			require.Equal(t, codec, info.Descriptor.ArrowCompression())
			s := &info.Descriptor.Schema
			batches, rows := compressedBuffersBatches(t, info.SchemaID, codec)
			for _, records := range batches {
				require.NoError(t, produceBatch(t, c, info.TableID, 0, records).Err)
			}
			scanned := xcPyScan(t, addr, path)
			require.Len(t, scanned, len(rows))
			for i, sr := range scanned {
				require.Equal(t, int64(i), sr.Offset)
				for j, col := range s.Columns {
					if !xcAssertPyValue(t, col.Type, rows[i][j], sr.Row[col.Name], fmt.Sprintf("offset %d %s", i, col.Name)) {
						t.FailNow()
					}
				}
			}
		})
	}
}
