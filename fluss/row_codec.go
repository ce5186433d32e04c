package fluss

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Helpers shared by the row, key and batch encoders: the unsigned varints
// Fluss uses (no zigzag), the decimal byte form, and the checks that decide
// whether a schema or a row can be encoded at all.

// ErrNestedKey is returned for ARRAY, MAP and ROW columns used as key
// columns (primary key, bucket key): Fluss refuses them there
// (TableDescriptor and Schema validation in 0.9.1), and no key encoding
// exists for them.
var ErrNestedKey = errors.New("fluss: ARRAY, MAP and ROW columns cannot be primary-key or bucket-key columns")

// ErrNestedNotImplemented is the error key encoders returned for nested
// columns before nested value columns were implemented.
//
// Deprecated: nested value columns are supported; key encoders return
// ErrNestedKey, which this is an alias of.
var ErrNestedNotImplemented = ErrNestedKey

// maxTypeDepth bounds the nesting of ARRAY, MAP and ROW types the encoders
// accept (recursion depth of the codecs).
const maxTypeDepth = 64

// compactDecimalPrecision is the largest DECIMAL precision whose unscaled
// value is carried as an int64 (Fluss Decimal.MAX_COMPACT_PRECISION).
const compactDecimalPrecision = 18

// compactTimestampPrecision is the largest TIMESTAMP precision stored as
// milliseconds only (TimestampNtz/TimestampLtz.isCompact).
const compactTimestampPrecision = 3

// checkSchemaTypes reports whether every column of the schema is a type the
// encoders support (scalars, and ARRAY, MAP and ROW of supported types),
// with sane precision and length parameters.
func checkSchemaTypes(s *Schema) error {
	if s == nil || len(s.Columns) == 0 {
		return errors.New("fluss: schema has no columns")
	}
	for i := range s.Columns {
		if err := checkType(&s.Columns[i].Type, 0); err != nil {
			return fmt.Errorf("column %q: %w", s.Columns[i].Name, err)
		}
	}
	return nil
}

// checkType checks a value type, nested types included.
func checkType(t *DataType, depth int) error {
	if depth > maxTypeDepth {
		return fmt.Errorf("fluss: types nested deeper than %d levels", maxTypeDepth)
	}
	switch t.Root {
	case TypeArray:
		if t.Elem == nil {
			return errors.New("fluss: ARRAY without element type")
		}
		if err := checkType(t.Elem, depth+1); err != nil {
			return fmt.Errorf("ARRAY element: %w", err)
		}
	case TypeMap:
		if t.Key == nil || t.Value == nil {
			return errors.New("fluss: MAP without key or value type")
		}
		if err := checkType(t.Key, depth+1); err != nil {
			return fmt.Errorf("MAP key: %w", err)
		}
		if err := checkType(t.Value, depth+1); err != nil {
			return fmt.Errorf("MAP value: %w", err)
		}
	case TypeRow:
		for i := range t.Fields {
			if err := checkType(&t.Fields[i].Type, depth+1); err != nil {
				return fmt.Errorf("ROW field %q: %w", t.Fields[i].Name, err)
			}
		}
	default:
		return checkScalarType(t)
	}
	return nil
}

// checkScalarType checks a scalar type; nested types give ErrNestedKey (it
// is what key columns are checked with).
func checkScalarType(t *DataType) error {
	switch t.Root {
	case TypeBoolean, TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeFloat, TypeDouble,
		TypeString, TypeBytes, TypeDate:
		return nil
	case TypeDecimal:
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("fluss: invalid %s", t)
		}
	case TypeChar, TypeBinary:
		if t.Length < 1 {
			return fmt.Errorf("fluss: invalid %s", t)
		}
	case TypeTime, TypeTimestamp, TypeTimestampLTZ:
		if t.Precision < 0 || t.Precision > 9 {
			return fmt.Errorf("fluss: invalid %s", t)
		}
	case TypeArray, TypeMap, TypeRow:
		return fmt.Errorf("%w (%s)", ErrNestedKey, t.Root)
	default:
		return fmt.Errorf("fluss: unsupported data type %s", t.Root)
	}
	return nil
}

func columnTypes(s *Schema) []DataType {
	ts := make([]DataType, len(s.Columns))
	for i := range s.Columns {
		ts[i] = s.Columns[i].Type
	}
	return ts
}

// errRowWidth and errNotNull are the two row-shape errors; built lazily on
// the failure path only.
func errRowWidth(got, want int) error {
	return fmt.Errorf("fluss: row has %d values, schema has %d columns", got, want)
}

func errNullInNotNull(col int, t *DataType) error {
	return fmt.Errorf("fluss: null value in NOT NULL column %d (%s)", col, t)
}

// appendUvarint32 writes v as an unsigned LEB128 of at most 5 bytes, the
// way CompactedRowWriter.writeInt does (negative ints take 5 bytes).
func appendUvarint32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendUvarint64 writes v as an unsigned LEB128 of at most 10 bytes
// (CompactedRowWriter.writeLong).
func appendUvarint64(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

func uvarint32Size(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

var errVarint = errors.New("fluss: malformed varint")

// readUvarint32 reads a varint of at most 5 bytes; higher bits of the
// fifth byte are dropped, as Java's CompactedRowReader.readInt does.
func readUvarint32(b []byte) (uint32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errVarint
		}
		c := b[i]
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errVarint
}

func readUvarint64(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0, errVarint
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// minimalDecimalBytes trims redundant sign bytes from a big-endian two's
// complement integer, giving the bytes Java's BigInteger.toByteArray writes.
// An empty input means zero.
func minimalDecimalBytes(b []byte) []byte {
	if len(b) == 0 {
		return []byte{0}
	}
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	return b
}

// decimalFromInt64 renders an int64 unscaled value as minimal big-endian
// two's complement bytes, appended to dst.
func appendDecimalInt64(dst []byte, v int64) []byte {
	var tmp [8]byte
	binary.BigEndian.PutUint64(tmp[:], uint64(v))
	return append(dst, minimalDecimalBytes(tmp[:])...)
}

func leU16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
func leU32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func leU64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
func lePutU16(b []byte, off int, v uint16) {
	binary.LittleEndian.PutUint16(b[off:], v)
}
func lePutU32(b []byte, off int, v uint32) {
	binary.LittleEndian.PutUint32(b[off:], v)
}
func lePutU64(b []byte, off int, v uint64) {
	binary.LittleEndian.PutUint64(b[off:], v)
}

func leAppendU16(dst []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(dst, v) }
func leAppendU32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }
func leAppendU64(dst []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(dst, v) }

// floorDivMod returns the floor quotient and the non-negative remainder.
func floorDivMod(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}
