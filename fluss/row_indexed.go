package fluss

import (
	"fmt"
	"math"
)

// IndexedRow, as fluss-common's IndexedRowWriter writes it (0.9.1):
//
//	null bitset: ceil(fields/8) bytes (same bit convention as CompactedRow)
//	variable-length list: 4 bytes (int32 LE) per variable-length column of
//	  the schema (STRING, BYTES, DECIMAL p > 18, nested types). It is dense
//	  over the non-null variable-length values: the k-th non-null one writes
//	  its length into slot k; unused trailing slots stay 0.
//	then each non-null field in order (nulls take no bytes):
//	  BOOLEAN, TINYINT 1 · SMALLINT 2 LE · INTEGER, DATE, TIME, FLOAT 4 LE
//	  BIGINT, DOUBLE, DECIMAL p <= 18 8 LE
//	  TIMESTAMP[_LTZ] p <= 3: 8 LE millis; p > 3: 8 LE millis + 4 LE nanos
//	  CHAR(n), BINARY(n): exactly n bytes, zero padded (value must fit)
//	  STRING, BYTES, DECIMAL p > 18: raw bytes (length in the list)
//	  ARRAY, MAP, ROW: BinaryArray / BinaryMap / IndexedRow bytes (length in
//	    the list; row_nested.go)

// indexedVarLength reports whether a column takes a slot in the
// variable-length list (IndexedRow.isFixedLength is false).
func indexedVarLength(t *DataType) bool {
	switch t.Root {
	case TypeString, TypeBytes, TypeArray, TypeMap, TypeRow:
		return true
	case TypeDecimal:
		return t.Precision > compactDecimalPrecision
	}
	return false
}

func indexedVarCount(types []DataType) int {
	n := 0
	for i := range types {
		if indexedVarLength(&types[i]) {
			n++
		}
	}
	return n
}

// appendIndexedRow appends row as an IndexedRow; varCount must be
// indexedVarCount(types). On error dst is returned unchanged in length.
func appendIndexedRow(dst []byte, types []DataType, varCount int, row Row) ([]byte, error) {
	return appendIndexedRowSeq(dst, colSeq(types), varCount, row, 0)
}

func appendIndexedRowSeq(dst []byte, types typeSeq, varCount int, row []Datum, depth int) ([]byte, error) {
	nt := types.len()
	if len(row) != nt {
		return dst, errRowWidth(len(row), nt)
	}
	start := len(dst)
	nb := (nt + 7) / 8
	hdr := nb + 4*varCount
	for i := 0; i < hdr; i++ {
		dst = append(dst, 0)
	}
	slot := start + nb
	for i := 0; i < nt; i++ {
		t := types.at(i)
		d := &row[i]
		if d.Null {
			if t.NotNull {
				return dst[:start], errNullInNotNull(i, t)
			}
			dst[start+(i>>3)] |= 1 << (i & 7)
			continue
		}
		switch t.Root {
		case TypeBoolean:
			if d.I != 0 {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case TypeTinyInt:
			dst = append(dst, byte(d.I))
		case TypeSmallInt:
			dst = leAppendU16(dst, uint16(d.I))
		case TypeInt, TypeDate, TypeTime:
			dst = leAppendU32(dst, uint32(d.I))
		case TypeFloat:
			dst = leAppendU32(dst, math.Float32bits(float32(d.F)))
		case TypeBigInt:
			dst = leAppendU64(dst, uint64(d.I))
		case TypeDouble:
			dst = leAppendU64(dst, math.Float64bits(d.F))
		case TypeDecimal:
			if t.Precision <= compactDecimalPrecision {
				dst = leAppendU64(dst, uint64(d.I))
			} else {
				b := minimalDecimalBytes(d.B)
				lePutU32(dst, slot, uint32(len(b)))
				slot += 4
				dst = append(dst, b...)
			}
		case TypeTimestamp, TypeTimestampLTZ:
			dst = leAppendU64(dst, uint64(d.I))
			if t.Precision > compactTimestampPrecision {
				dst = leAppendU32(dst, uint32(d.N))
			}
		case TypeChar, TypeBinary:
			if len(d.B) > t.Length {
				return dst[:start], fmt.Errorf("fluss: column %d: %d bytes do not fit %s", i, len(d.B), t)
			}
			dst = append(dst, d.B...)
			for k := len(d.B); k < t.Length; k++ {
				dst = append(dst, 0)
			}
		case TypeString, TypeBytes:
			lePutU32(dst, slot, uint32(len(d.B)))
			slot += 4
			dst = append(dst, d.B...)
		case TypeArray, TypeMap, TypeRow:
			at := len(dst)
			var err error
			if dst, err = appendNestedBinary(dst, t, d, KvFormatIndexed, depth+1); err != nil {
				return dst[:start], fmt.Errorf("field %d: %w", i, err)
			}
			if len(dst)-at > math.MaxInt32 {
				return dst[:start], fmt.Errorf("fluss: field %d: %s value larger than 2 GiB", i, t.Root)
			}
			lePutU32(dst, slot, uint32(len(dst)-at))
			slot += 4
		default:
			return dst[:start], fmt.Errorf("fluss: field %d: cannot encode %s", i, t)
		}
	}
	return dst, nil
}

// indexedFixedSize is the byte size of a non-null fixed-length field.
func indexedFixedSize(t *DataType) int {
	switch t.Root {
	case TypeBoolean, TypeTinyInt:
		return 1
	case TypeSmallInt:
		return 2
	case TypeInt, TypeDate, TypeTime, TypeFloat:
		return 4
	case TypeBigInt, TypeDouble, TypeDecimal:
		return 8
	case TypeTimestamp, TypeTimestampLTZ:
		if t.Precision > compactTimestampPrecision {
			return 12
		}
		return 8
	case TypeChar, TypeBinary:
		return t.Length
	}
	return 0
}

// decodeIndexedRow decodes an IndexedRow. Byte-string values point into b.
// CHAR values have trailing zero bytes removed (IndexedRow.getChar); BINARY
// values keep their full fixed length.
func decodeIndexedRow(b []byte, types []DataType, varCount int, row Row) error {
	return decodeIndexedRowSeq(b, colSeq(types), varCount, row, 0, nil)
}

// decodeIndexedRowSeq decodes an IndexedRow of types; budget is shared by
// the nested values of a top-level row (nil: a new one).
func decodeIndexedRowSeq(b []byte, types typeSeq, varCount int, row []Datum, depth int, budget *int) error {
	nt := types.len()
	nb := (nt + 7) / 8
	hdr := nb + 4*varCount
	if len(b) < hdr {
		return errShortRow
	}
	slot := nb
	pos := hdr
	for i := 0; i < nt; i++ {
		t := types.at(i)
		if b[i>>3]&(1<<(i&7)) != 0 {
			row[i] = Datum{Null: true}
			continue
		}
		var n int
		if indexedVarLength(t) {
			if slot+4 > hdr {
				return fmt.Errorf("fluss: indexed row: variable-length list overflow at field %d", i)
			}
			l := leU32(b, slot)
			slot += 4
			if int64(l) > int64(len(b)-pos) {
				return errShortRow
			}
			n = int(l)
		} else {
			n = indexedFixedSize(t)
			if n == 0 {
				return fmt.Errorf("fluss: cannot decode %s", t)
			}
		}
		if len(b)-pos < n {
			return errShortRow
		}
		v := b[pos : pos+n : pos+n]
		pos += n
		d := Datum{}
		switch t.Root {
		case TypeBoolean:
			d.I = int64(v[0] & 1)
		case TypeTinyInt:
			d.I = int64(int8(v[0]))
		case TypeSmallInt:
			d.I = int64(int16(leU16(v, 0)))
		case TypeInt, TypeDate, TypeTime:
			d.I = int64(int32(leU32(v, 0)))
		case TypeFloat:
			d.F = float64(math.Float32frombits(leU32(v, 0)))
		case TypeBigInt:
			d.I = int64(leU64(v, 0))
		case TypeDouble:
			d.F = math.Float64frombits(leU64(v, 0))
		case TypeDecimal:
			if t.Precision <= compactDecimalPrecision {
				d.I = int64(leU64(v, 0))
			} else {
				d.B = v
			}
		case TypeTimestamp, TypeTimestampLTZ:
			d.I = int64(leU64(v, 0))
			if n == 12 {
				d.N = int32(leU32(v, 8))
			}
		case TypeChar:
			k := len(v)
			for k > 0 && v[k-1] == 0 {
				k--
			}
			d.B = v[:k]
		case TypeArray, TypeMap, TypeRow:
			if budget == nil {
				bud := nestedBudget(len(b))
				budget = &bud
			}
			if err := decodeNestedBinary(v, t, &d, KvFormatIndexed, depth+1, budget); err != nil {
				return fmt.Errorf("decode indexed field %d (%s): %w", i, t, err)
			}
		default:
			d.B = v
		}
		row[i] = d
	}
	if pos != len(b) {
		return fmt.Errorf("fluss: %d trailing bytes after indexed row", len(b)-pos)
	}
	return nil
}
