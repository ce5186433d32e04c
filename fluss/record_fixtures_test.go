package fluss

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Shared fixtures for the record, row and key tests.

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

// allTypesSchema has one column of every scalar type a 0.9.1 table accepts,
// with every TIMESTAMP/TIMESTAMP_LTZ precision and the four TIME units.
func allTypesSchema() *Schema {
	s := &Schema{}
	add := func(name string, t DataType) { s.Columns = append(s.Columns, Column{Name: name, Type: t}) }
	add("c_bool", Boolean())
	add("c_tinyint", TinyInt())
	add("c_smallint", SmallInt())
	add("c_int", Int())
	add("c_bigint", BigInt().NonNull())
	add("c_float", Float())
	add("c_double", Double())
	add("c_dec_small", Decimal(10, 2))
	add("c_dec_18", Decimal(18, 4))
	add("c_dec_big", Decimal(38, 10))
	add("c_char", Char(6))
	add("c_string", String())
	add("c_binary", Binary(4))
	add("c_bytes", Bytes())
	add("c_date", Date())
	for _, p := range []int{0, 3, 6, 9} {
		add(fmt.Sprintf("c_time%d", p), Time(p))
	}
	for p := 0; p <= 9; p++ {
		add(fmt.Sprintf("c_ts%d", p), Timestamp(p))
	}
	for p := 0; p <= 9; p++ {
		add(fmt.Sprintf("c_ltz%d", p), TimestampLTZ(p))
	}
	return s
}

// randomRow returns a row of schema whose values survive every format
// (Arrow loses sub-unit precision of TIME/TIMESTAMP, Indexed pads BINARY),
// with about nullPct percent nulls in nullable columns.
func randomRow(r *rand.Rand, s *Schema, nullPct int) Row {
	row := make(Row, len(s.Columns))
	for i, c := range s.Columns {
		if !c.Type.NotNull && r.IntN(100) < nullPct {
			row[i] = NullDatum()
			continue
		}
		row[i] = randomDatum(r, &c.Type)
	}
	return row
}

func randomDatum(r *rand.Rand, t *DataType) Datum {
	signed := func(bits uint) int64 { return int64(r.Uint64()) >> (64 - bits) }
	switch t.Root {
	case TypeBoolean:
		return BoolDatum(r.IntN(2) == 1)
	case TypeTinyInt:
		return IntDatum(signed(8))
	case TypeSmallInt:
		return IntDatum(signed(16))
	case TypeInt:
		return IntDatum(signed(32))
	case TypeBigInt:
		return IntDatum(int64(r.Uint64()))
	case TypeFloat:
		return FloatDatum(float64(float32(r.NormFloat64() * 1e3)))
	case TypeDouble:
		return FloatDatum(r.NormFloat64() * 1e9)
	case TypeDecimal:
		if t.Precision <= compactDecimalPrecision {
			lim := int64(1)
			for i := 0; i < t.Precision; i++ {
				lim *= 10
			}
			return IntDatum(r.Int64N(2*lim-1) - (lim - 1))
		}
		digits := make([]byte, 1+r.IntN(t.Precision))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		v, _ := new(big.Int).SetString(string(digits), 10)
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		return BytesDatum(bigToTwos(v))
	case TypeChar:
		n := r.IntN(t.Length + 1)
		return StringDatum(randomText(r, n))
	case TypeString:
		return StringDatum(randomText(r, r.IntN(40)))
	case TypeBinary:
		b := make([]byte, t.Length)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		b[len(b)-1] |= 1 // Indexed reads BINARY(n) back as n bytes; keep it exact
		return BytesDatum(b)
	case TypeBytes:
		b := make([]byte, r.IntN(30))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return BytesDatum(b)
	case TypeDate:
		return IntDatum(r.Int64N(80000) - 30000)
	case TypeTime:
		ms := r.Int64N(86_400_000)
		if t.Precision == 0 {
			ms -= ms % 1000
		}
		return IntDatum(ms)
	case TypeTimestamp, TypeTimestampLTZ:
		ms := r.Int64N(4_000_000_000_000) - 1_000_000_000_000
		var nanos int32
		switch {
		case t.Precision == 0:
			ms -= ms % 1000 // Java truncates toward zero; keep exact
		case t.Precision <= 3:
		case t.Precision <= 6:
			nanos = int32(r.IntN(1000)) * 1000
		default:
			nanos = int32(r.IntN(1_000_000))
		}
		if nanos != 0 && ms < 0 {
			// Fluss's Java Arrow reader (ArrowTimestamp*ColumnVector) splits
			// micros/nanos with truncating division and rejects pre-1970
			// values with a sub-millisecond part; keep the shared fixtures
			// readable by it. TestArrowNegativeSubMillisTimestamps covers them.
			ms = -ms
		}
		return TimestampDatum(ms, nanos)
	}
	panic("unexpected type " + t.String())
}

func randomText(r *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzé€🙂"
	rs := []rune(alphabet)
	var b strings.Builder
	for b.Len() < n {
		ch := string(rs[r.IntN(len(rs))])
		if b.Len()+len(ch) > n {
			break
		}
		b.WriteString(ch)
	}
	return b.String()
}

// bigToTwos renders v as minimal big-endian two's complement (Java
// BigInteger.toByteArray).
func bigToTwos(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// two's complement of a negative number: 2^(8n) + v for the smallest n
	n := (v.BitLen() + 8) / 8
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	m.Add(m, v)
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	return minimalDecimalBytes(b)
}

func requireRowsEqual(t *testing.T, want, got []Row) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		requireRowEqual(t, want[i], got[i], fmt.Sprintf("row %d", i))
	}
}

func requireRowEqual(t *testing.T, want, got Row, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want), msgAndArgs...)
	for j := range want {
		if !want[j].Equal(got[j]) {
			require.Failf(t, "datum differs", "column %d: want %s, got %s; %s", j, datumDebug(want[j]), datumDebug(got[j]), fmt.Sprint(msgAndArgs...))
		}
	}
}

// datumDebug renders a datum, nested values included, for failure messages.
func datumDebug(d Datum) string {
	if d.Nested == nil {
		return fmt.Sprintf("%+v", d)
	}
	var b strings.Builder
	list := func(name string, ds []Datum) {
		if ds == nil {
			return
		}
		b.WriteString(name + "[")
		for i, e := range ds {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(datumDebug(e))
		}
		b.WriteString("]")
	}
	list("elems", d.Nested.Elems)
	list("keys", d.Nested.Keys)
	list("values", d.Nested.Values)
	list("fields", d.Nested.Fields)
	if b.Len() == 0 {
		return "nested{}"
	}
	return b.String()
}
