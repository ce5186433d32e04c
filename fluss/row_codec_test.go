package fluss

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRowRoundTripEveryTypeAndNull(t *testing.T) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(1, 2))
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		t.Run(string(format), func(t *testing.T) {
			for i := 0; i < 300; i++ {
				row := randomRow(r, s, 20)
				v, err := AppendValueRow(nil, s, 7, format, row)
				require.NoError(t, err)
				id, back, err := DecodeValueRow(v, s, format)
				require.NoError(t, err)
				assert.Equal(t, int16(7), id)
				requireRowEqual(t, row, back)
			}
			// every nullable column null at once
			row := make(Row, len(s.Columns))
			for i, c := range s.Columns {
				row[i] = NullDatum()
				if c.Type.NotNull {
					row[i] = IntDatum(1)
				}
			}
			v, err := AppendValueRow(nil, s, 1, format, row)
			require.NoError(t, err)
			_, back, err := DecodeValueRow(v, s, format)
			require.NoError(t, err)
			requireRowEqual(t, row, back)
		})
	}
}

// Derived vectors for a (INT NOT NULL, STRING) row (1, "a"); the layouts are
// cross-checked against Fluss's Java writers in java_golden_test.go.
func TestRowEncodingSmallVectors(t *testing.T) {
	s := &Schema{Columns: []Column{{Name: "id", Type: Int().NonNull()}, {Name: "name", Type: String()}}}
	row := Row{IntDatum(1), StringDatum("a")}
	c, err := AppendValueRow(nil, s, 1, KvFormatCompacted, row)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "0100 00 01 01 61"), c)
	ix, err := AppendValueRow(nil, s, 1, KvFormatIndexed, row)
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "0100 00 01000000 01000000 61"), ix)

	// nulls take no bytes; the var-length list is dense over non-null values
	s3 := &Schema{Columns: []Column{{Name: "a", Type: String()}, {Name: "b", Type: String()}, {Name: "c", Type: Char(3)}}}
	ix, err = AppendValueRow(nil, s3, 0, KvFormatIndexed, Row{NullDatum(), StringDatum("xy"), StringDatum("z")})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "0000 01 02000000 00000000 7879 7a0000"), ix)
	c, err = AppendValueRow(nil, s3, 0, KvFormatCompacted, Row{NullDatum(), StringDatum("xy"), StringDatum("z")})
	require.NoError(t, err)
	assert.Equal(t, unhex(t, "0000 01 02 7879 01 7a"), c)
}

func TestRowEncodingErrors(t *testing.T) {
	s := &Schema{Columns: []Column{{Name: "id", Type: Int().NonNull()}, {Name: "c", Type: Char(2)}, {Name: "b", Type: Binary(2)}}}
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		_, err := AppendValueRow(nil, s, 1, format, Row{NullDatum(), NullDatum(), NullDatum()})
		require.ErrorContains(t, err, "NOT NULL", format)
		_, err = AppendValueRow(nil, s, 1, format, Row{IntDatum(1)})
		require.ErrorContains(t, err, "row has 1 values", format)
	}
	// INDEXED stores CHAR(n)/BINARY(n) in exactly n bytes
	_, err := AppendValueRow(nil, s, 1, KvFormatIndexed, Row{IntDatum(1), StringDatum("abc"), NullDatum()})
	require.ErrorContains(t, err, "do not fit")
	_, err = AppendValueRow(nil, s, 1, KvFormatIndexed, Row{IntDatum(1), NullDatum(), BytesDatum([]byte{1, 2, 3})})
	require.ErrorContains(t, err, "do not fit")
}

func TestRowDecodeRejectsTruncatedInput(t *testing.T) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(3, 4))
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		v, err := AppendValueRow(nil, s, 1, format, randomRow(r, s, 0))
		require.NoError(t, err)
		for cut := 0; cut < len(v); cut++ {
			_, _, err := DecodeValueRow(v[:cut], s, format)
			require.Error(t, err, "%s cut at %d", format, cut)
		}
		_, _, err = DecodeValueRow(append(v, 0), s, format)
		require.Error(t, err, "trailing byte")
	}
}

func FuzzDecodeValueRow(f *testing.F) {
	s := allTypesSchema()
	r := rand.New(rand.NewPCG(5, 6))
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		v, _ := AppendValueRow(nil, s, 1, format, randomRow(r, s, 30))
		f.Add(v, format == KvFormatIndexed)
	}
	f.Fuzz(func(t *testing.T, b []byte, indexed bool) {
		format := KvFormatCompacted
		if indexed {
			format = KvFormatIndexed
		}
		_, _, _ = DecodeValueRow(b, s, format) // must not panic
	})
}
