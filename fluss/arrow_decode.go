package fluss

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decoding of the Arrow section of an ARROW log batch, written to check
// every offset and length against the bytes present (no panics on network
// input). The flatbuffer is read field by field through its vtables.

type arrowDecoder struct {
	zstd *zstd.Decoder
}

func (d *arrowDecoder) close() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
}

// fbTable is a flatbuffer table inside buf.
type fbTable struct {
	buf    []byte
	pos    int
	vt     int
	vtSize int
}

func fbTableAt(buf []byte, pos int) (fbTable, error) {
	if pos < 0 || pos+4 > len(buf) {
		return fbTable{}, corrupt("arrow metadata: table offset %d", pos)
	}
	vt := pos - int(int32(leU32(buf, pos)))
	if vt < 0 || vt+4 > len(buf) {
		return fbTable{}, corrupt("arrow metadata: vtable offset %d", vt)
	}
	vtSize := int(leU16(buf, vt))
	if vtSize < 4 || vt+vtSize > len(buf) {
		return fbTable{}, corrupt("arrow metadata: vtable size %d", vtSize)
	}
	return fbTable{buf: buf, pos: pos, vt: vt, vtSize: vtSize}, nil
}

// field returns the absolute position of field i, or -1 when absent. size
// is the number of bytes the caller will read there.
func (t fbTable) field(i, size int) (int, error) {
	o := 4 + 2*i
	if o+2 > t.vtSize {
		return -1, nil
	}
	off := int(leU16(t.buf, t.vt+o))
	if off == 0 {
		return -1, nil
	}
	p := t.pos + off
	if p+size > len(t.buf) {
		return 0, corrupt("arrow metadata: field %d out of range", i)
	}
	return p, nil
}

func (t fbTable) int64Field(i int) (int64, error) {
	p, err := t.field(i, 8)
	if p < 0 || err != nil {
		return 0, err
	}
	return int64(leU64(t.buf, p)), nil
}

func (t fbTable) uint8Field(i int, def byte) (byte, error) {
	p, err := t.field(i, 1)
	if p < 0 || err != nil {
		return def, err
	}
	return t.buf[p], nil
}

func (t fbTable) int16Field(i int) (int16, error) {
	p, err := t.field(i, 2)
	if p < 0 || err != nil {
		return 0, err
	}
	return int16(leU16(t.buf, p)), nil
}

// ref follows the uoffset in field i; -1 when absent.
func (t fbTable) ref(i int) (int, error) {
	p, err := t.field(i, 4)
	if p < 0 || err != nil {
		return -1, err
	}
	target := int64(p) + int64(leU32(t.buf, p))
	if target+4 > int64(len(t.buf)) {
		return 0, corrupt("arrow metadata: reference of field %d out of range", i)
	}
	return int(target), nil
}

// structVector returns the count and element start of a vector of
// elemSize-byte structs in field i.
func (t fbTable) structVector(i, elemSize int) (int, int, error) {
	p, err := t.ref(i)
	if err != nil {
		return 0, 0, err
	}
	if p < 0 {
		return 0, 0, nil
	}
	n := int64(leU32(t.buf, p))
	if int64(p)+4+n*int64(elemSize) > int64(len(t.buf)) {
		return 0, 0, corrupt("arrow metadata: vector of %d elements out of range", n)
	}
	return int(n), p + 4, nil
}

// arrowMessage is the parsed part of a RecordBatch message we need.
type arrowMessage struct {
	rows     int64
	nodes    []arrowNode
	spans    []arrowSpan
	codec    int // -1 none
	body     []byte
	metaSize int
}

func parseArrowMessage(msg []byte) (*arrowMessage, error) {
	if len(msg) < 8 {
		return nil, corrupt("arrow message of %d bytes", len(msg))
	}
	pos := 0
	if leU32(msg, 0) == arrowContinuation {
		pos = 4
	}
	metaLen := int64(int32(leU32(msg, pos)))
	pos += 4
	if metaLen <= 0 || int64(pos)+metaLen > int64(len(msg)) {
		return nil, corrupt("arrow metadata length %d", metaLen)
	}
	fb := msg[pos : pos+int(metaLen)]
	body := msg[pos+int(metaLen):]
	if len(fb) < 4 {
		return nil, corrupt("arrow metadata too short")
	}
	m, err := fbTableAt(fb, int(leU32(fb, 0)))
	if err != nil {
		return nil, err
	}
	version, err := m.int16Field(0)
	if err != nil {
		return nil, err
	}
	if version < 3 { // V4 and later
		return nil, corrupt("arrow metadata version %d", version)
	}
	ht, err := m.uint8Field(1, 0)
	if err != nil {
		return nil, err
	}
	if ht != fbHeaderRecordBatch {
		return nil, corrupt("arrow message header type %d, want RecordBatch", ht)
	}
	hp, err := m.ref(2)
	if err != nil {
		return nil, err
	}
	if hp < 0 {
		return nil, corrupt("arrow message without header")
	}
	bodyLen, err := m.int64Field(3)
	if err != nil {
		return nil, err
	}
	if bodyLen < 0 || bodyLen > int64(len(body)) {
		return nil, corrupt("arrow body length %d, have %d bytes", bodyLen, len(body))
	}
	rb, err := fbTableAt(fb, hp)
	if err != nil {
		return nil, err
	}
	out := &arrowMessage{body: body[:bodyLen], codec: -1, metaSize: pos + int(metaLen)}
	if out.rows, err = rb.int64Field(0); err != nil {
		return nil, err
	}
	nn, np, err := rb.structVector(1, 16)
	if err != nil {
		return nil, err
	}
	out.nodes = make([]arrowNode, nn)
	for i := range out.nodes {
		out.nodes[i] = arrowNode{length: int64(leU64(fb, np+16*i)), nulls: int64(leU64(fb, np+16*i+8))}
	}
	bn, bp, err := rb.structVector(2, 16)
	if err != nil {
		return nil, err
	}
	out.spans = make([]arrowSpan, bn)
	for i := range out.spans {
		s := arrowSpan{offset: int64(leU64(fb, bp+16*i)), length: int64(leU64(fb, bp+16*i+8))}
		if s.offset < 0 || s.length < 0 || s.offset > bodyLen || s.length > bodyLen-s.offset {
			return nil, corrupt("arrow buffer %d at %d+%d outside body of %d", i, s.offset, s.length, bodyLen)
		}
		out.spans[i] = s
	}
	cp, err := rb.ref(3)
	if err != nil {
		return nil, err
	}
	if cp >= 0 {
		bc, err := fbTableAt(fb, cp)
		if err != nil {
			return nil, err
		}
		codec, err := bc.uint8Field(0, fbCompressionLZ4)
		if err != nil {
			return nil, err
		}
		method, err := bc.uint8Field(1, 0)
		if err != nil {
			return nil, err
		}
		if method != 0 || codec > fbCompressionZSTD {
			return nil, corrupt("arrow body compression codec %d method %d", codec, method)
		}
		out.codec = int(codec)
	}
	return out, nil
}

// buffer returns body buffer i, decompressed.
func (d *arrowDecoder) buffer(m *arrowMessage, i int) ([]byte, error) {
	if i >= len(m.spans) {
		return nil, corrupt("arrow message has %d buffers, need more", len(m.spans))
	}
	s := m.spans[i]
	raw := m.body[s.offset : s.offset+s.length]
	if m.codec < 0 || len(raw) == 0 {
		return raw, nil
	}
	if len(raw) < 8 {
		return nil, corrupt("compressed arrow buffer %d of %d bytes", i, len(raw))
	}
	n := int64(leU64(raw, 0))
	if n == -1 {
		return raw[8:], nil
	}
	if n < 0 || n > maxArrowUncompressed {
		return nil, corrupt("arrow buffer %d uncompressed length %d", i, n)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]byte, n)
	switch m.codec {
	case fbCompressionZSTD:
		if d.zstd == nil {
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxArrowUncompressed))
			if err != nil {
				return nil, fmt.Errorf("create zstd decoder: %w", err)
			}
			d.zstd = dec
		}
		got, err := d.zstd.DecodeAll(raw[8:], out[:0])
		if err != nil {
			return nil, fmt.Errorf("%w: zstd buffer %d: %w", ErrCorruptBatch, i, err)
		}
		if len(got) != int(n) {
			return nil, corrupt("zstd buffer %d: %d bytes, header says %d", i, len(got), n)
		}
		return got, nil
	default:
		r := lz4.NewReader(bytes.NewReader(raw[8:]))
		if _, err := io.ReadFull(r, out); err != nil {
			return nil, fmt.Errorf("%w: lz4 buffer %d: %w", ErrCorruptBatch, i, err)
		}
		return out, nil
	}
}

// decode turns the Arrow message into count rows of types.
func (d *arrowDecoder) decode(msg []byte, types []DataType, count int) ([]Row, error) {
	m, err := parseArrowMessage(msg)
	if err != nil {
		return nil, err
	}
	if m.rows != int64(count) {
		return nil, corrupt("arrow batch has %d rows, header says %d", m.rows, count)
	}
	if int64(count)*int64(len(types)) > maxArrowDecodeCells {
		// Compressed buffers can claim any row count in a few bytes; this
		// reader is for verification and refuses what real batches never are.
		return nil, corrupt("arrow batch of %d rows x %d columns is larger than this decoder accepts", count, len(types))
	}
	cells := make([]Datum, count*len(types))
	rows := make([]Row, count)
	for r := range rows {
		rows[r] = cells[r*len(types) : (r+1)*len(types) : (r+1)*len(types)]
	}
	st := arrowDecodeState{m: m, cells: int64(count) * int64(len(types))}
	for ci := range types {
		if err := d.decodeColumn(&st, &types[ci], count, nil, rows, ci, 0); err != nil {
			return nil, err
		}
	}
	if st.node != len(m.nodes) {
		return nil, corrupt("arrow batch has %d field nodes, schema has %d", len(m.nodes), st.node)
	}
	return rows, nil
}

// arrowDecodeState walks the message's field nodes and buffers in order.
type arrowDecodeState struct {
	m     *arrowMessage
	node  int
	buf   int
	cells int64 // datums decoded so far, bounded by maxArrowDecodeCells
}

// decodeColumn decodes the next field node, of type t and length values,
// into out (nested columns and children) or into rows[r][ci] (top-level
// scalar columns, out nil).
func (d *arrowDecoder) decodeColumn(st *arrowDecodeState, t *DataType, length int, out []Datum, rows []Row, ci, depth int) error {
	m := st.m
	if depth > maxTypeDepth {
		return corrupt("arrow column nested deeper than %d levels", maxTypeDepth)
	}
	if st.node >= len(m.nodes) {
		return corrupt("arrow batch has %d field nodes, schema needs more", len(m.nodes))
	}
	node := m.nodes[st.node]
	st.node++
	if node.length != int64(length) {
		return corrupt("arrow column %d has %d values, want %d", ci, node.length, length)
	}
	set := func(r int, v Datum) {
		if out != nil {
			out[r] = v
		} else {
			rows[r][ci] = v
		}
	}
	kind, conv, width := arrowLayout(t)
	validity, err := d.buffer(m, st.buf)
	if err != nil {
		return err
	}
	st.buf++
	allNull := false
	switch {
	case len(validity) == 0 && node.nulls == 0:
	case len(validity) == 0 && node.nulls == int64(length):
		allNull = true
	case len(validity) < (length+7)/8:
		return corrupt("arrow column %d validity bitmap of %d bytes", ci, len(validity))
	}
	isNull := func(r int) bool {
		if allNull {
			return true
		}
		return len(validity) > 0 && validity[r>>3]&(1<<(r&7)) == 0
	}
	var offsets []byte
	if kind == akVar || kind == akList {
		if offsets, err = d.buffer(m, st.buf); err != nil {
			return err
		}
		st.buf++
		if length > 0 && len(offsets) < 4*(length+1) {
			return corrupt("arrow column %d offsets of %d bytes", ci, len(offsets))
		}
	}
	switch kind {
	case akList:
		return d.decodeList(st, t, length, offsets, isNull, set, ci, depth)
	case akStruct:
		return d.decodeStruct(st, t, length, isNull, set, ci, depth)
	}
	values, err := d.buffer(m, st.buf)
	if err != nil {
		return err
	}
	st.buf++
	switch kind {
	case akBool:
		if len(values) < (length+7)/8 {
			return corrupt("arrow column %d values of %d bytes", ci, len(values))
		}
	case akFixed, akFixedBinary:
		if int64(len(values)) < int64(length)*int64(width) {
			return corrupt("arrow column %d values of %d bytes", ci, len(values))
		}
	}
	for r := 0; r < length; r++ {
		if isNull(r) {
			set(r, Datum{Null: true})
			continue
		}
		var dm Datum
		switch kind {
		case akBool:
			if values[r>>3]&(1<<(r&7)) != 0 {
				dm.I = 1
			}
		case akVar:
			lo, hi := int64(int32(leU32(offsets, 4*r))), int64(int32(leU32(offsets, 4*r+4)))
			if lo < 0 || hi < lo || hi > int64(len(values)) {
				return corrupt("arrow column %d row %d offsets %d..%d", ci, r, lo, hi)
			}
			dm.B = values[lo:hi:hi]
		case akFixedBinary:
			dm.B = values[r*width : (r+1)*width : (r+1)*width]
		case akFixed:
			decodeArrowFixed(&dm, conv, width, values[r*width:(r+1)*width], t)
		}
		set(r, dm)
	}
	return nil
}

// childLength checks that a child of n values may be decoded and returns n.
func (st *arrowDecodeState) childLength(n int64, ci int) (int, error) {
	if n < 0 || n > maxArrowDecodeCells-st.cells {
		return 0, corrupt("arrow column %d: nested child of %d values is larger than this decoder accepts", ci, n)
	}
	st.cells += n
	return int(n), nil
}

// decodeList decodes an ARRAY (List) or MAP (Map) column whose validity and
// offsets were read.
func (d *arrowDecoder) decodeList(st *arrowDecodeState, t *DataType, length int, offsets []byte, isNull func(int) bool, set func(int, Datum), ci, depth int) error {
	if st.node >= len(st.m.nodes) {
		return corrupt("arrow batch has %d field nodes, schema needs more", len(st.m.nodes))
	}
	n, err := st.childLength(st.m.nodes[st.node].length, ci)
	if err != nil {
		return err
	}
	prev := int64(0)
	for r := 0; r <= length && length > 0; r++ {
		o := int64(int32(leU32(offsets, 4*r)))
		if o < prev || o > int64(n) {
			return corrupt("arrow column %d offset %d = %d (child has %d values)", ci, r, o, n)
		}
		prev = o
	}
	child := make([]Datum, n)
	var keys, values []Datum
	if t.Root == TypeArray {
		if err := d.decodeColumn(st, t.Elem, n, child, nil, ci, depth+1); err != nil {
			return err
		}
	} else {
		// the entries struct: validity, then key and value children
		if st.node >= len(st.m.nodes) || st.m.nodes[st.node].length != int64(n) {
			return corrupt("arrow column %d: map entries do not match its offsets", ci)
		}
		st.node++
		if _, err := d.buffer(st.m, st.buf); err != nil {
			return err
		}
		st.buf++
		if _, err := st.childLength(int64(n), ci); err != nil {
			return err
		}
		keys, values = child, make([]Datum, n)
		if err := d.decodeColumn(st, t.Key, n, keys, nil, ci, depth+1); err != nil {
			return err
		}
		if err := d.decodeColumn(st, t.Value, n, values, nil, ci, depth+1); err != nil {
			return err
		}
	}
	nested := make([]Nested, length)
	for r := 0; r < length; r++ {
		if isNull(r) {
			set(r, Datum{Null: true})
			continue
		}
		lo, hi := int32(leU32(offsets, 4*r)), int32(leU32(offsets, 4*r+4))
		if t.Root == TypeArray {
			nested[r].Elems = child[lo:hi:hi]
		} else {
			nested[r].Keys, nested[r].Values = keys[lo:hi:hi], values[lo:hi:hi]
		}
		set(r, Datum{Nested: &nested[r]})
	}
	return nil
}

// decodeStruct decodes a ROW (Struct) column whose validity was read.
func (d *arrowDecoder) decodeStruct(st *arrowDecodeState, t *DataType, length int, isNull func(int) bool, set func(int, Datum), ci, depth int) error {
	nf := len(t.Fields)
	total, err := st.childLength(int64(length)*int64(nf), ci)
	if err != nil {
		return err
	}
	cells := make([]Datum, total)
	col := make([]Datum, length)
	for f := 0; f < nf; f++ {
		if err := d.decodeColumn(st, &t.Fields[f].Type, length, col, nil, ci, depth+1); err != nil {
			return err
		}
		for r := 0; r < length; r++ {
			cells[r*nf+f] = col[r]
		}
	}
	nested := make([]Nested, length)
	for r := 0; r < length; r++ {
		if isNull(r) {
			set(r, Datum{Null: true})
			continue
		}
		nested[r].Fields = cells[r*nf : (r+1)*nf : (r+1)*nf]
		set(r, Datum{Nested: &nested[r]})
	}
	return nil
}

func decodeArrowFixed(d *Datum, conv arrowConv, width int, v []byte, t *DataType) {
	var x int64
	switch width {
	case 1:
		x = int64(int8(v[0]))
	case 2:
		x = int64(int16(leU16(v, 0)))
	case 4:
		x = int64(int32(leU32(v, 0)))
	case 8:
		x = int64(leU64(v, 0))
	}
	switch conv {
	case cvInt, cvTimeMilli, cvTsMilli:
		d.I = x
	case cvFloat32:
		d.F = float64(math.Float32frombits(uint32(x)))
	case cvFloat64:
		d.F = math.Float64frombits(uint64(x))
	case cvTimeSec, cvTsSec:
		d.I = x * 1000
	case cvTimeMicro:
		d.I = x / 1000
	case cvTimeNano:
		d.I = x / 1_000_000
	case cvTsMicro:
		ms, rem := floorDivMod(x, 1000)
		d.I, d.N = ms, int32(rem*1000)
	case cvTsNano:
		ms, rem := floorDivMod(x, 1_000_000)
		d.I, d.N = ms, int32(rem)
	case cvDecimalCompact:
		d.I = int64(leU64(v, 0))
	case cvDecimalBig:
		be := make([]byte, 16)
		for i := 0; i < 16; i++ {
			be[i] = v[15-i]
		}
		d.B = minimalDecimalBytes(be)
	}
}
