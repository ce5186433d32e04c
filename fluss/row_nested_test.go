package fluss

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Nested types (ARRAY, MAP, ROW) in every encoder: round trips through our
// decoders and arrow-go's reader, hand-checked bytes, refusals, and hostile
// input. The Java oracle checks of the same layouts are in
// record_java_nested_integration_test.go.

// nestedSchema covers every scalar type as an array element, maps with
// string and nested keys, rows in arrays in maps, and NOT NULL elements.
func nestedSchema() *Schema {
	s := &Schema{}
	add := func(name string, t DataType) { s.Columns = append(s.Columns, Column{Name: name, Type: t}) }
	add("id", Int().NonNull())
	add("a_int", Array(Int()))
	add("m_str_big", Map(String(), BigInt()))
	add("r_ab", RowType(RowField("a", Int()), RowField("b", String())))
	add("a_row", Array(RowType(RowField("x", BigInt()), RowField("y", Array(String())), RowField("z", Decimal(38, 10)))))
	for _, t := range []DataType{Boolean(), TinyInt(), SmallInt(), BigInt(), Float(), Double(), Decimal(10, 2),
		Decimal(38, 10), Char(6), Binary(4), Bytes(), Date(), Time(3), Timestamp(3), Timestamp(9), TimestampLTZ(6)} {
		add(fmt.Sprintf("a_%d", len(s.Columns)), Array(t))
	}
	add("a_a_nn", Array(Array(Int().NonNull())).NonNull())
	add("m_int_nested", Map(Int(), Array(Map(String(), RowType(RowField("p", Double()), RowField("q", Bytes().NonNull()))))))
	add("r_deep", RowType(
		RowField("n", RowType(RowField("m", Map(BigInt(), String())), RowField("t", Timestamp(6)))),
		RowField("c", Char(3)), RowField("bin", Binary(5)), RowField("d", Decimal(20, 3)),
		RowField("arr", Array(RowType(RowField("u", TinyInt().NonNull())))),
	))
	add("tail", String())
	return s
}

// randomNestedRow is randomRow for schemas with nested columns: arrays of
// 0..maxElems elements, about nullPct percent nulls at every level.
func randomNestedRow(r *rand.Rand, s *Schema, nullPct int) Row {
	row := make(Row, len(s.Columns))
	for i := range s.Columns {
		row[i] = randomNestedDatum(r, &s.Columns[i].Type, nullPct, 0)
	}
	return row
}

func randomNestedDatum(r *rand.Rand, t *DataType, nullPct, depth int) Datum {
	if !t.NotNull && r.IntN(100) < nullPct {
		return NullDatum()
	}
	n := r.IntN(6)
	if depth == 0 && r.IntN(10) == 0 {
		n = 20 + r.IntN(60) // more than 32 elements: a second null-bit word
	}
	switch t.Root {
	case TypeArray:
		es := make([]Datum, n)
		for i := range es {
			es[i] = randomNestedDatum(r, t.Elem, nullPct, depth+1)
		}
		return ArrayDatum(es...)
	case TypeMap:
		var ks, vs []Datum
	entries:
		for i := 0; i < n; i++ {
			k := randomNestedDatum(r, t.Key, 0, depth+1)
			for _, o := range ks {
				if o.Equal(k) {
					continue entries // keys are unique, as in Java's maps
				}
			}
			ks = append(ks, k)
			vs = append(vs, randomNestedDatum(r, t.Value, nullPct, depth+1))
		}
		return MapDatum(ks, vs)
	case TypeRow:
		fs := make([]Datum, len(t.Fields))
		for i := range fs {
			fs[i] = randomNestedDatum(r, &t.Fields[i].Type, nullPct, depth+1)
		}
		return RowDatum(fs...)
	}
	return randomDatum(r, t)
}

func nestedRows(seed uint64, n, nullPct int) []Row {
	r := rand.New(rand.NewPCG(seed, seed^0xa11))
	s := nestedSchema()
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = randomNestedRow(r, s, nullPct)
		rows[i][0] = IntDatum(int64(i))
	}
	return rows
}

func TestNestedRowsRoundTripCompactedAndIndexed(t *testing.T) {
	s := nestedSchema()
	for _, nullPct := range []int{0, 20, 100} {
		rows := nestedRows(uint64(nullPct)+1, 200, nullPct)
		for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
			t.Run(fmt.Sprintf("%s_%d", format, nullPct), func(t *testing.T) {
				for i, row := range rows {
					v, err := AppendValueRow([]byte{7}, s, 3, format, row)
					require.NoError(t, err)
					id, got, err := DecodeValueRow(v[1:], s, format)
					require.NoError(t, err)
					assert.Equal(t, int16(3), id)
					requireRowEqual(t, row, got, fmt.Sprintf("row %d", i))
				}
			})
		}
	}
}

func TestNestedLogAndKvBatchesRoundTrip(t *testing.T) {
	s := nestedSchema()
	rows := nestedRows(9, 300, 15)
	builders := map[LogFormat]func() (batchBuilder, error){
		LogFormatIndexed:   func() (batchBuilder, error) { return NewIndexedLogBuilder(s, 2) },
		LogFormatCompacted: func() (batchBuilder, error) { return NewCompactedLogBuilder(s, 2) },
	}
	for _, codec := range arrowCodecs {
		builders[LogFormat("ARROW_"+codec)] = func() (batchBuilder, error) { return NewArrowLogBuilder(s, 2, codec, 3) }
	}
	for name, newB := range builders {
		t.Run(string(name), func(t *testing.T) {
			b, err := newB()
			require.NoError(t, err)
			var data []byte
			for _, part := range [][]Row{rows[:1], rows[1:150], rows[150:]} {
				b.Reset()
				for _, row := range part {
					require.NoError(t, b.Append(row))
				}
				data, err = b.AppendTo(data)
				require.NoError(t, err)
			}
			format := name
			if len(name) > 5 && name[:5] == "ARROW" {
				format = LogFormatArrow
			}
			recs, err := DecodeLogBatchesFormat(data, s, format)
			require.NoError(t, err)
			got := make([]Row, len(recs))
			for i := range recs {
				got[i] = recs[i].Row
			}
			requireRowsEqual(t, rows, got)
		})
	}
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		kb, err := NewKvBatchBuilder(s, 5, format)
		require.NoError(t, err)
		for i, row := range rows {
			require.NoError(t, kb.Upsert([]byte{byte(i), byte(i >> 8)}, row))
		}
		batch, err := kb.AppendTo(nil)
		require.NoError(t, err)
		dec, err := DecodeKvBatch(batch, s, format)
		require.NoError(t, err)
		require.Len(t, dec.Records, len(rows))
		for i := range rows {
			requireRowEqual(t, rows[i], dec.Records[i].Row, fmt.Sprintf("%s record %d", format, i))
		}
	}
}

// TestNestedArrowReadByArrowGoIPCReader: arrow-go's IPC reader, with the
// schema ArrowSchema gives, reads our nested batches into the same values.
func TestNestedArrowReadByArrowGoIPCReader(t *testing.T) {
	s := nestedSchema()
	as, err := ArrowSchema(s)
	require.NoError(t, err)
	lt := as.Field(1).Type.(*arrow.ListType)
	assert.Equal(t, "element", lt.ElemField().Name)
	mt := as.Field(2).Type.(*arrow.MapType)
	assert.False(t, mt.KeysSorted)
	assert.Equal(t, "entries", mt.ElemField().Name)
	assert.False(t, mt.ElemField().Nullable)
	assert.Equal(t, "key", mt.KeyField().Name)
	assert.False(t, mt.KeyField().Nullable)
	assert.Equal(t, "value", mt.ItemField().Name)
	assert.True(t, mt.ItemField().Nullable)
	st := as.Field(3).Type.(*arrow.StructType)
	assert.Equal(t, "a", st.Field(0).Name)
	assert.Equal(t, "b", st.Field(1).Name)
	// a batch whose nested children are all empty (no offsets buffers)
	var empties []Row
	for _, row := range nestedRows(22, 5, 100) {
		for i := range s.Columns {
			if s.Columns[i].Type.IsNested() && !row[i].Null {
				row[i] = emptyNested(&s.Columns[i].Type)
			}
		}
		empties = append(empties, row)
	}
	for _, codec := range arrowCodecs {
		t.Run(string(codec), func(t *testing.T) {
			rows := append(nestedRows(21, 250, 20), empties...)
			b, err := NewArrowLogBuilder(s, 1, codec, 3)
			require.NoError(t, err)
			var stream bytes.Buffer
			p := ipc.GetSchemaPayload(as, memory.DefaultAllocator)
			_, err = p.WritePayload(&stream)
			require.NoError(t, err)
			for _, part := range [][]Row{rows[:100], rows[100:250], rows[250:]} {
				b.Reset()
				for _, row := range part {
					require.NoError(t, b.Append(row))
				}
				batch, err := b.AppendTo(nil)
				require.NoError(t, err)
				stream.Write(batch[logV0HeaderSize:])
			}
			stream.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
			rd, err := ipc.NewReader(&stream)
			require.NoError(t, err)
			defer rd.Release()
			var got []Row
			for rd.Next() {
				got = append(got, rowsFromArrowRecord(t, s, rd.RecordBatch())...)
			}
			require.NoError(t, rd.Err())
			requireRowsEqual(t, rows, got)
		})
	}
}

// emptyNested is the empty value of a nested type: no elements, no
// entries, or a row of empty or null fields.
func emptyNested(t *DataType) Datum {
	switch t.Root {
	case TypeArray:
		return ArrayDatum()
	case TypeMap:
		return MapDatum(nil, nil)
	case TypeRow:
		fs := make([]Datum, len(t.Fields))
		for i := range fs {
			if t.Fields[i].Type.IsNested() {
				fs[i] = emptyNested(&t.Fields[i].Type)
			} else if t.Fields[i].Type.NotNull {
				fs[i] = IntDatum(0)
			} else {
				fs[i] = NullDatum()
			}
		}
		return RowDatum(fs...)
	}
	return NullDatum()
}

// Hand-checked bytes of small nested values, from the layouts in
// row_nested.go (BinaryArray, BinaryMap, nested CompactedRow/IndexedRow).
func TestNestedBytesByHand(t *testing.T) {
	arr := schemaOf(Array(Int()))
	row := Row{ArrayDatum(IntDatum(1), NullDatum(), IntDatum(3))}
	// compacted: bitset 00, varint 24, array: n=3, null bits 02000000,
	// slots 1, 0, 3, pad to 24
	c, err := appendCompactedRow(nil, columnTypes(arr), row)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 18 03000000 02000000 01000000 00000000 03000000 00000000"), c)
	// indexed: bitset 00, var length 24, the array
	ix, err := appendIndexedRow(nil, columnTypes(arr), 1, row)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 18000000 03000000 02000000 01000000 00000000 03000000 00000000"), ix)

	// strings: "abc" inline (byte 7 = 0x83), "abcdefgh" in the variable part
	strs := schemaOf(Array(String()))
	c, err = appendCompactedRow(nil, columnTypes(strs), Row{ArrayDatum(StringDatum("abc"), StringDatum("abcdefgh"))})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 20 02000000 00000000 6162630000000083 0800000018000000 6162636465666768"), c)

	// map {"k": 7}: key array size 16, key array, value array
	m := schemaOf(Map(String(), BigInt()))
	c, err = appendCompactedRow(nil, columnTypes(m), Row{MapDatum([]Datum{StringDatum("k")}, []Datum{IntDatum(7)})})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 24 10000000 01000000 00000000 6b00000000000081 01000000 00000000 0700000000000000"), c)

	// empty array and empty map
	c, err = appendCompactedRow(nil, columnTypes(schemaOf(Array(Int()), Map(Int(), Int()))), Row{ArrayDatum(), MapDatum(nil, nil)})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 08 0000000000000000 14 08000000 0000000000000000 0000000000000000"), c)

	// ROW<a INT, b STRING>(5, null): a compacted row inside the row, an
	// indexed row inside the indexed row
	rt := schemaOf(RowType(RowField("a", Int()), RowField("b", String())))
	c, err = appendCompactedRow(nil, columnTypes(rt), Row{RowDatum(IntDatum(5), NullDatum())})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 02 02 05"), c)
	ix, err = appendIndexedRow(nil, columnTypes(rt), 1, Row{RowDatum(IntDatum(5), NullDatum())})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "00 09000000 02 00000000 05000000"), ix)
}

func TestNestedRefusals(t *testing.T) {
	s := schemaOf(Array(Int().NonNull()), Map(String(), Int()), RowType(RowField("a", Int().NonNull())))
	good := Row{ArrayDatum(IntDatum(1)), MapDatum([]Datum{StringDatum("k")}, []Datum{NullDatum()}), RowDatum(IntDatum(1))}
	bad := map[string]Row{
		"null element in NOT NULL array": {ArrayDatum(NullDatum()), good[1], good[2]},
		"null map key":                   {good[0], MapDatum([]Datum{NullDatum()}, []Datum{IntDatum(1)}), good[2]},
		"map keys and values differ":     {good[0], MapDatum([]Datum{StringDatum("k")}, nil), good[2]},
		"row of the wrong width":         {good[0], good[1], RowDatum(IntDatum(1), IntDatum(2))},
		"null in NOT NULL row field":     {good[0], good[1], RowDatum(NullDatum())},
		"nested value without Nested":    {IntDatum(1), good[1], good[2]},
	}
	newBuilders := func() map[string]batchBuilder {
		a, err := NewArrowLogBuilder(s, 1, ArrowCompressionNone, 0)
		require.NoError(t, err)
		ix, err := NewIndexedLogBuilder(s, 1)
		require.NoError(t, err)
		cp, err := NewCompactedLogBuilder(s, 1)
		require.NoError(t, err)
		return map[string]batchBuilder{"arrow": a, "indexed": ix, "compacted": cp}
	}
	for bname, b := range newBuilders() {
		require.NoError(t, b.Append(good))
		before, err := b.AppendTo(nil)
		require.NoError(t, err)
		for name, row := range bad {
			require.Error(t, b.Append(row), "%s: %s", bname, name)
			after, err := b.AppendTo(nil)
			require.NoError(t, err)
			require.Equal(t, before, after, "%s: %s left the builder changed", bname, name)
		}
	}
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		kb, err := NewKvBatchBuilder(s, 1, format)
		require.NoError(t, err)
		for name, row := range bad {
			require.Error(t, kb.Upsert([]byte{1}, row), "%s: %s", format, name)
			require.Equal(t, 0, kb.Len())
		}
	}
	// nested key columns
	_, err := NewKeyEncoder(s, []string{"f1"}, "")
	require.ErrorIs(t, err, ErrNestedKey)
	_, err = NewKeyEncoder(s, []string{"f2"}, "paimon")
	require.ErrorIs(t, err, ErrNestedKey)
	_, err = DecodeCompactedKey([]byte{0}, []DataType{Array(Int())})
	require.ErrorIs(t, err, ErrNestedKey)
	// types: an ARRAY without element type, too deep a nesting
	_, err = NewCompactedLogBuilder(schemaOf(DataType{Root: TypeArray}), 1)
	require.Error(t, err)
	deep := Int()
	for i := 0; i <= maxTypeDepth+1; i++ {
		deep = Array(deep)
	}
	_, err = NewArrowLogBuilder(schemaOf(deep), 1, ArrowCompressionNone, 0)
	require.Error(t, err)
}

func TestMapTypeKeyIsNotNull(t *testing.T) {
	m := Map(String(), Int())
	assert.True(t, m.Key.NotNull)
	assert.False(t, m.Value.NotNull)
	js, err := AppendDataTypeJSON(nil, DataType{Root: TypeMap, Key: &DataType{Root: TypeString}, Value: &DataType{Root: TypeInt}})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"MAP","key_type":{"type":"STRING","nullable":false},"value_type":{"type":"INTEGER"}}`, string(js))
	back, err := ParseDataTypeJSON([]byte(`{"type":"MAP","key_type":{"type":"STRING"},"value_type":{"type":"INTEGER"}}`))
	require.NoError(t, err)
	assert.Equal(t, m, back)
}

func TestNestedDatumEqual(t *testing.T) {
	a := ArrayDatum(IntDatum(1), NullDatum())
	assert.True(t, a.Equal(ArrayDatum(IntDatum(1), NullDatum())))
	assert.False(t, a.Equal(ArrayDatum(IntDatum(1))))
	assert.False(t, a.Equal(ArrayDatum(IntDatum(1), IntDatum(0))))
	assert.True(t, ArrayDatum().Equal(Datum{Nested: &Nested{Elems: []Datum{}}}))
	assert.False(t, ArrayDatum().Equal(NullDatum()))
	assert.False(t, ArrayDatum().Equal(IntDatum(0)))
	assert.False(t, IntDatum(0).Equal(ArrayDatum()))
	m := MapDatum([]Datum{StringDatum("a")}, []Datum{FloatDatum(math.NaN())})
	assert.True(t, m.Equal(MapDatum([]Datum{StringDatum("a")}, []Datum{FloatDatum(math.NaN())})))
	assert.False(t, m.Equal(MapDatum([]Datum{StringDatum("b")}, []Datum{FloatDatum(math.NaN())})))
	assert.True(t, RowDatum(a, m).Equal(RowDatum(a, m)))
	assert.False(t, RowDatum(a, m).Equal(RowDatum(m, a)))
}

// Hostile nested bytes: every truncation and many byte flips of valid rows
// decode with an error or a value, never a panic, and the nested budget
// stops arrays whose slots all point to one big element.
func TestNestedDecodeHostileBytes(t *testing.T) {
	s := nestedSchema()
	rows := nestedRows(5, 20, 10)
	r := rand.New(rand.NewPCG(1, 2))
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		for _, row := range rows {
			b, err := AppendValueRow(nil, s, 1, format, row)
			require.NoError(t, err)
			b = b[2:]
			for cut := 0; cut < len(b); cut += 1 + len(b)/50 {
				_, _ = DecodeRow(b[:cut], s, format)
			}
			for i := 0; i < 200; i++ {
				c := bytes.Clone(b)
				c[r.IntN(len(c))] ^= byte(1 << r.IntN(8))
				_, _ = DecodeRow(c, s, format)
			}
		}
	}

	// ARRAY<ARRAY<INT>>: 4096 slots all pointing to one inner array of 4096
	// ints would decode to 16M datums from 48 KiB.
	aa := schemaOf(Array(Array(Int())))
	const n = 4096
	inner := make([]byte, 0, 4+4*128+4*n)
	inner = leAppendU32(inner, n)
	inner = appendZeros(inner, 4*((n+31)/32)+4*n)
	outerFixed := pad8(binaryArrayHeaderSize(n) + 8*n)
	outer := leAppendU32(nil, n)
	outer = appendZeros(outer, outerFixed-4)
	for i := 0; i < n; i++ {
		lePutU64(outer, binaryArrayHeaderSize(n)+8*i, uint64(outerFixed)<<32|uint64(len(inner)))
	}
	outer = append(outer, inner...)
	row := appendUvarint32([]byte{0}, uint32(len(outer)))
	row = append(row, outer...)
	_, err := DecodeRow(row, aa, KvFormatCompacted)
	require.ErrorIs(t, err, errNestedBudget)
}

// FuzzDecodeNestedRow: no panic, no unbounded allocation, on any bytes given
// as a compacted or indexed row of the nested schema.
func FuzzDecodeNestedRow(f *testing.F) {
	s := nestedSchema()
	for i, row := range nestedRows(3, 8, 20) {
		for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
			b, err := AppendValueRow(nil, s, 1, format, row)
			require.NoError(f, err)
			f.Add(b[2:], format == KvFormatIndexed, i%2 == 0)
		}
	}
	ab, err := NewArrowLogBuilder(s, 1, ArrowCompressionNone, 0)
	require.NoError(f, err)
	for _, row := range nestedRows(4, 3, 20) {
		require.NoError(f, ab.Append(row))
	}
	batch, err := ab.AppendTo(nil)
	require.NoError(f, err)
	f.Add(batch, false, true)
	f.Fuzz(func(t *testing.T, b []byte, indexed, asBatch bool) {
		if asBatch {
			_, _ = DecodeLogBatchesFormat(b, s, LogFormatArrow)
			return
		}
		format := KvFormatCompacted
		if indexed {
			format = KvFormatIndexed
		}
		row, err := DecodeRow(b, s, format)
		if err != nil {
			return
		}
		// what decodes re-encodes, and re-encoding is then stable (one pass
		// canonicalises NaN payloads in arrays, boolean bytes, CHAR padding)
		once, err := AppendValueRow(nil, s, 1, format, row)
		if err != nil {
			return // e.g. a null decoded from a NOT NULL column's bit
		}
		back, err := DecodeRow(once[2:], s, format)
		require.NoError(t, err)
		twice, err := AppendValueRow(nil, s, 1, format, back)
		require.NoError(t, err)
		require.Equal(t, once, twice)
	})
}
