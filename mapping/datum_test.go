package mapping

import (
	"encoding/binary"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func days(s string) int64 {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t.Unix() / 86400
}

// TestConvertJSONTypes converts {"c": <json>} into a single column of each
// type, good and bad input.
func TestConvertJSONTypes(t *testing.T) {
	t.Parallel()
	f32 := func(v float32) fluss.Datum { return fluss.Datum{F: float64(v)} }
	tests := []struct {
		name   string
		typ    fluss.DataType
		json   string
		want   fluss.Datum
		reason string // when set, a RecordError containing it
	}{
		{"bool true", fluss.Boolean(), `true`, fluss.Datum{I: 1}, ""},
		{"bool false", fluss.Boolean(), `false`, fluss.Datum{}, ""},
		{"bool string", fluss.Boolean(), `"TRUE"`, fluss.Datum{I: 1}, ""},
		{"bool number", fluss.Boolean(), `1`, fluss.Datum{}, "cannot convert a number to BOOLEAN"},
		{"bool bad string", fluss.Boolean(), `"yes"`, fluss.Datum{}, `not a boolean: "yes"`},
		{"null", fluss.Int(), `null`, fluss.Datum{Null: true}, ""},
		{"tinyint", fluss.TinyInt(), `-128`, fluss.Datum{I: -128}, ""},
		{"tinyint range", fluss.TinyInt(), `128`, fluss.Datum{}, "out of range for TINYINT"},
		{"smallint", fluss.SmallInt(), `32767`, fluss.Datum{I: 32767}, ""},
		{"smallint range", fluss.SmallInt(), `-32769`, fluss.Datum{}, "out of range for SMALLINT"},
		{"int", fluss.Int(), `2147483647`, fluss.Datum{I: math.MaxInt32}, ""},
		{"int range", fluss.Int(), `2147483648`, fluss.Datum{}, "out of range for INTEGER"},
		{"int string", fluss.Int(), `"42"`, fluss.Datum{I: 42}, ""},
		{"int fraction", fluss.Int(), `1.5`, fluss.Datum{}, "not an integer"},
		{"int exponent", fluss.Int(), `1e3`, fluss.Datum{}, "not an integer"},
		{"int bool", fluss.Int(), `true`, fluss.Datum{}, "cannot convert a boolean to INTEGER"},
		{"bigint min", fluss.BigInt(), `-9223372036854775808`, fluss.Datum{I: math.MinInt64}, ""},
		{"bigint max", fluss.BigInt(), `9223372036854775807`, fluss.Datum{I: math.MaxInt64}, ""},
		{"bigint overflow", fluss.BigInt(), `9223372036854775808`, fluss.Datum{}, "not an integer"},
		{"float", fluss.Float(), `1.5`, f32(1.5), ""},
		{"float rounding", fluss.Float(), `0.1`, f32(0.1), ""},
		{"float range", fluss.Float(), `1e39`, fluss.Datum{}, "out of range for FLOAT"},
		{"double", fluss.Double(), `-2.5e-3`, fluss.Datum{F: -2.5e-3}, ""},
		{"double string NaN", fluss.Double(), `"NaN"`, fluss.Datum{F: math.NaN()}, ""},
		{"double string inf", fluss.Double(), `"-Infinity"`, fluss.Datum{F: math.Inf(-1)}, ""},
		{"double bad", fluss.Double(), `"abc"`, fluss.Datum{}, `not a number: "abc"`},
		{"double object", fluss.Double(), `{}`, fluss.Datum{}, "cannot convert an object to DOUBLE"},
		{"decimal", fluss.Decimal(10, 2), `12.345`, fluss.Datum{I: 1235}, ""},
		{"decimal negative half up", fluss.Decimal(10, 2), `-12.345`, fluss.Datum{I: -1235}, ""},
		{"decimal string", fluss.Decimal(10, 2), `"7"`, fluss.Datum{I: 700}, ""},
		{"decimal exponent", fluss.Decimal(10, 2), `1.5e2`, fluss.Datum{I: 15000}, ""},
		{"decimal tiny", fluss.Decimal(10, 2), `0.004`, fluss.Datum{I: 0}, ""},
		{"decimal overflow", fluss.Decimal(4, 2), `100`, fluss.Datum{}, "does not fit DECIMAL(4, 2)"},
		{"decimal round overflow", fluss.Decimal(3, 1), `99.96`, fluss.Datum{}, "does not fit DECIMAL(3, 1)"},
		{"decimal bad", fluss.Decimal(10, 2), `"1.2.3"`, fluss.Datum{}, "not a decimal number"},
		{"decimal huge exponent", fluss.Decimal(10, 2), `1e999999`, fluss.Datum{}, "not a decimal number"},
		{"decimal big", fluss.Decimal(38, 0), `12345678901234567890`, fluss.Datum{B: bigBytes("12345678901234567890")}, ""},
		{"decimal big negative", fluss.Decimal(20, 2), `-1.50`, fluss.Datum{B: []byte{0xff, 0x6a}}, ""},
		{"string", fluss.String(), `"héllo"`, fluss.Datum{B: []byte("héllo")}, ""},
		{"string escapes", fluss.String(), `"a\"b\\c\nd\u00e9\ud83d\ude00"`, fluss.Datum{B: []byte("a\"b\\c\nd\u00e9\U0001F600")}, ""},
		{"string lone surrogate", fluss.String(), `"\ud800x"`, fluss.Datum{B: []byte("\ufffdx")}, ""},
		{"string from number", fluss.String(), `1.50`, fluss.Datum{B: []byte("1.50")}, ""},
		{"string from bool", fluss.String(), `true`, fluss.Datum{B: []byte("true")}, ""},
		{"string from object", fluss.String(), `{"a": [1, 2]}`, fluss.Datum{B: []byte(`{"a": [1, 2]}`)}, ""},
		{"string invalid utf8", fluss.String(), "\"a\xffb\"", fluss.Datum{}, "not valid UTF-8"},
		{"char", fluss.Char(3), `"abc"`, fluss.Datum{B: []byte("abc")}, ""},
		{"bytes", fluss.Bytes(), `"AQID"`, fluss.Datum{B: []byte{1, 2, 3}}, ""},
		{"bytes unpadded", fluss.Bytes(), `"AQI"`, fluss.Datum{B: []byte{1, 2}}, ""},
		{"bytes bad", fluss.Bytes(), `"!!"`, fluss.Datum{}, "not base64"},
		{"bytes number", fluss.Bytes(), `12`, fluss.Datum{}, "cannot convert a number to BYTES"},
		{"binary too long", fluss.Binary(2), `"AQID"`, fluss.Datum{}, "value of length 3 is longer than BINARY(2)"},
		{"char too long", fluss.Char(2), `"héé"`, fluss.Datum{}, "value of length 3 is longer than CHAR(2)"},
		{"char multibyte fits", fluss.Char(2), `"éé"`, fluss.Datum{B: []byte("éé")}, ""},
		{"date", fluss.Date(), `"2024-01-02"`, fluss.Datum{I: days("2024-01-02")}, ""},
		{"date before epoch", fluss.Date(), `"1969-12-31"`, fluss.Datum{I: -1}, ""},
		{"date leap", fluss.Date(), `"2024-02-29"`, fluss.Datum{I: days("2024-02-29")}, ""},
		{"date not leap", fluss.Date(), `"2023-02-29"`, fluss.Datum{}, "not a date"},
		{"date days", fluss.Date(), `19724`, fluss.Datum{I: 19724}, ""},
		{"date bad", fluss.Date(), `"02/01/2024"`, fluss.Datum{}, "not a date"},
		{"time", fluss.Time(3), `"12:34:56.789"`, fluss.Datum{I: (12*3600+34*60+56)*1000 + 789}, ""},
		{"time short", fluss.Time(0), `"01:02"`, fluss.Datum{I: 3_720_000}, ""},
		{"time precision", fluss.Time(0), `"00:00:01.999"`, fluss.Datum{I: 1000}, ""},
		{"time millis", fluss.Time(3), `1000`, fluss.Datum{I: 1000}, ""},
		{"time millis range", fluss.Time(3), `86400000`, fluss.Datum{}, "out of range for TIME"},
		{"time bad", fluss.Time(3), `"25:00"`, fluss.Datum{}, "not a time"},
		{"timestamp rfc3339", fluss.Timestamp(3), `"2024-01-02T03:04:05.678Z"`, fluss.Datum{I: ms("2024-01-02T03:04:05.678Z")}, ""},
		{"timestamp offset", fluss.Timestamp(3), `"2024-01-02T03:04:05+02:00"`, fluss.Datum{I: ms("2024-01-02T01:04:05Z")}, ""},
		{"timestamp space no zone", fluss.Timestamp(3), `"2024-01-02 03:04:05"`, fluss.Datum{I: ms("2024-01-02T03:04:05Z")}, ""},
		{"timestamp nanos", fluss.Timestamp(9), `"2024-01-02T03:04:05.123456789Z"`, fluss.Datum{I: ms("2024-01-02T03:04:05.123Z"), N: 456789}, ""},
		{"timestamp micros truncated", fluss.Timestamp(6), `"2024-01-02T03:04:05.123456789Z"`, fluss.Datum{I: ms("2024-01-02T03:04:05.123Z"), N: 456000}, ""},
		{"timestamp seconds truncated", fluss.Timestamp(0), `"2024-01-02T03:04:05.999Z"`, fluss.Datum{I: ms("2024-01-02T03:04:05Z")}, ""},
		{"timestamp date only", fluss.Timestamp(3), `"2024-01-02"`, fluss.Datum{I: ms("2024-01-02T00:00:00Z")}, ""},
		{"timestamp before epoch", fluss.Timestamp(9), `"1969-12-31T23:59:59.999999999Z"`, fluss.Datum{I: -1, N: 999999}, ""},
		{"timestamp millis", fluss.Timestamp(3), `1704164645678`, fluss.Datum{I: 1704164645678}, ""},
		{"timestamp bad", fluss.Timestamp(3), `"yesterday"`, fluss.Datum{}, "not a timestamp"},
		{"timestamp bad offset", fluss.Timestamp(3), `"2024-01-02T03:04:05+2"`, fluss.Datum{}, "not a timestamp"},
		{"timestamp float", fluss.Timestamp(3), `1.5`, fluss.Datum{}, "not an integer"},
		{"timestamp_ltz", fluss.TimestampLTZ(3), `"2024-01-02T03:04:05-01:30"`, fluss.Datum{I: ms("2024-01-02T04:34:05Z")}, ""},
		{"timestamp_ltz millis", fluss.TimestampLTZ(3), `-1`, fluss.Datum{I: -1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			info := tableInfo("db", "t", []fluss.Column{col("c", tc.typ)}, nil)
			r := bind(t, RouteSpec{Topic: "t"}, info)
			out, err := convert(t, r, Record{Value: []byte(`{"c": ` + tc.json + `}`)})
			if tc.reason != "" {
				require.Error(t, err)
				var re *RecordError
				require.ErrorAs(t, err, &re)
				assert.ErrorIs(t, err, ErrInvalidRecord)
				assert.Equal(t, "c", re.Column)
				assert.Contains(t, re.Reason, tc.reason)
				return
			}
			require.NoError(t, err)
			require.Len(t, out.Row, 1)
			assert.True(t, tc.want.Equal(out.Row[0]), "want %+v, got %+v", tc.want, out.Row[0])
		})
	}
}

func bigBytes(s string) []byte {
	n, _ := new(big.Int).SetString(s, 10)
	return twosComplement(n)
}

func TestTwosComplement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   int64
		want []byte
	}{
		{0, []byte{0}},
		{1, []byte{1}},
		{127, []byte{0x7f}},
		{128, []byte{0, 0x80}},
		{-1, []byte{0xff}},
		{-128, []byte{0x80}},
		{-129, []byte{0xff, 0x7f}},
		{-256, []byte{0xff, 0x00}},
		{65535, []byte{0, 0xff, 0xff}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, twosComplement(big.NewInt(tc.in)), "%d", tc.in)
	}
	// Cross-check against the int64 big-endian form, trimmed.
	for _, v := range []int64{math.MaxInt64, math.MinInt64, -300000, 300000} {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(v))
		got := twosComplement(big.NewInt(v))
		var back big.Int
		back.SetBytes(got)
		if got[0]&0x80 != 0 {
			back.Sub(&back, new(big.Int).Lsh(big.NewInt(1), uint(8*len(got))))
		}
		assert.Equal(t, v, back.Int64(), "%d", v)
	}
}

func TestDecimalAgainstBigRat(t *testing.T) {
	t.Parallel()
	inputs := []string{"0", "1", "-1", "0.005", "-0.005", "123.455", "9999.994", "1e-3", "12E+1", "000123.4500", "-0.0"}
	for _, in := range inputs {
		for _, scale := range []int{0, 2, 4} {
			d, reason := decimalDatum([]byte(in), 18, scale)
			require.Empty(t, reason, in)
			// Reference: round half away from zero with big.Rat.
			r, ok := new(big.Rat).SetString(in)
			require.True(t, ok)
			r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
			neg := r.Sign() < 0
			r.Abs(r)
			r.Add(r, big.NewRat(1, 2))
			q := new(big.Int).Quo(r.Num(), r.Denom())
			if neg {
				q.Neg(q)
			}
			assert.Equal(t, q.Int64(), d.I, "%s scale %d", in, scale)
		}
	}
}

func TestUnescape(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`abc`, "abc"},
		{`\"\\\/\b\f\n\r\t`, "\"\\/\b\f\n\r\t"},
		{`\u0041\u00e9\u20ac`, "Aé€"},
		{`\ud83d\ude00`, "\U0001F600"},
		{`\ud83d`, "\ufffd"},
		{`\ude00\u0041`, "\ufffdA"},
		{`\ud83d\u0041`, "\ufffdA"},
	}
	for _, tc := range tests {
		buf := make([]byte, len(tc.in))
		got := unescape(buf, []byte(tc.in))
		assert.Equal(t, tc.want, string(got), tc.in)
		assert.LessOrEqual(t, len(got), len(tc.in))
	}
}

func TestCivilDays(t *testing.T) {
	t.Parallel()
	for d := int64(-800_000); d <= 800_000; d += 997 {
		y, m, dd := civilFromDays(d)
		require.Equal(t, d, daysFromCivil(y, m, dd), "day %d", d)
		want := time.Unix(d*86400, 0).UTC()
		require.Equal(t, []int64{int64(want.Year()), int64(want.Month()), int64(want.Day())}, []int64{y, m, dd}, "day %d", d)
	}
}
