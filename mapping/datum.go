package mapping

import (
	"encoding/base64"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/fluss-kafka/gateway/fluss"
)

// Conversions from JSON values and from text to Datums, for every scalar
// Fluss type. They return a reason instead of an error so the happy path
// allocates nothing; the caller wraps the reason into a RecordError.
//
// Accepted input per column type:
//
//	BOOLEAN              true/false, "true"/"false"
//	TINYINT … BIGINT     integer numbers, integer strings ("42"); range-checked
//	FLOAT, DOUBLE        numbers, numeric strings, "NaN", "Infinity", "-Infinity"
//	DECIMAL(p,s)         numbers or numeric strings; rounded half-up to s
//	                     digits, rejected when more than p digits remain
//	CHAR, STRING         strings; numbers, booleans, objects and arrays as
//	                     their JSON text; CHAR(n) holds at most n characters
//	BINARY, BYTES        base64 strings (padded or not); BINARY(n) holds at
//	                     most n bytes
//	DATE                 "2024-01-02", or a number of days since 1970-01-01
//	TIME                 "12:34:56[.fff]", or milliseconds of the day
//	TIMESTAMP            "2024-01-02T03:04:05[.fffffffff][Z|±hh:mm]" ('T' or
//	                     ' '), a date alone, or epoch milliseconds; an
//	                     offset converts to UTC wall-clock time
//	TIMESTAMP_LTZ        the same; text without an offset is UTC
//
// Fractions beyond the column's precision are truncated.

// jsonDatum converts one scanned JSON value to a datum of type t. A JSON
// null is a null datum; the caller checks NOT NULL.
func jsonDatum(t *fluss.DataType, v jsonValue, a *arena) (fluss.Datum, string) {
	switch v.kind {
	case jsonNull:
		return fluss.Datum{Null: true}, ""
	case jsonString:
		text, reason := stringText(v, a)
		if reason != "" {
			return fluss.Datum{}, reason
		}
		if t.Root == fluss.TypeChar || t.Root == fluss.TypeString {
			return fluss.Datum{B: text}, ""
		}
		return textDatum(t, text, a)
	}
	switch t.Root {
	case fluss.TypeBoolean:
		switch v.kind {
		case jsonTrue:
			return fluss.Datum{I: 1}, ""
		case jsonFalse:
			return fluss.Datum{}, ""
		}
	case fluss.TypeTinyInt, fluss.TypeSmallInt, fluss.TypeInt, fluss.TypeBigInt,
		fluss.TypeFloat, fluss.TypeDouble, fluss.TypeDecimal:
		if v.kind == jsonNumber {
			return textDatum(t, v.raw, a)
		}
	case fluss.TypeChar, fluss.TypeString:
		// Numbers, booleans, objects and arrays keep their JSON text.
		if !utf8.Valid(v.raw) {
			return fluss.Datum{}, "value is not valid UTF-8"
		}
		return fluss.Datum{B: v.raw}, ""
	case fluss.TypeDate, fluss.TypeTime, fluss.TypeTimestamp, fluss.TypeTimestampLTZ:
		if v.kind == jsonNumber {
			return numberTimeDatum(t, v.raw)
		}
	}
	return fluss.Datum{}, "cannot convert " + v.kind.String() + " to " + t.Root.String()
}

// stringText returns a JSON string's unescaped, UTF-8-checked content; it
// aliases the input when the string has no escapes.
func stringText(v jsonValue, a *arena) ([]byte, string) {
	text := v.raw
	if v.escaped {
		buf := a.alloc(len(v.raw))
		text = a.shrink(buf, len(unescape(buf, v.raw)))
	}
	if !utf8.Valid(text) {
		return nil, "string is not valid UTF-8"
	}
	return text, ""
}

// textDatum parses text (a JSON string's content, a number literal, or a
// key read as a string) into a datum of type t.
func textDatum(t *fluss.DataType, text []byte, a *arena) (fluss.Datum, string) {
	switch t.Root {
	case fluss.TypeBoolean:
		switch {
		case equalFold(text, "true"):
			return fluss.Datum{I: 1}, ""
		case equalFold(text, "false"):
			return fluss.Datum{}, ""
		}
		return fluss.Datum{}, "not a boolean: " + quoteShort(text)
	case fluss.TypeTinyInt:
		return intDatum(text, math.MinInt8, math.MaxInt8, t.Root)
	case fluss.TypeSmallInt:
		return intDatum(text, math.MinInt16, math.MaxInt16, t.Root)
	case fluss.TypeInt:
		return intDatum(text, math.MinInt32, math.MaxInt32, t.Root)
	case fluss.TypeBigInt:
		return intDatum(text, math.MinInt64, math.MaxInt64, t.Root)
	case fluss.TypeFloat, fluss.TypeDouble:
		bits := 64
		if t.Root == fluss.TypeFloat {
			bits = 32
		}
		f, err := strconv.ParseFloat(string(text), bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return fluss.Datum{}, "number " + quoteShort(text) + " is out of range for " + t.Root.String()
			}
			return fluss.Datum{}, "not a number: " + quoteShort(text)
		}
		return fluss.Datum{F: f}, ""
	case fluss.TypeDecimal:
		return decimalDatum(text, t.Precision, t.Scale)
	case fluss.TypeChar, fluss.TypeString:
		if !utf8.Valid(text) {
			return fluss.Datum{}, "text is not valid UTF-8"
		}
		return fluss.Datum{B: text}, ""
	case fluss.TypeBinary, fluss.TypeBytes:
		buf := a.alloc(base64.RawStdEncoding.DecodedLen(len(text)))
		n, err := base64.StdEncoding.Decode(buf, text)
		if err != nil {
			n, err = base64.RawStdEncoding.Decode(buf, text)
		}
		if err != nil {
			a.shrink(buf, 0)
			return fluss.Datum{}, "not base64: " + quoteShort(text)
		}
		return fluss.Datum{B: a.shrink(buf, n)}, ""
	case fluss.TypeDate:
		days, ok := parseDate(text)
		if !ok {
			return fluss.Datum{}, "not a date (yyyy-MM-dd): " + quoteShort(text)
		}
		return fluss.Datum{I: days}, ""
	case fluss.TypeTime:
		nanos, ok := parseTimeOfDay(text)
		if !ok {
			return fluss.Datum{}, "not a time (HH:mm:ss[.fff]): " + quoteShort(text)
		}
		millis := nanos / 1e6
		return fluss.Datum{I: truncMillis(millis, t.Precision)}, ""
	case fluss.TypeTimestamp, fluss.TypeTimestampLTZ:
		millis, nano, ok := parseTimestamp(text)
		if !ok {
			return fluss.Datum{}, "not a timestamp (RFC 3339 or epoch milliseconds): " + quoteShort(text)
		}
		millis, nano = truncTimestamp(millis, nano, t.Precision)
		return fluss.Datum{I: millis, N: nano}, ""
	}
	return fluss.Datum{}, "cannot convert text to " + t.Root.String()
}

// numberTimeDatum reads DATE as days, TIME as milliseconds of the day and
// TIMESTAMP(_LTZ) as epoch milliseconds.
func numberTimeDatum(t *fluss.DataType, lit []byte) (fluss.Datum, string) {
	n, ok := parseInt(lit)
	if !ok {
		return fluss.Datum{}, "not an integer: " + quoteShort(lit)
	}
	switch t.Root {
	case fluss.TypeDate:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return fluss.Datum{}, "day number " + quoteShort(lit) + " is out of range for DATE"
		}
		return fluss.Datum{I: n}, ""
	case fluss.TypeTime:
		if n < 0 || n >= 86_400_000 {
			return fluss.Datum{}, "milliseconds of day " + quoteShort(lit) + " is out of range for TIME"
		}
		return fluss.Datum{I: truncMillis(n, t.Precision)}, ""
	default:
		millis, nano := truncTimestamp(n, 0, t.Precision)
		return fluss.Datum{I: millis, N: nano}, ""
	}
}

func intDatum(text []byte, lo, hi int64, root fluss.TypeRoot) (fluss.Datum, string) {
	n, ok := parseInt(text)
	if !ok {
		return fluss.Datum{}, "not an integer: " + quoteShort(text)
	}
	if n < lo || n > hi {
		return fluss.Datum{}, "integer " + quoteShort(text) + " is out of range for " + root.String()
	}
	return fluss.Datum{I: n}, ""
}

// parseInt parses an optionally signed decimal integer that fits int64.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// maxDecimalExponent bounds exponents in decimal input, so "1e999999999"
// cannot make us build huge digit strings.
const maxDecimalExponent = 400

// decimalDatum parses a decimal literal (sign, digits, fraction, exponent)
// into the unscaled value at the given scale, rounding half-up.
func decimalDatum(text []byte, precision, scale int) (fluss.Datum, string) {
	bad := func() (fluss.Datum, string) { return fluss.Datum{}, "not a decimal number: " + quoteShort(text) }
	b := text
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	// digits of the significand, without the point.
	var intPart, fracPart []byte
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	intPart = b[:i]
	if i < len(b) && b[i] == '.' {
		j := i + 1
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		fracPart = b[i+1 : j]
		i = j
	}
	if len(intPart)+len(fracPart) == 0 {
		return bad()
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		e, ok := parseInt(b[i+1:])
		if !ok || e > maxDecimalExponent || e < -maxDecimalExponent {
			return bad()
		}
		exp = int(e)
		i = len(b)
	}
	if i != len(b) {
		return bad()
	}
	// value = 0.digits... : unscaled = significand * 10^shift.
	shift := exp - len(fracPart) + scale
	nDigits := len(intPart) + len(fracPart)
	digit := func(k int) byte { // k-th digit of the significand
		if k < len(intPart) {
			return intPart[k] - '0'
		}
		return fracPart[k-len(intPart)] - '0'
	}
	keep := nDigits + shift // digits kept before appending zeros / after dropping
	roundUp := false
	if shift < 0 {
		if keep < 0 {
			keep = 0
		} else {
			roundUp = digit(keep) >= 5
		}
	}
	// Count significant digits to check the precision before building.
	first := 0
	for first < min(keep, nDigits) && digit(first) == 0 {
		first++
	}
	sig := keep - first
	if shift > 0 {
		sig = nDigits + shift - first
		if first == nDigits {
			sig = 0
		}
	}
	if sig > precision+1 {
		return fluss.Datum{}, "decimal " + quoteShort(text) + " does not fit DECIMAL(" + strconv.Itoa(precision) + ", " + strconv.Itoa(scale) + ")"
	}
	overflow := func() (fluss.Datum, string) {
		return fluss.Datum{}, "decimal " + quoteShort(text) + " does not fit DECIMAL(" + strconv.Itoa(precision) + ", " + strconv.Itoa(scale) + ")"
	}
	if precision <= 18 {
		var u uint64
		for k := first; k < min(keep, nDigits); k++ {
			u = u*10 + uint64(digit(k))
		}
		for k := 0; k < shift; k++ {
			u *= 10
		}
		if roundUp {
			u++
		}
		if u >= pow10u(precision) {
			return overflow()
		}
		v := int64(u)
		if neg {
			v = -v
		}
		return fluss.Datum{I: v}, ""
	}
	digits := make([]byte, 0, sig+1)
	for k := first; k < min(keep, nDigits); k++ {
		digits = append(digits, '0'+digit(k))
	}
	for k := 0; k < shift; k++ {
		digits = append(digits, '0')
	}
	if len(digits) == 0 {
		digits = append(digits, '0')
	}
	var n big.Int
	n.SetString(string(digits), 10)
	if roundUp {
		n.Add(&n, big.NewInt(1))
	}
	var limit big.Int
	limit.Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	if n.Cmp(&limit) >= 0 {
		return overflow()
	}
	if neg {
		n.Neg(&n)
	}
	return fluss.Datum{B: twosComplement(&n)}, ""
}

func pow10u(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// twosComplement renders n as the minimal big-endian two's complement
// bytes, as Java's BigInteger.toByteArray (Fluss's form for DECIMAL with
// precision > 18).
func twosComplement(n *big.Int) []byte {
	switch n.Sign() {
	case 0:
		return []byte{0}
	case 1:
		b := n.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n - 1 is non-negative; its bytes inverted are n's two's complement.
	var m big.Int
	m.Neg(n)
	m.Sub(&m, big.NewInt(1))
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// quoteShort quotes input for an error message, cut to 64 bytes.
func quoteShort(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}
