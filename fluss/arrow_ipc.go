package fluss

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
// Fluss's FlussLZ4BlockInputStream accepts (arrow_compress.go). NONE writes
// no compression field.

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

// arrowMetadataSize is the padded flatbuffer size M written by
// putFlatbufMessage for a batch with nodes field nodes and nbufs buffers.
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

// putFlatbufMessage writes the flatbuffer Message into fb, which is
// arrowMetadataSize long and zeroed. Layout, positions relative to the
// flatbuffer start:
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
func putFlatbufMessage(fb []byte, rows int64, nodes []arrowNode, spans []arrowSpan, codec int, bodyLen int64) {
	compressed := codec >= 0
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
}

// appendMessage appends the encapsulated RecordBatch message for the
// builder's current buffers (b.bufs, in depth-first buffer order).
func (b *ArrowLogBuilder) appendMessage(dst []byte, nodes []arrowNode) ([]byte, error) {
	codec := b.comp.flatbufCodec()
	var enc batchEncoder
	if codec >= 0 {
		var err error
		if enc, err = b.comp.encoder(b.bufs); err != nil {
			return dst, err
		}
		defer enc.release()
	}
	dst = leAppendU32(dst, arrowContinuation)
	dst = leAppendU32(dst, uint32(b.metaLen))
	// The metadata has a fixed size per schema and codec, so the body is
	// compressed straight into dst after it and the metadata, which records
	// the compressed lengths, is filled in afterwards.
	meta := len(dst)
	dst = append(dst, make([]byte, b.metaLen)...)
	body := len(dst)
	b.spans = b.spans[:0]
	for _, buf := range b.bufs {
		off := len(dst)
		if codec >= 0 {
			dst = enc.appendCompressed(dst, buf)
		} else {
			dst = append(dst, buf...)
		}
		b.spans = append(b.spans, arrowSpan{offset: int64(off - body), length: int64(len(dst) - off)})
		for (len(dst)-body)%8 != 0 {
			dst = append(dst, 0)
		}
	}
	putFlatbufMessage(dst[meta:body], int64(b.count), nodes, b.spans, codec, int64(len(dst)-body))
	return dst, nil
}
