package fluss

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// LogRecordBatch, magic 0 (fluss-common record/LogRecordBatchFormat.java,
// v0.9.1). Every field is LITTLE-endian, unlike the RPC frame.
//
//	 0 BaseOffset      int64  client 0, server assigns
//	 8 Length          int32  batch size - 12
//	12 Magic           int8   0
//	13 CommitTimestamp int64  client 0, server assigns
//	21 CRC             uint32 CRC-32C of [25, end)
//	25 SchemaId        int16
//	27 Attributes      int8   bit 0 = append-only
//	28 LastOffsetDelta int32  records - 1, or 0 when empty
//	32 WriterId        int64  -1 = none
//	40 BatchSequence   int32  -1 = none
//	44 RecordCount     int32
//	48 records: ARROW (change-type vector unless append-only, then one Arrow
//	   IPC RecordBatch message), or INDEXED/COMPACTED records
//	   (int32 LE length, change-type byte, row).
const (
	logBaseOffsetOffset      = 0
	logLengthOffset          = 8
	logMagicOffset           = 12
	logCommitTimestampOffset = 13
	logCRCOffset             = 21
	logSchemaIDOffset        = 25
	logAttributesOffset      = 27
	logLastOffsetDeltaOffset = 28
	logWriterIDOffset        = 32
	logBatchSequenceOffset   = 40
	logRecordCountOffset     = 44
	logV0HeaderSize          = 48
	logOverhead              = 12

	logMagicV0         = 0
	logAppendOnlyFlag  = 0x01
	NoWriterID         = int64(-1)
	NoBatchSequence    = int32(-1)
	rowLogRecordHeader = 5 // int32 length + change-type byte
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChangeType is the per-record change kind of a log record
// (fluss-common record/ChangeType.java).
type ChangeType int8

const (
	ChangeAppendOnly   ChangeType = 0 // +A
	ChangeInsert       ChangeType = 1 // +I
	ChangeUpdateBefore ChangeType = 2 // -U
	ChangeUpdateAfter  ChangeType = 3 // +U
	ChangeDelete       ChangeType = 4 // -D
)

func (c ChangeType) String() string {
	switch c {
	case ChangeAppendOnly:
		return "+A"
	case ChangeInsert:
		return "+I"
	case ChangeUpdateBefore:
		return "-U"
	case ChangeUpdateAfter:
		return "+U"
	case ChangeDelete:
		return "-D"
	}
	return fmt.Sprintf("ChangeType(%d)", int8(c))
}

// LogRecord is one decoded log record.
type LogRecord struct {
	Offset, Timestamp int64
	ChangeType        ChangeType
	Row               Row
}

// writeLogBatchHeader fills the 48-byte V0 header of batch (the whole batch,
// records included) and its CRC.
func writeLogBatchHeader(batch []byte, schemaID int16, appendOnly bool, records int32, writerID int64, seq int32) {
	lePutU64(batch, logBaseOffsetOffset, 0)
	lePutU32(batch, logLengthOffset, uint32(len(batch)-logOverhead))
	batch[logMagicOffset] = logMagicV0
	lePutU64(batch, logCommitTimestampOffset, 0)
	lePutU16(batch, logSchemaIDOffset, uint16(schemaID))
	var attrs byte
	if appendOnly {
		attrs |= logAppendOnlyFlag
	}
	batch[logAttributesOffset] = attrs
	var lastDelta int32
	if records > 0 {
		lastDelta = records - 1
	}
	lePutU32(batch, logLastOffsetDeltaOffset, uint32(lastDelta))
	lePutU32(batch, logRecordCountOffset, uint32(records))
	SetLogBatchWriter(batch, writerID, seq)
}

// SetLogBatchWriter stamps writer id and batch sequence into a built V0 log
// batch and recomputes its CRC. The records are not touched, so a retried
// batch is sent with identical payload. Batches shorter than the header are
// left alone.
func SetLogBatchWriter(batch []byte, writerID int64, sequence int32) {
	if len(batch) < logV0HeaderSize {
		return
	}
	lePutU64(batch, logWriterIDOffset, uint64(writerID))
	lePutU32(batch, logBatchSequenceOffset, uint32(sequence))
	lePutU32(batch, logCRCOffset, crc32.Checksum(batch[logSchemaIDOffset:], castagnoli))
}

// LogBatchWriter reads back the writer id and batch sequence of a V0 log
// batch (for tests and logging).
func LogBatchWriter(batch []byte) (writerID int64, sequence int32, ok bool) {
	if len(batch) < logV0HeaderSize {
		return 0, 0, false
	}
	return int64(leU64(batch, logWriterIDOffset)), int32(leU32(batch, logBatchSequenceOffset)), true
}

// AppendEmptyLogBatch appends an append-only V0 log batch of no records
// under writerID and seq: the header alone, as Fluss's own Arrow builder
// makes a batch of no rows. Fluss appends it like any batch: it takes one
// offset and moves the writer's sequence on (a fence's marker,
// docs/exactly-once.md §8.3).
func AppendEmptyLogBatch(dst []byte, schemaID int16, writerID int64, seq int32) []byte {
	at := len(dst)
	dst = append(dst, make([]byte, logV0HeaderSize)...)
	writeLogBatchHeader(dst[at:], schemaID, true, 0, writerID, seq)
	return dst
}

// LogBatchHeader is what a V0 log batch's header says of it.
type LogBatchHeader struct {
	BaseOffset int64
	// LastOffsetDelta is the last record's offset less BaseOffset (0 for a
	// batch of no records, which takes one offset).
	LastOffsetDelta int32
	Records         int32
	WriterID        int64
	Sequence        int32
}

// NextOffset is the offset after the batch.
func (h LogBatchHeader) NextOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) + 1 }

// ReadLogBatchHeader reads batch's header (one batch of LogBatches).
func ReadLogBatchHeader(batch []byte) (LogBatchHeader, error) {
	if len(batch) < logV0HeaderSize {
		return LogBatchHeader{}, corrupt("log batch of %d bytes", len(batch))
	}
	if m := batch[logMagicOffset]; m != logMagicV0 {
		return LogBatchHeader{}, corrupt("unsupported log batch magic %d", m)
	}
	return LogBatchHeader{
		BaseOffset:      int64(leU64(batch, logBaseOffsetOffset)),
		LastOffsetDelta: int32(leU32(batch, logLastOffsetDeltaOffset)),
		Records:         int32(leU32(batch, logRecordCountOffset)),
		WriterID:        int64(leU64(batch, logWriterIDOffset)),
		Sequence:        int32(leU32(batch, logBatchSequenceOffset)),
	}, nil
}

// LogBatches splits a bucket's records (one or more log batches, one after
// the other) into its batches. A partial batch is an error.
func LogBatches(data []byte) ([][]byte, error) {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < logOverhead {
			return out, corrupt("%d bytes after the last batch", len(data))
		}
		size := int64(int32(leU32(data, logLengthOffset))) + logOverhead
		if size < logV0HeaderSize || size > int64(len(data)) {
			return out, corrupt("batch length %d with %d bytes left", size-logOverhead, len(data))
		}
		out = append(out, data[:size])
		data = data[size:]
	}
	return out, nil
}

// rowLogBuilder builds INDEXED or COMPACTED log batches: each Append
// serialises the record straight into the batch buffer after a reserved
// header.
type rowLogBuilder struct {
	format   LogFormat
	types    []DataType
	varCount int
	schemaID int16
	buf      []byte
	count    int32
}

func newRowLogBuilder(schema *Schema, schemaID int32, format LogFormat) (rowLogBuilder, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return rowLogBuilder{}, err
	}
	if schemaID < 0 || schemaID > 1<<15-1 {
		return rowLogBuilder{}, fmt.Errorf("fluss: schema id %d out of int16 range", schemaID)
	}
	types := columnTypes(schema)
	b := rowLogBuilder{
		format:   format,
		types:    types,
		varCount: indexedVarCount(types),
		schemaID: int16(schemaID),
	}
	b.Reset()
	return b, nil
}

// Append adds one append-only record. On error the builder is unchanged.
func (b *rowLogBuilder) Append(row Row) error {
	start := len(b.buf)
	b.buf = append(b.buf, 0, 0, 0, 0, byte(ChangeAppendOnly))
	var err error
	if b.format == LogFormatIndexed {
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

// Len returns the number of records appended.
func (b *rowLogBuilder) Len() int { return int(b.count) }

// EstimatedSize returns the exact size of the batch built so far.
func (b *rowLogBuilder) EstimatedSize() int { return len(b.buf) }

// AppendTo appends the finished batch (writer id and sequence -1) to dst.
func (b *rowLogBuilder) AppendTo(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, b.buf...)
	writeLogBatchHeader(dst[start:], b.schemaID, true, b.count, NoWriterID, NoBatchSequence)
	return dst, nil
}

// Reset empties the builder, keeping its buffer.
func (b *rowLogBuilder) Reset() {
	if cap(b.buf) < logV0HeaderSize {
		b.buf = make([]byte, logV0HeaderSize, 4096)
	}
	b.buf = b.buf[:logV0HeaderSize]
	clear(b.buf)
	b.count = 0
}

// IndexedLogBuilder builds LogRecordBatches in the INDEXED log format
// (table.log.format = INDEXED): records of IndexedRows. Not safe for
// concurrent use.
type IndexedLogBuilder struct{ rowLogBuilder }

// NewIndexedLogBuilder returns a builder for INDEXED log batches.
func NewIndexedLogBuilder(schema *Schema, schemaID int32) (*IndexedLogBuilder, error) {
	b, err := newRowLogBuilder(schema, schemaID, LogFormatIndexed)
	if err != nil {
		return nil, err
	}
	return &IndexedLogBuilder{b}, nil
}

// CompactedLogBuilder builds LogRecordBatches in the COMPACTED log format
// (table.log.format = COMPACTED): records of CompactedRows.
type CompactedLogBuilder struct{ rowLogBuilder }

// NewCompactedLogBuilder returns a builder for COMPACTED log batches.
func NewCompactedLogBuilder(schema *Schema, schemaID int32) (*CompactedLogBuilder, error) {
	b, err := newRowLogBuilder(schema, schemaID, LogFormatCompacted)
	if err != nil {
		return nil, err
	}
	return &CompactedLogBuilder{b}, nil
}

// ---------------------------------------------------------------------------
// Reading

// ErrCorruptBatch wraps every structural problem found while decoding.
var ErrCorruptBatch = errors.New("fluss: corrupt record batch")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorruptBatch}, args...)...)
}

// DecodeLogBatches decodes back-to-back LogRecordBatches (a FetchLog
// records field) for schema. ARROW and INDEXED batches are told apart by
// the Arrow IPC continuation marker; use DecodeLogBatchesFormat for
// COMPACTED. A trailing partial batch is ignored, as Fluss readers do.
func DecodeLogBatches(data []byte, schema *Schema) ([]LogRecord, error) {
	return decodeLogBatches(data, schema, "", true)
}

// DecodeLogBatchesFormat is DecodeLogBatches with the log format given.
func DecodeLogBatchesFormat(data []byte, schema *Schema, format LogFormat) ([]LogRecord, error) {
	return decodeLogBatches(data, schema, format, true)
}

// DecodeProjectedLogBatches decodes ARROW batches a FetchLog with
// projection pushdown returned; projected is the schema of the projected
// columns, in order. The server rewrites such batches without recomputing
// their CRC (FileLogProjection), so the CRC is not checked.
func DecodeProjectedLogBatches(data []byte, projected *Schema) ([]LogRecord, error) {
	return decodeLogBatches(data, projected, LogFormatArrow, false)
}

func decodeLogBatches(data []byte, schema *Schema, format LogFormat, checkCRC bool) ([]LogRecord, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	types := columnTypes(schema)
	var dec arrowDecoder
	defer dec.close()
	var out []LogRecord
	for len(data) >= logOverhead {
		size := int64(int32(leU32(data, logLengthOffset))) + logOverhead
		if size < logV0HeaderSize {
			return out, corrupt("batch length %d", size-logOverhead)
		}
		if size > int64(len(data)) {
			break // trailing partial batch
		}
		batch := data[:size]
		data = data[size:]
		var err error
		out, err = decodeOneLogBatch(out, batch, types, format, checkCRC, &dec)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func decodeOneLogBatch(out []LogRecord, batch []byte, types []DataType, format LogFormat, checkCRC bool, dec *arrowDecoder) ([]LogRecord, error) {
	if m := batch[logMagicOffset]; m != logMagicV0 {
		return out, corrupt("unsupported log batch magic %d", m)
	}
	if want, got := leU32(batch, logCRCOffset), crc32.Checksum(batch[logSchemaIDOffset:], castagnoli); checkCRC && want != got {
		return out, corrupt("crc mismatch: stored %08x, computed %08x", want, got)
	}
	base := int64(leU64(batch, logBaseOffsetOffset))
	ts := int64(leU64(batch, logCommitTimestampOffset))
	appendOnly := batch[logAttributesOffset]&logAppendOnlyFlag != 0
	count := int32(leU32(batch, logRecordCountOffset))
	if count < 0 {
		return out, corrupt("record count %d", count)
	}
	if count == 0 {
		return out, nil
	}
	recs := batch[logV0HeaderSize:]
	if format == "" {
		format = LogFormatIndexed
		ctLen := 0
		if !appendOnly {
			ctLen = int(count)
		}
		if len(recs) >= ctLen+4 && leU32(recs, ctLen) == 0xffffffff {
			format = LogFormatArrow
		}
	}
	switch format {
	case LogFormatArrow:
		var changes []byte
		if !appendOnly {
			if int64(len(recs)) < int64(count) {
				return out, corrupt("change-type vector truncated")
			}
			changes, recs = recs[:count], recs[count:]
		}
		rows, err := dec.decode(recs, types, int(count))
		if err != nil {
			return out, err
		}
		for i, r := range rows {
			ct := ChangeAppendOnly
			if changes != nil {
				ct = ChangeType(changes[i])
			}
			out = append(out, LogRecord{Offset: base + int64(i), Timestamp: ts, ChangeType: ct, Row: r})
		}
		return out, nil
	case LogFormatIndexed, LogFormatCompacted:
		if int64(count)*rowLogRecordHeader > int64(len(recs)) {
			return out, corrupt("%d records cannot fit in %d bytes", count, len(recs))
		}
		varCount := indexedVarCount(types)
		cells := make([]Datum, int(count)*len(types))
		for i := 0; i < int(count); i++ {
			if len(recs) < rowLogRecordHeader {
				return out, corrupt("record %d truncated", i)
			}
			l := int64(int32(leU32(recs, 0)))
			if l < 1 || l > int64(len(recs)-4) {
				return out, corrupt("record %d length %d", i, l)
			}
			ct := ChangeType(recs[4])
			rb := recs[5 : 4+l]
			recs = recs[4+l:]
			row := Row(cells[i*len(types) : (i+1)*len(types) : (i+1)*len(types)])
			var err error
			if format == LogFormatIndexed {
				err = decodeIndexedRow(rb, types, varCount, row)
			} else {
				err = decodeCompactedRow(rb, types, row)
			}
			if err != nil {
				return out, fmt.Errorf("%w: record %d: %w", ErrCorruptBatch, i, err)
			}
			out = append(out, LogRecord{Offset: base + int64(i), Timestamp: ts, ChangeType: ct, Row: row})
		}
		return out, nil
	}
	return out, fmt.Errorf("fluss: unknown log format %q", format)
}
