package fluss

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schemaOf(types ...DataType) *Schema {
	s := &Schema{}
	for i, t := range types {
		s.Columns = append(s.Columns, Column{Name: fmt.Sprintf("f%d", i), Type: t})
	}
	return s
}

func names(s *Schema, idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, s.Columns[i].Name)
	}
	return out
}

// Golden vectors from apache/fluss v0.9.1-incubating
// fluss-common/src/test/java/org/apache/fluss/row/encode/CompactedKeyEncoderTest.java.
func TestKeyEncoderCompactedKeyEncoderTest(t *testing.T) {
	t.Run("testEncodeKey", func(t *testing.T) {
		s := schemaOf(Int(), BigInt(), Int())
		e, err := NewKeyEncoder(s, names(s, 0, 1, 2), "")
		require.NoError(t, err)
		got, err := e.Encode(nil, Row{IntDatum(1), IntDatum(3), IntDatum(2)})
		require.NoError(t, err)
		assert.Equal(t, []byte{1, 3, 2}, got)
		got, err = e.Encode(nil, Row{IntDatum(2), IntDatum(5), IntDatum(6)})
		require.NoError(t, err)
		assert.Equal(t, []byte{2, 5, 6}, got)
	})
	t.Run("testGetKey", func(t *testing.T) {
		s := schemaOf(Int(), BigInt(), Int(), String())
		e, err := NewKeyEncoder(s, names(s, 0, 1, 2), "")
		require.NoError(t, err)
		got, err := e.Encode(nil, Row{IntDatum(1), IntDatum(3), IntDatum(2), StringDatum("a1")})
		require.NoError(t, err)
		assert.Equal(t, []byte{1, 3, 2}, got)
		_, err = e.Encode(nil, Row{IntDatum(1), IntDatum(2), NullDatum(), StringDatum("a2")})
		require.ErrorContains(t, err, "null value in key column")
	})
	t.Run("testEncodeKeyWithKeyNames", func(t *testing.T) {
		s := &Schema{Columns: []Column{{Name: "partition", Type: String()}, {Name: "f1", Type: BigInt()}, {Name: "f2", Type: String()}}}
		e, err := NewKeyEncoder(s, []string{"f2"}, "")
		require.NoError(t, err)
		got, err := e.Encode(nil, Row{StringDatum("p1"), IntDatum(1), StringDatum("a2")})
		require.NoError(t, err)
		key, err := DecodeCompactedKey(got, []DataType{String().NonNull()})
		require.NoError(t, err)
		assert.Equal(t, "a2", string(key[0].B))
	})
}

// The all-types key vector from apache/fluss
// fluss-rust/crates/fluss/src/row/encode/compacted_key_encoder.rs,
// test_all_data_types_java_compatible (byte-exact against Java's
// encoded_key.hex, values of IndexedRowTest.genRecordForAllTypes). The three
// trailing ARRAY columns are left out: nested types are not implemented.
func TestKeyEncoderAllTypesJavaCompatible(t *testing.T) {
	s := schemaOf(Boolean(), TinyInt(), SmallInt(), Int(), BigInt(), Float(), Double(), Date(),
		Time(0), Binary(20), Bytes(), Char(2), String(), Decimal(5, 2), Decimal(20, 0),
		Timestamp(1), Timestamp(5), TimestampLTZ(1), TimestampLTZ(5))
	const ms = 1698235273182
	row := Row{
		BoolDatum(true), IntDatum(2), IntDatum(10), IntDatum(100), IntDatum(-6101065172474983726),
		FloatDatum(float64(float32(13.2))), FloatDatum(15.21), IntDatum(19655), IntDatum(34200000),
		BytesDatum([]byte("1234567890")), BytesDatum([]byte("20")), StringDatum("1"), StringDatum("hello"),
		IntDatum(9), BytesDatum([]byte{10}),
		TimestampDatum(ms, 0), TimestampDatum(ms, 0), TimestampDatum(ms, 0), TimestampDatum(ms, 0),
	}
	want := unhex(t, `
		01  02  0a 00  64  d2 95 fc d8 ce b1 aa aa ab 01
		33 33 53 41  ec 51 b8 1e 85 6b 2e 40  c7 99 01  c0 b3 a7 10
		0a 31 32 33 34 35 36 37 38 39 30  02 32 30  01 31  05 68 65 6c 6c 6f
		09  01 0a
		de 9f d7 b5 b6 31  de 9f d7 b5 b6 31 00  de 9f d7 b5 b6 31  de 9f d7 b5 b6 31 00`)
	all := make([]int, len(s.Columns))
	for i := range all {
		all[i] = i
	}
	e, err := NewKeyEncoder(s, names(s, all...), "")
	require.NoError(t, err)
	got, err := e.Encode(nil, row)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	back, err := DecodeCompactedKey(got, e.Types())
	require.NoError(t, err)
	requireRowEqual(t, row, back)
}

// One case per key column type: the compacted key bytes, computed from the
// CompactedRowWriter rules, and the decode back.
func TestKeyEncoderEveryType(t *testing.T) {
	cases := []struct {
		name string
		typ  DataType
		val  Datum
		want string
	}{
		{"boolean true", Boolean(), BoolDatum(true), "01"},
		{"boolean false", Boolean(), BoolDatum(false), "00"},
		{"tinyint -1", TinyInt(), IntDatum(-1), "ff"},
		{"smallint -2 fixed LE", SmallInt(), IntDatum(-2), "fe ff"},
		{"int 127", Int(), IntDatum(127), "7f"},
		{"int 128", Int(), IntDatum(128), "80 01"},
		{"int -1 five bytes", Int(), IntDatum(-1), "ff ff ff ff 0f"},
		{"int min", Int(), IntDatum(-1 << 31), "80 80 80 80 08"},
		{"bigint 300", BigInt(), IntDatum(300), "ac 02"},
		{"bigint -1 ten bytes", BigInt(), IntDatum(-1), "ff ff ff ff ff ff ff ff ff 01"},
		{"float -0.5", Float(), FloatDatum(-0.5), "00 00 00 bf"},
		{"double 1", Double(), FloatDatum(1), "00 00 00 00 00 00 f0 3f"},
		{"date -1", Date(), IntDatum(-1), "ff ff ff ff 0f"},
		{"time 1000", Time(3), IntDatum(1000), "e8 07"},
		{"char no padding", Char(10), StringDatum("ab"), "02 61 62"},
		{"string utf8", String(), StringDatum("é"), "02 c3 a9"},
		{"string empty", String(), StringDatum(""), "00"},
		{"binary no padding", Binary(8), BytesDatum([]byte{1, 2}), "02 01 02"},
		{"bytes", Bytes(), BytesDatum([]byte{0xff}), "01 ff"},
		{"decimal compact negative", Decimal(18, 3), IntDatum(-5), "fb ff ff ff ff ff ff ff ff 01"},
		{"decimal big 128", Decimal(30, 2), BytesDatum([]byte{0x00, 0x80}), "02 00 80"},
		{"decimal big -1 minimal", Decimal(30, 2), BytesDatum([]byte{0xff, 0xff, 0xff}), "01 ff"},
		{"decimal big zero", Decimal(19, 0), BytesDatum(nil), "01 00"},
		{"timestamp(3)", Timestamp(3), TimestampDatum(1, 0), "01"},
		{"timestamp(6) nanos", Timestamp(6), TimestampDatum(1, 123000), "01 f8 c0 07"},
		{"timestamp_ltz(9) negative", TimestampLTZ(9), TimestampDatum(-1, 5), "ff ff ff ff ff ff ff ff ff 01 05"},
		{"timestamp_ltz(0)", TimestampLTZ(0), TimestampDatum(2000, 0), "d0 0f"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := schemaOf(c.typ)
			e, err := NewKeyEncoder(s, names(s, 0), "")
			require.NoError(t, err)
			got, err := e.Encode([]byte{0xAA}, Row{c.val})
			require.NoError(t, err)
			assert.Equal(t, unhex(t, "aa "+c.want), got)

			back, err := DecodeCompactedKey(got[1:], e.Types())
			require.NoError(t, err)
			want := c.val
			if c.typ.Root == TypeDecimal && c.typ.Precision > compactDecimalPrecision {
				want = BytesDatum(minimalDecimalBytes(c.val.B))
			}
			assert.True(t, want.Equal(back[0]), "decoded %+v, want %+v", back[0], want)
		})
	}
}

func TestKeyEncoderErrors(t *testing.T) {
	s := schemaOf(Int(), String())
	// paimon and iceberg: key_encoder_lake_test.go
	_, err := NewKeyEncoder(s, names(s, 0), "hudi")
	require.ErrorIs(t, err, ErrLakeKeyEncodingNotImplemented)
	_, err = NewKeyEncoder(s, names(s, 0), "lance")
	require.NoError(t, err)
	_, err = NewKeyEncoder(s, []string{"nope"}, "")
	require.Error(t, err)
	_, err = NewKeyEncoder(s, nil, "")
	require.Error(t, err)
	e, err := NewKeyEncoder(s, names(s, 1), "")
	require.NoError(t, err)
	dst := []byte{9}
	out, err := e.Encode(dst, Row{IntDatum(1)})
	require.Error(t, err)
	assert.Equal(t, []byte{9}, out)
	_, err = NewKeyEncoder(schemaOf(DataType{Root: TypeArray, Elem: &DataType{Root: TypeInt}}), []string{"f0"}, "")
	require.ErrorIs(t, err, ErrNestedKey)
}

func TestKeyColumns(t *testing.T) {
	cases := []struct {
		name           string
		d              TableDescriptor
		wantPK, wantBK []string
	}{
		{"log table", TableDescriptor{}, nil, nil},
		{"log table with bucket key", TableDescriptor{BucketKeys: []string{"a"}}, nil, []string{"a"}},
		{"pk table", TableDescriptor{Schema: Schema{PrimaryKey: []string{"a", "b"}}}, []string{"a", "b"}, []string{"a", "b"}},
		{"partitioned pk table", TableDescriptor{Schema: Schema{PrimaryKey: []string{"dt", "a", "b"}}, PartitionKeys: []string{"dt"}},
			[]string{"a", "b"}, []string{"a", "b"}},
		{"pk table with bucket key", TableDescriptor{Schema: Schema{PrimaryKey: []string{"a", "b"}}, BucketKeys: []string{"b"}},
			[]string{"a", "b"}, []string{"b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pk, bk := KeyColumns(&c.d)
			assert.Equal(t, c.wantPK, pk)
			assert.Equal(t, c.wantBK, bk)
		})
	}
}
