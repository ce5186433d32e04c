package fluss

import (
	"errors"
	"fmt"
	"math"
)

// ArrowLogBuilder builds LogRecordBatches in the ARROW log format (the
// default, table.log.format = ARROW): the 48-byte V0 header, then one Arrow
// IPC RecordBatch message without a schema message, as the Java client's
// MemoryLogRecordsArrowBuilder/ArrowWriter write it (v0.9.1).
//
// Rows are appended column by column into plain byte buffers laid out as
// Arrow buffers (validity bitmap, offsets, values), so Append allocates
// nothing once the buffers have grown. AppendTo writes the IPC framing and
// compresses the body buffers straight into its destination; see
// arrow_ipc.go for why the framing is our own rather than arrow-go's
// writer, and arrow_compress.go for the codecs' settings.
//
// Type mapping (fluss-common utils/ArrowUtils.toArrowType and
// row/arrow/writers/*): BOOLEAN Bool; TINYINT..BIGINT Int8..Int64; FLOAT,
// DOUBLE FloatingPoint; CHAR, STRING Utf8; BINARY(n) FixedSizeBinary(n);
// BYTES Binary; DECIMAL(p,s) Decimal128(p,s); DATE Date(DAY); TIME(p) p=0
// Time32(s), 1-3 Time32(ms), 4-6 Time64(us), 7-9 Time64(ns); TIMESTAMP(p)
// and TIMESTAMP_LTZ(p) Timestamp(s|ms|us|ns by the same ranges, no zone);
// ARRAY List (child "element"); MAP Map, keysSorted false (child "entries",
// a non-null Struct of "key", non-null, and "value"); ROW Struct of the
// row's fields (fluss-common/src/main/java/org/apache/fluss/utils/
// ArrowUtils.java toArrowField; writers ArrowArrayWriter, ArrowMapWriter,
// ArrowRowWriter in .../fluss/row/arrow/writers/). Nested columns are kept as a tree of
// columns; AppendTo writes their field nodes and buffers depth first, each
// vector's own buffers before its children's (Arrow Java VectorUnloader):
// List and Map validity + int32 offsets, Struct validity only, a child's
// length its own element count. A null list or map repeats the previous
// offset; a null struct leaves its children null at that index (Arrow
// Java's StructVector.setNull does not touch the children, which stay
// unset, i.e. null). A vector of no values (a nested child) has an empty
// offsets buffer, as Arrow Java writes it. The field nodes, buffers and body
// equal those of Java's ArrowWriter (record_java_nested_integration_test.go).
//
// Not safe for concurrent use.
type ArrowLogBuilder struct {
	schemaID int16
	cols     []arrowColumn
	count    int
	codec    ArrowCompression
	comp     *ArrowCompressor
	metaLen  int // flatbuffer metadata length, fixed per schema and codec
	nbufs    int

	// reused across AppendTo calls
	bufs  [][]byte
	nodes []arrowNode
	spans []arrowSpan
}

// ArrowOption configures an ArrowLogBuilder.
type ArrowOption func(*ArrowLogBuilder)

// WithArrowCompressor makes the builder use a shared compressor (it must
// have the builder's codec) instead of creating its own. Share one per
// table: it saves the encoder memory and pools the compression-ratio
// estimate across the table's batches.
func WithArrowCompressor(c *ArrowCompressor) ArrowOption {
	return func(b *ArrowLogBuilder) { b.comp = c }
}

// arrowKind is the physical Arrow layout of a column.
type arrowKind uint8

const (
	akBool        arrowKind = iota // validity + bit-packed values
	akFixed                        // validity + fixed-width LE values
	akVar                          // validity + int32 offsets + data (Utf8, Binary)
	akFixedBinary                  // validity + FixedSizeBinary(width)
	akList                         // validity + int32 offsets, one child (ARRAY; MAP with a struct child)
	akStruct                       // validity, one child per field (ROW; a MAP's entries)
)

// arrowConv says how a Datum maps to the Arrow value.
type arrowConv uint8

const (
	cvInt arrowConv = iota // integers and DATE, truncated to width
	cvFloat32
	cvFloat64
	cvTimeSec   // int32 seconds of day
	cvTimeMilli // int32 millis of day
	cvTimeMicro // int64
	cvTimeNano  // int64
	cvTsSec
	cvTsMilli
	cvTsMicro
	cvTsNano
	cvDecimalCompact // int64 unscaled -> 128-bit LE
	cvDecimalBig     // BE two's complement bytes -> 128-bit LE
	cvBytes
	cvNested // ARRAY, MAP, ROW (akList, akStruct)
)

type arrowColumn struct {
	t        DataType
	kind     arrowKind
	conv     arrowConv
	width    int // bytes per value (akFixed, akFixedBinary)
	validity []byte
	values   []byte
	offsets  []byte // akVar and akList; starts with a 0 offset
	nulls    int
	length   int // values appended (top-level columns: set by AppendTo)

	children []arrowColumn // akList: 1; akStruct: one per field
	isMap    bool          // akList whose child is the entries struct
	pending  int           // during Append's checks: bytes (akVar) or elements (akList) not yet appended
}

func arrowLayout(t *DataType) (arrowKind, arrowConv, int) {
	timeUnit := func(p int) int {
		switch {
		case p == 0:
			return 0
		case p <= 3:
			return 1
		case p <= 6:
			return 2
		}
		return 3
	}
	switch t.Root {
	case TypeBoolean:
		return akBool, cvInt, 0
	case TypeTinyInt:
		return akFixed, cvInt, 1
	case TypeSmallInt:
		return akFixed, cvInt, 2
	case TypeInt, TypeDate:
		return akFixed, cvInt, 4
	case TypeBigInt:
		return akFixed, cvInt, 8
	case TypeFloat:
		return akFixed, cvFloat32, 4
	case TypeDouble:
		return akFixed, cvFloat64, 8
	case TypeChar, TypeString, TypeBytes:
		return akVar, cvBytes, 0
	case TypeBinary:
		return akFixedBinary, cvBytes, t.Length
	case TypeDecimal:
		if t.Precision <= compactDecimalPrecision {
			return akFixed, cvDecimalCompact, 16
		}
		return akFixed, cvDecimalBig, 16
	case TypeTime:
		switch timeUnit(t.Precision) {
		case 0:
			return akFixed, cvTimeSec, 4
		case 1:
			return akFixed, cvTimeMilli, 4
		case 2:
			return akFixed, cvTimeMicro, 8
		}
		return akFixed, cvTimeNano, 8
	case TypeTimestamp, TypeTimestampLTZ:
		return akFixed, cvTsSec + arrowConv(timeUnit(t.Precision)), 8
	case TypeArray, TypeMap:
		return akList, cvNested, 0
	case TypeRow:
		return akStruct, cvNested, 0
	}
	return akFixed, cvInt, 0
}

// newArrowColumn sets up the column of type t and, for nested types, its
// children; it returns the number of field nodes and buffers of the tree.
func newArrowColumn(c *arrowColumn, t DataType) (nodes, bufs int) {
	c.t = t
	c.kind, c.conv, c.width = arrowLayout(&c.t)
	nodes, bufs = 1, 2
	switch c.kind {
	case akVar:
		bufs = 3
	case akStruct:
		bufs = 1
	}
	switch t.Root {
	case TypeArray:
		c.children = make([]arrowColumn, 1)
		n, b := newArrowColumn(&c.children[0], *t.Elem)
		nodes, bufs = nodes+n, bufs+b
	case TypeMap:
		c.isMap = true
		c.children = make([]arrowColumn, 1)
		e := &c.children[0]
		e.t = DataType{Root: TypeRow, NotNull: true}
		e.kind, e.conv = akStruct, cvNested
		e.children = make([]arrowColumn, 2)
		key := *t.Key
		key.NotNull = true
		kn, kb := newArrowColumn(&e.children[0], key)
		vn, vb := newArrowColumn(&e.children[1], *t.Value)
		nodes, bufs = nodes+1+kn+vn, bufs+1+kb+vb
	case TypeRow:
		c.children = make([]arrowColumn, len(t.Fields))
		for i := range t.Fields {
			n, b := newArrowColumn(&c.children[i], t.Fields[i].Type)
			nodes, bufs = nodes+n, bufs+b
		}
	}
	return nodes, bufs
}

// NewArrowLogBuilder returns a builder for ARROW log batches of schema,
// compressing body buffers with codec (the table's
// table.log.arrow.compression.type; "" means ZSTD, the Fluss default) at
// zstdLevel (table.log.arrow.compression.zstd.level; <= 0 means 3).
func NewArrowLogBuilder(schema *Schema, schemaID int32, codec ArrowCompression, zstdLevel int, opts ...ArrowOption) (*ArrowLogBuilder, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	if schemaID < 0 || schemaID > 1<<15-1 {
		return nil, fmt.Errorf("fluss: schema id %d out of int16 range", schemaID)
	}
	if codec == "" {
		codec = ArrowCompressionZstd
	}
	b := &ArrowLogBuilder{schemaID: int16(schemaID), codec: codec}
	for _, o := range opts {
		o(b)
	}
	if b.comp == nil {
		c, err := newArrowCompressor(codec, zstdLevel, 1)
		if err != nil {
			return nil, err
		}
		b.comp = c
	} else if b.comp.codec != codec {
		return nil, fmt.Errorf("fluss: shared compressor is %s, builder needs %s", b.comp.codec, codec)
	}
	b.cols = make([]arrowColumn, len(schema.Columns))
	nnodes := 0 // field nodes: the columns and their nested children
	for i := range schema.Columns {
		n, bufs := newArrowColumn(&b.cols[i], schema.Columns[i].Type)
		nnodes += n
		b.nbufs += bufs
	}
	b.metaLen = arrowMetadataSize(nnodes, b.nbufs, b.comp.flatbufCodec() >= 0)
	b.Reset()
	return b, nil
}

// Append adds one append-only row. On error the builder is unchanged.
func (b *ArrowLogBuilder) Append(row Row) error {
	if len(row) != len(b.cols) {
		return errRowWidth(len(row), len(b.cols))
	}
	for i := range b.cols {
		c := &b.cols[i]
		d := &row[i]
		if d.Null {
			if c.t.NotNull {
				return errNullInNotNull(i, &c.t)
			}
			continue
		}
		switch c.conv {
		case cvNested:
			err := c.check(d, 0)
			c.clearPending()
			if err != nil {
				return fmt.Errorf("fluss: column %d: %w", i, err)
			}
		case cvBytes:
			if c.kind == akFixedBinary && len(d.B) > c.width {
				return fmt.Errorf("fluss: column %d: %d bytes do not fit %s", i, len(d.B), &c.t)
			}
			if c.kind == akVar && len(c.values)+len(d.B) > math.MaxInt32 {
				return fmt.Errorf("fluss: column %d: arrow batch exceeds 2 GiB of data", i)
			}
		case cvDecimalBig:
			if len(minimalDecimalBytes(d.B)) > 16 {
				return fmt.Errorf("fluss: column %d: decimal value wider than 128 bits", i)
			}
		}
	}
	n := b.count
	for i := range b.cols {
		b.cols[i].append(n, &row[i])
	}
	b.count++
	return nil
}

// check validates a non-null value of a nested column (or of a child of
// one) before anything is appended, so that Append fails atomically. The
// sizes of the values seen are kept in pending until clearPending.
func (c *arrowColumn) check(d *Datum, depth int) error {
	if depth > maxTypeDepth {
		return fmt.Errorf("fluss: values nested deeper than %d levels", maxTypeDepth)
	}
	switch c.kind {
	case akFixedBinary:
		if len(d.B) > c.width {
			return fmt.Errorf("fluss: %d bytes do not fit %s", len(d.B), &c.t)
		}
	case akVar:
		c.pending += len(d.B)
		if len(c.values)+c.pending > math.MaxInt32 {
			return errors.New("fluss: arrow batch exceeds 2 GiB of data")
		}
	case akFixed:
		if c.conv == cvDecimalBig && len(minimalDecimalBytes(d.B)) > 16 {
			return errors.New("fluss: decimal value wider than 128 bits")
		}
	case akList:
		if d.Nested == nil {
			return fmt.Errorf("%w (%s)", errNilNested, &c.t)
		}
		child := &c.children[0]
		if c.isMap {
			keys, values := d.Nested.Keys, d.Nested.Values
			if len(keys) != len(values) {
				return fmt.Errorf("fluss: map has %d keys and %d values", len(keys), len(values))
			}
			if err := c.checkCount(len(keys)); err != nil {
				return err
			}
			kc, vc := &child.children[0], &child.children[1]
			for j := range keys {
				if keys[j].Null {
					return fmt.Errorf("fluss: null key in entry %d of %s (Fluss map keys are never null)", j, &c.t)
				}
				if err := kc.check(&keys[j], depth+1); err != nil {
					return fmt.Errorf("map entry %d key: %w", j, err)
				}
				if err := vc.checkNullable(&values[j], depth+1); err != nil {
					return fmt.Errorf("map entry %d value: %w", j, err)
				}
			}
			return nil
		}
		elems := d.Nested.Elems
		if err := c.checkCount(len(elems)); err != nil {
			return err
		}
		for j := range elems {
			if err := child.checkNullable(&elems[j], depth+1); err != nil {
				return fmt.Errorf("array element %d: %w", j, err)
			}
		}
	case akStruct:
		if d.Nested == nil {
			return fmt.Errorf("%w (%s)", errNilNested, &c.t)
		}
		fields := d.Nested.Fields
		if len(fields) != len(c.children) {
			return fmt.Errorf("fluss: row value has %d fields, %s has %d", len(fields), &c.t, len(c.children))
		}
		for j := range fields {
			if err := c.children[j].checkNullable(&fields[j], depth+1); err != nil {
				return fmt.Errorf("row field %q: %w", c.t.Fields[j].Name, err)
			}
		}
	}
	return nil
}

func (c *arrowColumn) checkNullable(d *Datum, depth int) error {
	if d.Null {
		if c.t.NotNull {
			return fmt.Errorf("fluss: null value for %s", &c.t)
		}
		return nil
	}
	return c.check(d, depth)
}

// checkCount adds n elements to a list column's pending count.
func (c *arrowColumn) checkCount(n int) error {
	child := &c.children[0]
	child.pending += n
	if int64(child.length)+int64(child.pending) > math.MaxInt32 {
		return errors.New("fluss: arrow batch exceeds 2^31 nested elements")
	}
	return nil
}

func (c *arrowColumn) clearPending() {
	c.pending = 0
	for i := range c.children {
		c.children[i].clearPending()
	}
}

// append adds value n, checked by Append. Top-level columns get their
// length from the builder's count; children use appendChild.
func (c *arrowColumn) append(n int, d *Datum) {
	bit := byte(1) << (n & 7)
	if n&7 == 0 {
		c.validity = append(c.validity, 0)
		if c.kind == akBool {
			c.values = append(c.values, 0)
		}
	}
	if d.Null {
		c.nulls++
		switch c.kind {
		case akVar:
			c.offsets = leAppendU32(c.offsets, uint32(len(c.values)))
		case akFixed, akFixedBinary:
			for k := 0; k < c.width; k++ {
				c.values = append(c.values, 0)
			}
		case akList, akStruct:
			c.appendNestedNull()
		}
		return
	}
	c.validity[n>>3] |= bit
	switch c.kind {
	case akBool:
		if d.I != 0 {
			c.values[n>>3] |= bit
		}
	case akVar:
		c.values = append(c.values, d.B...)
		c.offsets = leAppendU32(c.offsets, uint32(len(c.values)))
	case akFixedBinary:
		c.values = append(c.values, d.B...)
		for k := len(d.B); k < c.width; k++ {
			c.values = append(c.values, 0)
		}
	case akFixed:
		c.appendFixed(d)
	case akList, akStruct:
		c.appendNested(d)
	}
}

// appendChild adds a value to a child column of a nested column.
func (c *arrowColumn) appendChild(d *Datum) {
	c.append(c.length, d)
	c.length++
}

// appendNested writes the children of a non-null ARRAY, MAP or ROW value.
func (c *arrowColumn) appendNested(d *Datum) {
	switch c.kind {
	case akList:
		child := &c.children[0]
		if c.isMap {
			kc, vc := &child.children[0], &child.children[1]
			for j := range d.Nested.Keys {
				child.appendStructValid()
				kc.appendChild(&d.Nested.Keys[j])
				vc.appendChild(&d.Nested.Values[j])
			}
		} else {
			for j := range d.Nested.Elems {
				child.appendChild(&d.Nested.Elems[j])
			}
		}
		c.offsets = leAppendU32(c.offsets, uint32(child.length))
	case akStruct:
		for j := range c.children {
			c.children[j].appendChild(&d.Nested.Fields[j])
		}
	}
}

// appendStructValid adds a valid entry to a map's entries struct, whose
// children the caller appends.
func (c *arrowColumn) appendStructValid() {
	n := c.length
	c.length++
	if n&7 == 0 {
		c.validity = append(c.validity, 0)
	}
	c.validity[n>>3] |= 1 << (n & 7)
}

// appendNestedNull writes what a null list, map or struct needs besides its
// validity bit: the previous offset again, or a null in every child.
func (c *arrowColumn) appendNestedNull() {
	if c.kind == akList {
		c.offsets = leAppendU32(c.offsets, uint32(c.children[0].length))
		return
	}
	for j := range c.children {
		c.children[j].appendChild(&nullDatum)
	}
}

var nullDatum = Datum{Null: true}

func (c *arrowColumn) appendFixed(d *Datum) {
	var v int64
	switch c.conv {
	case cvInt, cvTimeMilli, cvTsMilli:
		v = d.I
	case cvFloat32:
		v = int64(math.Float32bits(float32(d.F)))
	case cvFloat64:
		v = int64(math.Float64bits(d.F))
	case cvTimeSec, cvTsSec:
		v = d.I / 1000 // Java integer division, as ArrowTimeWriter/ArrowTimestamp*Writer
	case cvTimeMicro:
		v = d.I * 1000
	case cvTimeNano:
		v = d.I * 1_000_000
	case cvTsMicro:
		v = d.I*1000 + int64(d.N)/1000
	case cvTsNano:
		v = d.I*1_000_000 + int64(d.N)
	case cvDecimalCompact:
		c.values = leAppendU64(c.values, uint64(d.I))
		c.values = leAppendU64(c.values, uint64(d.I>>63))
		return
	case cvDecimalBig:
		c.values = appendDecimal128(c.values, minimalDecimalBytes(d.B))
		return
	}
	switch c.width {
	case 1:
		c.values = append(c.values, byte(v))
	case 2:
		c.values = leAppendU16(c.values, uint16(v))
	case 4:
		c.values = leAppendU32(c.values, uint32(v))
	default:
		c.values = leAppendU64(c.values, uint64(v))
	}
}

// appendDecimal128 appends a big-endian two's complement integer (at most
// 16 bytes) as a 128-bit little-endian value, sign-extended.
func appendDecimal128(dst []byte, be []byte) []byte {
	var fill byte
	if len(be) > 0 && be[0]&0x80 != 0 {
		fill = 0xff
	}
	for i := len(be) - 1; i >= 0; i-- {
		dst = append(dst, be[i])
	}
	for i := len(be); i < 16; i++ {
		dst = append(dst, fill)
	}
	return dst
}

// Len returns the number of rows appended.
func (b *ArrowLogBuilder) Len() int { return b.count }

// EstimatedSize estimates the size of the batch AppendTo would write: exact
// header and metadata, the body's buffer sizes scaled by the compression
// ratio observed on earlier batches built with the same compressor (1 at
// first, so the estimate errs high until a batch was built).
func (b *ArrowLogBuilder) EstimatedSize() int {
	if b.count == 0 {
		return logV0HeaderSize
	}
	raw := b.rawBodySize()
	body := raw
	if b.comp.flatbufCodec() >= 0 {
		body = int(float64(raw)*b.comp.estimatedRatio()) + 8*b.nbufs
	}
	return logV0HeaderSize + 8 + b.metaLen + body
}

// RawSize returns the uncompressed size of the batch built so far: the
// memory its columns hold. With very compressible data it can be many times
// EstimatedSize, so the accumulator also bounds it.
func (b *ArrowLogBuilder) RawSize() int {
	return logV0HeaderSize + 8 + b.metaLen + b.rawBodySize()
}

// HeldBytes returns the memory the builder's column buffers hold, their
// capacity: what a writer charges to its memory budget (RawSize is only
// what they contain so far).
func (b *ArrowLogBuilder) HeldBytes() int {
	held := 0
	for i := range b.cols {
		held += b.cols[i].heldBytes()
	}
	return held
}

func (c *arrowColumn) heldBytes() int {
	held := cap(c.validity) + cap(c.values) + cap(c.offsets)
	for i := range c.children {
		held += c.children[i].heldBytes()
	}
	return held
}

func (b *ArrowLogBuilder) rawBodySize() int {
	raw := 0
	for i := range b.cols {
		raw += b.cols[i].rawSize()
	}
	return raw
}

func (c *arrowColumn) rawSize() int {
	raw := pad8(len(c.validity)) + pad8(len(c.values)) + pad8(len(c.offsetsBuffer()))
	for i := range c.children {
		raw += c.children[i].rawSize()
	}
	return raw
}

// Reset empties the builder, keeping its buffers and its compression-ratio
// estimate.
func (b *ArrowLogBuilder) Reset() {
	b.count = 0
	for i := range b.cols {
		b.cols[i].reset()
	}
}

func (c *arrowColumn) reset() {
	c.validity = c.validity[:0]
	c.values = c.values[:0]
	c.nulls = 0
	c.length = 0
	c.pending = 0
	if c.kind == akVar || c.kind == akList {
		c.offsets = append(c.offsets[:0], 0, 0, 0, 0)
	}
	for i := range c.children {
		c.children[i].reset()
	}
}

// offsetsBuffer is the offsets buffer as Arrow Java writes it: empty for a
// vector of no values (BaseVariableWidthVector and ListVector
// setReaderAndWriterIndex), which only nested children can be.
func (c *arrowColumn) offsetsBuffer() []byte {
	if len(c.offsets) <= 4 {
		return nil
	}
	return c.offsets
}

// collect appends the column's field nodes and buffers, depth first.
func (c *arrowColumn) collect(nodes []arrowNode, bufs [][]byte) ([]arrowNode, [][]byte) {
	nodes = append(nodes, arrowNode{length: int64(c.length), nulls: int64(c.nulls)})
	bufs = append(bufs, c.validity)
	switch c.kind {
	case akVar:
		bufs = append(bufs, c.offsetsBuffer(), c.values)
	case akList:
		bufs = append(bufs, c.offsetsBuffer())
	case akStruct:
	default:
		bufs = append(bufs, c.values)
	}
	for i := range c.children {
		nodes, bufs = c.children[i].collect(nodes, bufs)
	}
	return nodes, bufs
}

// AppendTo appends the finished batch (writer id and sequence -1) to dst.
// The builder keeps its rows; call Reset to start the next batch.
func (b *ArrowLogBuilder) AppendTo(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, logV0HeaderSize)...)
	if b.count > 0 {
		bufs := b.bufs[:0]
		nodes := b.nodes[:0]
		for i := range b.cols {
			b.cols[i].length = b.count
			nodes, bufs = b.cols[i].collect(nodes, bufs)
		}
		b.nodes, b.bufs = nodes, bufs
		raw := b.rawBodySize()
		var err error
		if dst, err = b.appendMessage(dst, nodes); err != nil {
			return dst[:start], err
		}
		if b.comp.flatbufCodec() >= 0 && raw > 0 {
			bodyLen := len(dst) - start - logV0HeaderSize - 8 - b.metaLen
			b.comp.observeRatio(float64(bodyLen-8*b.nbufs) / float64(raw))
		}
	}
	writeLogBatchHeader(dst[start:], b.schemaID, true, int32(b.count), NoWriterID, NoBatchSequence)
	return dst, nil
}

func pad8(n int) int { return (n + 7) &^ 7 }
