package fluss

import (
	"errors"
	"fmt"
	"math"
)

// CompactedRow, as fluss-common's CompactedRowWriter writes it (0.9.1):
//
//	null bitset: ceil(fields/8) bytes, bit i = byte[i>>3] & (1<<(i&7)), set = null
//	then each non-null field in order (a null field takes no bytes):
//	  BOOLEAN, TINYINT            1 byte
//	  SMALLINT                    2 bytes LE (not a varint)
//	  INTEGER, DATE, TIME         varint32 (unsigned LEB128, negative = 5 bytes)
//	  BIGINT                      varint64
//	  FLOAT, DOUBLE               4 / 8 bytes LE IEEE-754
//	  CHAR, STRING, BINARY, BYTES varint32 length + bytes (no padding)
//	  DECIMAL p <= 18             varint64 of the unscaled long
//	  DECIMAL p > 18              varint32 length + minimal big-endian two's complement
//	  TIMESTAMP[_LTZ] p <= 3      varint64 epoch millis
//	  TIMESTAMP[_LTZ] p > 3       varint64 epoch millis + varint32 nano-of-milli
//	  ARRAY, MAP, ROW             varint32 length + BinaryArray / BinaryMap /
//	                              CompactedRow (row_nested.go)
//
// The compacted key encoding (CompactedKeyEncoder) is the same field
// encoding with no null bitset.

// appendCompactedField appends one non-null value in the compacted field
// encoding. The type must have passed checkScalarType.
func appendCompactedField(dst []byte, t *DataType, d *Datum) []byte {
	switch t.Root {
	case TypeBoolean:
		if d.I != 0 {
			return append(dst, 1)
		}
		return append(dst, 0)
	case TypeTinyInt:
		return append(dst, byte(d.I))
	case TypeSmallInt:
		return leAppendU16(dst, uint16(d.I))
	case TypeInt, TypeDate, TypeTime:
		return appendUvarint32(dst, uint32(int32(d.I)))
	case TypeBigInt:
		return appendUvarint64(dst, uint64(d.I))
	case TypeFloat:
		return leAppendU32(dst, math.Float32bits(float32(d.F)))
	case TypeDouble:
		return leAppendU64(dst, math.Float64bits(d.F))
	case TypeChar, TypeString, TypeBinary, TypeBytes:
		dst = appendUvarint32(dst, uint32(len(d.B)))
		return append(dst, d.B...)
	case TypeDecimal:
		if t.Precision <= compactDecimalPrecision {
			return appendUvarint64(dst, uint64(d.I))
		}
		b := minimalDecimalBytes(d.B)
		dst = appendUvarint32(dst, uint32(len(b)))
		return append(dst, b...)
	case TypeTimestamp, TypeTimestampLTZ:
		dst = appendUvarint64(dst, uint64(d.I))
		if t.Precision > compactTimestampPrecision {
			dst = appendUvarint32(dst, uint32(d.N))
		}
		return dst
	}
	return dst
}

// appendCompactedRow appends row as a CompactedRow. On error dst is
// returned unchanged in length.
func appendCompactedRow(dst []byte, types []DataType, row Row) ([]byte, error) {
	return appendCompactedRowSeq(dst, colSeq(types), row, 0)
}

func appendCompactedRowSeq(dst []byte, types typeSeq, row []Datum, depth int) ([]byte, error) {
	n := types.len()
	if len(row) != n {
		return dst, errRowWidth(len(row), n)
	}
	start := len(dst)
	nb := (n + 7) / 8
	for i := 0; i < nb; i++ {
		dst = append(dst, 0)
	}
	for i := 0; i < n; i++ {
		t := types.at(i)
		d := &row[i]
		if d.Null {
			if t.NotNull {
				return dst[:start], errNullInNotNull(i, t)
			}
			dst[start+(i>>3)] |= 1 << (i & 7)
			continue
		}
		if t.IsNested() {
			var err error
			if dst, err = appendCompactedNested(dst, t, d, depth); err != nil {
				return dst[:start], fmt.Errorf("field %d: %w", i, err)
			}
			continue
		}
		dst = appendCompactedField(dst, t, d)
	}
	return dst, nil
}

// appendCompactedNested appends a non-null ARRAY, MAP or ROW field: a
// varint32 length, then the value's binary form. The form is built in place
// and moved right by the length's size (CompactedRowWriter.write(length,
// segments, offset) writes the length first).
func appendCompactedNested(dst []byte, t *DataType, d *Datum, depth int) ([]byte, error) {
	start := len(dst)
	dst, err := appendNestedBinary(dst, t, d, KvFormatCompacted, depth+1)
	if err != nil {
		return dst[:start], err
	}
	n := len(dst) - start
	if n > math.MaxInt32 {
		return dst[:start], fmt.Errorf("fluss: %s value larger than 2 GiB", t.Root)
	}
	k := uvarint32Size(uint32(n))
	dst = appendZeros(dst, k)
	copy(dst[start+k:], dst[start:start+n])
	appendUvarint32(dst[:start], uint32(n))
	return dst, nil
}

// compactedReader decodes compacted fields from a byte slice; values that
// are byte strings point into the input.
type compactedReader struct {
	b      []byte
	pos    int
	depth  int
	budget *int // nested datums still allowed (nestedBudget); nil until needed
}

var errShortRow = errors.New("fluss: row bytes truncated")

func (r *compactedReader) byte1() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errShortRow
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *compactedReader) fixed(n int) ([]byte, error) {
	if n < 0 || len(r.b)-r.pos < n {
		return nil, errShortRow
	}
	s := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return s, nil
}

func (r *compactedReader) u32() (uint32, error) {
	v, n, err := readUvarint32(r.b[r.pos:])
	r.pos += n
	return v, err
}

func (r *compactedReader) u64() (uint64, error) {
	v, n, err := readUvarint64(r.b[r.pos:])
	r.pos += n
	return v, err
}

func (r *compactedReader) lenPrefixed() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if int64(n) > int64(len(r.b)-r.pos) {
		return nil, errShortRow
	}
	return r.fixed(int(n))
}

// field decodes one non-null field into d.
func (r *compactedReader) field(t *DataType, d *Datum) error {
	var err error
	switch t.Root {
	case TypeBoolean, TypeTinyInt:
		var c byte
		c, err = r.byte1()
		if t.Root == TypeBoolean {
			d.I = int64(c & 1)
		} else {
			d.I = int64(int8(c))
		}
	case TypeSmallInt:
		var b []byte
		b, err = r.fixed(2)
		if err == nil {
			d.I = int64(int16(leU16(b, 0)))
		}
	case TypeInt, TypeDate, TypeTime:
		var v uint32
		v, err = r.u32()
		d.I = int64(int32(v))
	case TypeBigInt:
		var v uint64
		v, err = r.u64()
		d.I = int64(v)
	case TypeFloat:
		var b []byte
		b, err = r.fixed(4)
		if err == nil {
			d.F = float64(math.Float32frombits(leU32(b, 0)))
		}
	case TypeDouble:
		var b []byte
		b, err = r.fixed(8)
		if err == nil {
			d.F = math.Float64frombits(leU64(b, 0))
		}
	case TypeChar, TypeString, TypeBinary, TypeBytes:
		d.B, err = r.lenPrefixed()
	case TypeDecimal:
		if t.Precision <= compactDecimalPrecision {
			var v uint64
			v, err = r.u64()
			d.I = int64(v)
		} else {
			d.B, err = r.lenPrefixed()
		}
	case TypeTimestamp, TypeTimestampLTZ:
		var v uint64
		v, err = r.u64()
		d.I = int64(v)
		if err == nil && t.Precision > compactTimestampPrecision {
			var n uint32
			n, err = r.u32()
			d.N = int32(n)
		}
	case TypeArray, TypeMap, TypeRow:
		var b []byte
		if b, err = r.lenPrefixed(); err != nil {
			return err
		}
		if r.budget == nil {
			budget := nestedBudget(len(r.b))
			r.budget = &budget
		}
		return decodeNestedBinary(b, t, d, KvFormatCompacted, r.depth+1, r.budget)
	default:
		return fmt.Errorf("fluss: cannot decode %s", t)
	}
	return err
}

// decodeCompactedRow decodes a whole CompactedRow (with null bitset).
func decodeCompactedRow(b []byte, types []DataType, row Row) error {
	return decodeCompactedRowSeq(b, colSeq(types), row, 0, nil)
}

// decodeCompactedRowSeq decodes a CompactedRow of types; budget is shared
// by the nested values of a top-level row (nil: a new one).
func decodeCompactedRowSeq(b []byte, types typeSeq, row []Datum, depth int, budget *int) error {
	n := types.len()
	nb := (n + 7) / 8
	if len(b) < nb {
		return errShortRow
	}
	r := compactedReader{b: b, pos: nb, depth: depth, budget: budget}
	for i := 0; i < n; i++ {
		if b[i>>3]&(1<<(i&7)) != 0 {
			row[i] = Datum{Null: true}
			continue
		}
		row[i] = Datum{}
		if err := r.field(types.at(i), &row[i]); err != nil {
			return fmt.Errorf("decode compacted field %d (%s): %w", i, types.at(i), err)
		}
	}
	if r.pos != len(b) {
		return fmt.Errorf("fluss: %d trailing bytes after compacted row", len(b)-r.pos)
	}
	return nil
}

// DecodeCompactedKey decodes key bytes written by a KeyEncoder (compacted
// key encoding, no null bitset) for the given key column types.
func DecodeCompactedKey(key []byte, types []DataType) (Row, error) {
	row := make(Row, len(types))
	r := compactedReader{b: key}
	for i := range types {
		if err := checkScalarType(&types[i]); err != nil {
			return nil, err
		}
		if err := r.field(&types[i], &row[i]); err != nil {
			return nil, fmt.Errorf("decode key field %d (%s): %w", i, &types[i], err)
		}
	}
	if r.pos != len(key) {
		return nil, fmt.Errorf("fluss: %d trailing bytes after key", len(key)-r.pos)
	}
	return row, nil
}
