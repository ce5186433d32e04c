package fluss

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// KvRecordBatch, magic 0 (fluss-common record/DefaultKvRecordBatch.java and
// KvRecordBatchBuilder.java, v0.9.1). All fields LITTLE-endian.
//
//	 0 Length        int32  batch size - 4
//	 4 Magic         int8   0
//	 5 CRC           uint32 CRC-32C of [9, end)
//	 9 SchemaId      int16
//	11 Attributes    int8   0
//	12 WriterId      int64  -1 = none
//	20 BatchSequence int32  -1 = none
//	24 RecordCount   int32
//	28 records: int32 LE length of what follows, uvarint key length, key,
//	   row bytes in the table's kv format (no schema-id prefix). A record
//	   without row bytes is a delete (DefaultKvRecord.readKeyAndRow).
const (
	kvLengthOffset        = 0
	kvMagicOffset         = 4
	kvCRCOffset           = 5
	kvSchemaIDOffset      = 9
	kvAttributesOffset    = 11
	kvWriterIDOffset      = 12
	kvBatchSequenceOffset = 20
	kvRecordCountOffset   = 24
	kvHeaderSize          = 28
	kvOverhead            = 4
	kvMagicV0             = 0
)

// KvBatchBuilder builds one KvRecordBatch of upserts and deletes for a
// primary-key table. Not safe for concurrent use.
type KvBatchBuilder struct {
	format   KvFormat
	types    []DataType
	varCount int
	schemaID int16
	buf      []byte
	count    int32
}

// NewKvBatchBuilder returns a builder whose values are encoded in format
// (the table's table.kv.format; COMPACTED by default).
func NewKvBatchBuilder(schema *Schema, schemaID int32, format KvFormat) (*KvBatchBuilder, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	if schemaID < 0 || schemaID > 1<<15-1 {
		return nil, fmt.Errorf("fluss: schema id %d out of int16 range", schemaID)
	}
	switch format {
	case "":
		format = KvFormatCompacted
	case KvFormatCompacted, KvFormatIndexed:
	default:
		return nil, fmt.Errorf("fluss: unknown kv format %q", format)
	}
	types := columnTypes(schema)
	b := &KvBatchBuilder{format: format, types: types, varCount: indexedVarCount(types), schemaID: int16(schemaID)}
	b.Reset()
	return b, nil
}

var errEmptyKey = errors.New("fluss: kv record key must not be empty")

// Upsert adds a record that writes row under key (the encoded primary key).
// For a partial update, pass the full-width row with the other columns null
// and send the target columns with the request. On error the builder is
// unchanged.
func (b *KvBatchBuilder) Upsert(key []byte, row Row) error {
	if len(key) == 0 {
		return errEmptyKey
	}
	start := len(b.buf)
	b.buf = append(b.buf, 0, 0, 0, 0)
	b.buf = appendUvarint32(b.buf, uint32(len(key)))
	b.buf = append(b.buf, key...)
	var err error
	if b.format == KvFormatIndexed {
		b.buf, err = appendIndexedRow(b.buf, b.types, b.varCount, row)
	} else {
		b.buf, err = appendCompactedRow(b.buf, b.types, row)
	}
	if err != nil {
		b.buf = b.buf[:start]
		return err
	}
	lePutU32(b.buf, start, uint32(len(b.buf)-start-4))
	b.count++
	return nil
}

// Delete adds a record that deletes key.
func (b *KvBatchBuilder) Delete(key []byte) error {
	if len(key) == 0 {
		return errEmptyKey
	}
	b.buf = leAppendU32(b.buf, uint32(uvarint32Size(uint32(len(key)))+len(key)))
	b.buf = appendUvarint32(b.buf, uint32(len(key)))
	b.buf = append(b.buf, key...)
	b.count++
	return nil
}

// Len returns the number of records.
func (b *KvBatchBuilder) Len() int { return int(b.count) }

// EstimatedSize returns the exact size of the batch built so far.
func (b *KvBatchBuilder) EstimatedSize() int { return len(b.buf) }

// AppendTo appends the finished batch (writer id and sequence -1) to dst.
func (b *KvBatchBuilder) AppendTo(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, b.buf...)
	batch := dst[start:]
	lePutU32(batch, kvLengthOffset, uint32(len(batch)-kvOverhead))
	batch[kvMagicOffset] = kvMagicV0
	lePutU16(batch, kvSchemaIDOffset, uint16(b.schemaID))
	batch[kvAttributesOffset] = 0
	lePutU32(batch, kvRecordCountOffset, uint32(b.count))
	SetKvBatchWriter(batch, NoWriterID, NoBatchSequence)
	return dst, nil
}

// Reset empties the builder, keeping its buffer.
func (b *KvBatchBuilder) Reset() {
	if cap(b.buf) < kvHeaderSize {
		b.buf = make([]byte, kvHeaderSize, 4096)
	}
	b.buf = b.buf[:kvHeaderSize]
	clear(b.buf)
	b.count = 0
}

// SetKvBatchWriter stamps writer id and batch sequence into a built
// KvRecordBatch and recomputes its CRC. Batches shorter than the header are
// left alone.
func SetKvBatchWriter(batch []byte, writerID int64, sequence int32) {
	if len(batch) < kvHeaderSize {
		return
	}
	lePutU64(batch, kvWriterIDOffset, uint64(writerID))
	lePutU32(batch, kvBatchSequenceOffset, uint32(sequence))
	lePutU32(batch, kvCRCOffset, crc32.Checksum(batch[kvSchemaIDOffset:], castagnoli))
}

// KvRecord is one decoded KV record; Row is nil for a delete.
type KvRecord struct {
	Key []byte
	Row Row
}

// KvBatch is a decoded KvRecordBatch.
type KvBatch struct {
	SchemaID      int16
	WriterID      int64
	BatchSequence int32
	Records       []KvRecord
}

// DecodeKvBatch decodes one KvRecordBatch (for tests and fakes), checking
// its CRC. Byte slices point into batch.
func DecodeKvBatch(batch []byte, schema *Schema, format KvFormat) (*KvBatch, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	if len(batch) < kvHeaderSize {
		return nil, corrupt("kv batch of %d bytes", len(batch))
	}
	if size := int64(int32(leU32(batch, kvLengthOffset))) + kvOverhead; size != int64(len(batch)) {
		return nil, corrupt("kv batch length %d, have %d bytes", size, len(batch))
	}
	if batch[kvMagicOffset] != kvMagicV0 {
		return nil, corrupt("unsupported kv batch magic %d", batch[kvMagicOffset])
	}
	if want, got := leU32(batch, kvCRCOffset), crc32.Checksum(batch[kvSchemaIDOffset:], castagnoli); want != got {
		return nil, corrupt("kv crc mismatch: stored %08x, computed %08x", want, got)
	}
	types := columnTypes(schema)
	varCount := indexedVarCount(types)
	count := int32(leU32(batch, kvRecordCountOffset))
	if count < 0 || int64(count)*5 > int64(len(batch)) {
		return nil, corrupt("kv record count %d", count)
	}
	out := &KvBatch{
		SchemaID:      int16(leU16(batch, kvSchemaIDOffset)),
		WriterID:      int64(leU64(batch, kvWriterIDOffset)),
		BatchSequence: int32(leU32(batch, kvBatchSequenceOffset)),
		Records:       make([]KvRecord, 0, count),
	}
	recs := batch[kvHeaderSize:]
	for i := int32(0); i < count; i++ {
		if len(recs) < 4 {
			return nil, corrupt("kv record %d truncated", i)
		}
		l := int64(int32(leU32(recs, 0)))
		if l < 1 || l > int64(len(recs)-4) {
			return nil, corrupt("kv record %d length %d", i, l)
		}
		body := recs[4 : 4+l]
		recs = recs[4+l:]
		kl, n, err := readUvarint32(body)
		if err != nil || int64(kl) > int64(len(body)-n) {
			return nil, corrupt("kv record %d key length", i)
		}
		rec := KvRecord{Key: body[n : n+int(kl)]}
		if val := body[n+int(kl):]; len(val) > 0 {
			rec.Row = make(Row, len(types))
			if format == KvFormatIndexed {
				err = decodeIndexedRow(val, types, varCount, rec.Row)
			} else {
				err = decodeCompactedRow(val, types, rec.Row)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: kv record %d: %w", ErrCorruptBatch, i, err)
			}
		}
		out.Records = append(out.Records, rec)
	}
	if len(recs) != 0 {
		return nil, corrupt("%d trailing bytes after kv records", len(recs))
	}
	return out, nil
}
