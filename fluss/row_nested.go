package fluss

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// ARRAY, MAP and ROW values inside CompactedRows and IndexedRows, as
// apache/fluss v0.9.1-incubating writes them. Paths below are relative to
// fluss-common/src/main/java/org/apache/fluss/row/ in apache/fluss.
//
// compacted/CompactedRowWriter.writeArray/writeMap/writeRow and
// indexed/IndexedRowWriter's write the nested value's binary form as a
// variable-length field (compacted: varint32 length + bytes; indexed: length
// in the variable-length list + bytes). The forms come from
// serializer/ArraySerializer, MapSerializer and RowSerializer, created by
// BinaryWriter.createValueWriter with the row's format (BinaryRowFormat
// COMPACTED or INDEXED):
//
//   - ARRAY: a BinaryArray (BinaryArray.java, BinaryArrayWriter.java,
//     AbstractBinaryWriter.java), all integers little-endian:
//
//     int32 element count n · null bits, 4 bytes per 32 elements
//     (bit i = byte[4 + i>>3] & (1 << (i&7)), set = null) · fixed part of
//     n slots (BinaryArray.calculateFixLengthPartSize: BOOLEAN, TINYINT 1;
//     SMALLINT 2; INTEGER, DATE, TIME, FLOAT 4; everything else 8), padded
//     with zeros to a multiple of 8 · variable part, each value padded to 8.
//
//     A null element sets its bit; its slot stays zero. Primitive slots hold
//     the value (FLOAT and DOUBLE NaN canonical, as BinaryArrayWriter
//     writes). DECIMAL p <= 18 and TIMESTAMP p <= 3 hold the long.
//     CHAR, STRING, BINARY, BYTES of at most 7 bytes are inline: the bytes,
//     then byte 7 of the slot = 0x80 | length; longer ones go to the
//     variable part and the slot holds offset << 32 | length (offset from
//     the array's start). DECIMAL p > 18: 16 bytes in the variable part, the
//     minimal big-endian two's complement at their start, slot offset << 32
//     | byte count. TIMESTAMP p > 3: 8 bytes of millis in the variable part,
//     slot offset << 32 | nano-of-milli. ARRAY, MAP, ROW elements: their own
//     binary form in the variable part, slot offset << 32 | size.
//
//   - MAP: a BinaryMap (BinaryMap.valueOf): int32 byte size of the key array
//     · key BinaryArray · value BinaryArray, in entry order.
//
//   - ROW: the nested row in the enclosing row's format (a CompactedRow
//     inside compacted rows, an IndexedRow inside indexed rows), null bitset
//     included; ROW elements of arrays and maps likewise (array/CompactedArray
//     and array/IndexedArray read them back so).
//
// Arrays of a GenericArray of primitives take BinaryArray.fromPrimitiveArray
// instead, which is the same layout (only NaN payloads are kept as given).
// Java's ArraySerializer reuses its writer for arrays of equal length within
// a row, and setNullAt leaves the slot of a null CHAR, STRING, BINARY,
// BYTES, DECIMAL, ARRAY, MAP or ROW element as the previous array left it;
// we always write zeros there (readers never look at a null's slot).
// record_java_nested_integration_test.go checks all this against Java.

// typeSeq is a list of field types: a schema's columns, or a ROW type's
// fields, so the row codecs serve both without copying the types. It walks
// the DataTypes in place with a stride (the size of DataType for columns, of
// Field for a ROW's fields); a branch per field to tell the two apart (and
// its bounds checks) made the scalar IndexedRow encoder about 15% slower.
// Indexes are always in [0, n), so at never leaves the slice.
type typeSeq struct {
	base   unsafe.Pointer // the first DataType, nil when n == 0
	stride uintptr
	n      int
}

func colSeq(cols []DataType) typeSeq {
	if len(cols) == 0 {
		return typeSeq{}
	}
	return typeSeq{base: unsafe.Pointer(&cols[0]), stride: unsafe.Sizeof(DataType{}), n: len(cols)}
}

func fieldSeq(fields []Field) typeSeq {
	if len(fields) == 0 {
		return typeSeq{}
	}
	return typeSeq{base: unsafe.Pointer(&fields[0].Type), stride: unsafe.Sizeof(Field{}), n: len(fields)}
}

func (s typeSeq) len() int { return s.n }

// at returns type i; i must be in [0, len()).
func (s typeSeq) at(i int) *DataType {
	return (*DataType)(unsafe.Add(s.base, uintptr(i)*s.stride))
}

func (s typeSeq) varCount() int {
	n := 0
	for i := 0; i < s.len(); i++ {
		if indexedVarLength(s.at(i)) {
			n++
		}
	}
	return n
}

// maxBinaryArrayElements keeps the fixed part of a BinaryArray (8 bytes a
// slot at most) inside Java's int32 sizes.
const maxBinaryArrayElements = (math.MaxInt32 - 64) / 8

var errNilNested = errors.New("fluss: nested value without its Nested contents")

// binaryArrayElemSize is BinaryArray.calculateFixLengthPartSize.
func binaryArrayElemSize(t *DataType) int {
	switch t.Root {
	case TypeBoolean, TypeTinyInt:
		return 1
	case TypeSmallInt:
		return 2
	case TypeInt, TypeDate, TypeTime, TypeFloat:
		return 4
	}
	return 8
}

func binaryArrayHeaderSize(n int) int { return 4 + ((n+31)/32)*4 }

// appendZeros appends n zero bytes (no allocation beyond dst's growth).
func appendZeros(dst []byte, n int) []byte {
	return append(dst, make([]byte, n)...)
}

// appendBinaryArray appends elems as a BinaryArray whose nested rows are in
// format (COMPACTED or INDEXED).
func appendBinaryArray(dst []byte, et *DataType, elems []Datum, format KvFormat, depth int) ([]byte, error) {
	n := len(elems)
	if n > maxBinaryArrayElements {
		return dst, fmt.Errorf("fluss: array of %d elements is too large", n)
	}
	base := len(dst)
	hdr := binaryArrayHeaderSize(n)
	es := binaryArrayElemSize(et)
	dst = appendZeros(dst, pad8(hdr+es*n))
	lePutU32(dst, base, uint32(n))
	for i := range elems {
		d := &elems[i]
		slot := base + hdr + es*i
		if d.Null {
			if et.NotNull {
				return dst[:base], fmt.Errorf("fluss: null element %d in array of %s", i, et)
			}
			dst[base+4+(i>>3)] |= 1 << (i & 7)
			continue
		}
		var err error
		switch et.Root {
		case TypeBoolean:
			dst[slot] = byte(b2i(d.I != 0))
		case TypeTinyInt:
			dst[slot] = byte(d.I)
		case TypeSmallInt:
			lePutU16(dst, slot, uint16(d.I))
		case TypeInt, TypeDate, TypeTime:
			lePutU32(dst, slot, uint32(d.I))
		case TypeFloat:
			f := float32(d.F)
			if f != f {
				f = float32(math.NaN())
			}
			lePutU32(dst, slot, math.Float32bits(f))
		case TypeBigInt:
			lePutU64(dst, slot, uint64(d.I))
		case TypeDouble:
			f := d.F
			if f != f {
				f = math.NaN()
			}
			lePutU64(dst, slot, math.Float64bits(f))
		case TypeDecimal:
			if et.Precision <= compactDecimalPrecision {
				lePutU64(dst, slot, uint64(d.I))
				break
			}
			b := minimalDecimalBytes(d.B)
			if len(b) > 16 {
				return dst[:base], fmt.Errorf("fluss: array element %d: decimal value wider than 128 bits", i)
			}
			off := len(dst) - base
			dst = appendZeros(dst, 16)
			copy(dst[base+off:], b)
			lePutU64(dst, slot, uint64(off)<<32|uint64(len(b)))
		case TypeTimestamp, TypeTimestampLTZ:
			if et.Precision <= compactTimestampPrecision {
				lePutU64(dst, slot, uint64(d.I))
				break
			}
			off := len(dst) - base
			dst = leAppendU64(dst, uint64(d.I))
			lePutU64(dst, slot, uint64(off)<<32|uint64(uint32(d.N)))
		case TypeChar, TypeString, TypeBinary, TypeBytes:
			if len(d.B) <= 7 {
				copy(dst[slot:slot+7], d.B)
				dst[slot+7] = 0x80 | byte(len(d.B))
				break
			}
			off := len(dst) - base
			dst = append(dst, d.B...)
			dst = appendZeros(dst, pad8(len(d.B))-len(d.B))
			lePutU64(dst, slot, uint64(off)<<32|uint64(len(d.B)))
		case TypeArray, TypeMap, TypeRow:
			off := len(dst) - base
			dst, err = appendNestedBinary(dst, et, d, format, depth+1)
			if err != nil {
				return dst[:base], fmt.Errorf("array element %d: %w", i, err)
			}
			size := len(dst) - base - off
			dst = appendZeros(dst, pad8(size)-size)
			lePutU64(dst, slot, uint64(off)<<32|uint64(size))
		default:
			return dst[:base], fmt.Errorf("fluss: cannot encode %s", et)
		}
		if len(dst)-base > math.MaxInt32 {
			return dst[:base], errors.New("fluss: array larger than 2 GiB")
		}
	}
	return dst, nil
}

// appendBinaryMap appends a BinaryMap of the entries keys[i] → values[i].
func appendBinaryMap(dst []byte, t *DataType, n *Nested, format KvFormat, depth int) ([]byte, error) {
	if len(n.Keys) != len(n.Values) {
		return dst, fmt.Errorf("fluss: map has %d keys and %d values", len(n.Keys), len(n.Values))
	}
	for i := range n.Keys {
		if n.Keys[i].Null {
			return dst, fmt.Errorf("fluss: null key in entry %d of %s (Fluss map keys are never null)", i, t)
		}
	}
	base := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := appendBinaryArray(dst, t.Key, n.Keys, format, depth)
	if err != nil {
		return dst[:base], fmt.Errorf("map keys: %w", err)
	}
	lePutU32(dst, base, uint32(len(dst)-base-4))
	dst, err = appendBinaryArray(dst, t.Value, n.Values, format, depth)
	if err != nil {
		return dst[:base], fmt.Errorf("map values: %w", err)
	}
	return dst, nil
}

// appendNestedBinary appends the binary form of a non-null ARRAY, MAP or
// ROW value: a BinaryArray, a BinaryMap, or a row in format.
func appendNestedBinary(dst []byte, t *DataType, d *Datum, format KvFormat, depth int) ([]byte, error) {
	if depth > maxTypeDepth {
		return dst, fmt.Errorf("fluss: values nested deeper than %d levels", maxTypeDepth)
	}
	if d.Nested == nil {
		return dst, fmt.Errorf("%w (%s)", errNilNested, t)
	}
	switch t.Root {
	case TypeArray:
		return appendBinaryArray(dst, t.Elem, d.Nested.Elems, format, depth)
	case TypeMap:
		return appendBinaryMap(dst, t, d.Nested, format, depth)
	case TypeRow:
		seq := fieldSeq(t.Fields)
		if len(d.Nested.Fields) != len(t.Fields) {
			return dst, fmt.Errorf("fluss: row value has %d fields, %s has %d", len(d.Nested.Fields), t, len(t.Fields))
		}
		if format == KvFormatIndexed {
			return appendIndexedRowSeq(dst, seq, seq.varCount(), d.Nested.Fields, depth)
		}
		return appendCompactedRowSeq(dst, seq, d.Nested.Fields, depth)
	}
	return dst, fmt.Errorf("fluss: %s is not a nested type", t)
}

// ---------------------------------------------------------------- decoding

var errNestedBudget = errors.New("fluss: nested values expand beyond what their bytes can hold")

// nestedBudget bounds how many datums the nested decoders allocate for one
// row: a real row never holds more than 8 datums per byte (a null field of
// a nested row costs one bit), but slots of hostile arrays may all point to
// the same large element.
func nestedBudget(rowBytes int) int { return 8*rowBytes + 64 }

func takeBudget(budget *int, n int) error {
	if n > *budget {
		return errNestedBudget
	}
	*budget -= n
	return nil
}

// decodeNestedBinary decodes the binary form of a non-null nested value of
// type t into d. Byte strings point into b.
func decodeNestedBinary(b []byte, t *DataType, d *Datum, format KvFormat, depth int, budget *int) error {
	if depth > maxTypeDepth {
		return fmt.Errorf("fluss: values nested deeper than %d levels", maxTypeDepth)
	}
	switch t.Root {
	case TypeArray:
		elems, err := decodeBinaryArray(b, t.Elem, format, depth, budget)
		if err != nil {
			return err
		}
		d.Nested = &Nested{Elems: elems}
	case TypeMap:
		if len(b) < 4 {
			return errShortRow
		}
		kl := int64(leU32(b, 0))
		if kl > int64(len(b)-4) {
			return fmt.Errorf("fluss: map key array of %d bytes in %d", kl, len(b))
		}
		keys, err := decodeBinaryArray(b[4:4+kl], t.Key, format, depth, budget)
		if err != nil {
			return fmt.Errorf("map keys: %w", err)
		}
		values, err := decodeBinaryArray(b[4+kl:], t.Value, format, depth, budget)
		if err != nil {
			return fmt.Errorf("map values: %w", err)
		}
		if len(keys) != len(values) {
			return fmt.Errorf("fluss: map has %d keys and %d values", len(keys), len(values))
		}
		d.Nested = &Nested{Keys: keys, Values: values}
	case TypeRow:
		seq := fieldSeq(t.Fields)
		if err := takeBudget(budget, len(t.Fields)); err != nil {
			return err
		}
		fields := make([]Datum, len(t.Fields))
		var err error
		if format == KvFormatIndexed {
			err = decodeIndexedRowSeq(b, seq, seq.varCount(), fields, depth, budget)
		} else {
			err = decodeCompactedRowSeq(b, seq, fields, depth, budget)
		}
		if err != nil {
			return fmt.Errorf("nested row: %w", err)
		}
		d.Nested = &Nested{Fields: fields}
	default:
		return fmt.Errorf("fluss: %s is not a nested type", t)
	}
	return nil
}

// decodeBinaryArray decodes a BinaryArray of element type et.
func decodeBinaryArray(b []byte, et *DataType, format KvFormat, depth int, budget *int) ([]Datum, error) {
	if len(b) < 4 {
		return nil, errShortRow
	}
	n := int64(int32(leU32(b, 0)))
	if n < 0 {
		return nil, fmt.Errorf("fluss: array of %d elements", n)
	}
	es := int64(binaryArrayElemSize(et))
	hdr := 4 + ((n+31)/32)*4
	if hdr+es*n > int64(len(b)) {
		return nil, fmt.Errorf("fluss: array of %d elements in %d bytes", n, len(b))
	}
	if err := takeBudget(budget, int(n)); err != nil {
		return nil, err
	}
	out := make([]Datum, n)
	// varPart returns the bytes a slot's offset << 32 | size points to.
	varPart := func(v uint64, size int64) ([]byte, error) {
		off := int64(v >> 32)
		if off > int64(len(b)) || size < 0 || size > int64(len(b))-off {
			return nil, fmt.Errorf("fluss: array element at %d+%d outside %d bytes", off, size, len(b))
		}
		return b[off : off+size : off+size], nil
	}
	for i := int64(0); i < n; i++ {
		d := &out[i]
		if b[4+(i>>3)]&(1<<(i&7)) != 0 {
			*d = Datum{Null: true}
			continue
		}
		slot := int(hdr + es*i)
		switch et.Root {
		case TypeBoolean:
			d.I = int64(b[slot] & 1)
		case TypeTinyInt:
			d.I = int64(int8(b[slot]))
		case TypeSmallInt:
			d.I = int64(int16(leU16(b, slot)))
		case TypeInt, TypeDate, TypeTime:
			d.I = int64(int32(leU32(b, slot)))
		case TypeFloat:
			d.F = float64(math.Float32frombits(leU32(b, slot)))
		case TypeBigInt:
			d.I = int64(leU64(b, slot))
		case TypeDouble:
			d.F = math.Float64frombits(leU64(b, slot))
		case TypeDecimal:
			v := leU64(b, slot)
			if et.Precision <= compactDecimalPrecision {
				d.I = int64(v)
				break
			}
			size := int64(uint32(v))
			if size < 1 || size > 16 {
				return nil, fmt.Errorf("fluss: array element %d: decimal of %d bytes", i, size)
			}
			bs, err := varPart(v, size)
			if err != nil {
				return nil, err
			}
			d.B = bs
		case TypeTimestamp, TypeTimestampLTZ:
			v := leU64(b, slot)
			if et.Precision <= compactTimestampPrecision {
				d.I = int64(v)
				break
			}
			ms, err := varPart(v, 8)
			if err != nil {
				return nil, err
			}
			d.I = int64(leU64(ms, 0))
			d.N = int32(uint32(v))
		case TypeChar, TypeString, TypeBinary, TypeBytes:
			v := leU64(b, slot)
			if v>>63 != 0 {
				l := int(v>>56) & 0x7f
				if l > 7 {
					return nil, fmt.Errorf("fluss: array element %d: inline length %d", i, l)
				}
				d.B = b[slot : slot+l : slot+l]
				break
			}
			bs, err := varPart(v, int64(uint32(v)))
			if err != nil {
				return nil, err
			}
			d.B = bs
		case TypeArray, TypeMap, TypeRow:
			v := leU64(b, slot)
			bs, err := varPart(v, int64(uint32(v)))
			if err != nil {
				return nil, err
			}
			if err := decodeNestedBinary(bs, et, d, format, depth+1, budget); err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
		default:
			return nil, fmt.Errorf("fluss: cannot decode %s", et)
		}
	}
	return out, nil
}
