// Package pyfluss_test checks our Fluss writer with an independent reader:
// rows written by the Go client (ARROW log batches) are read back with the
// PyPI client pyfluss through tools/pyfluss/flusspy.py and compared value by
// value.
package pyfluss_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

func TestMain(m *testing.M) { flusstest.Main(m) }

// readerSchema: one column of each scalar type, several TIME/TIMESTAMP
// precisions (each maps to another Arrow unit), and a row id.
func readerSchema() *fluss.Schema {
	s := &fluss.Schema{}
	add := func(name string, t fluss.DataType) { s.Columns = append(s.Columns, fluss.Column{Name: name, Type: t}) }
	add("id", fluss.Int().NonNull())
	add("c_bool", fluss.Boolean())
	add("c_tinyint", fluss.TinyInt())
	add("c_smallint", fluss.SmallInt())
	add("c_bigint", fluss.BigInt())
	add("c_float", fluss.Float())
	add("c_double", fluss.Double())
	add("c_dec_small", fluss.Decimal(10, 2))
	add("c_dec_big", fluss.Decimal(38, 10))
	add("c_char", fluss.Char(6))
	add("c_string", fluss.String())
	add("c_binary", fluss.Binary(4))
	add("c_bytes", fluss.Bytes())
	add("c_date", fluss.Date())
	add("c_time0", fluss.Time(0))
	add("c_time3", fluss.Time(3))
	add("c_ts0", fluss.Timestamp(0))
	add("c_ts3", fluss.Timestamp(3))
	add("c_ts6", fluss.Timestamp(6))
	add("c_ts9", fluss.Timestamp(9))
	add("c_ltz3", fluss.TimestampLTZ(3))
	add("c_ltz6", fluss.TimestampLTZ(6))
	add("c_ltz9", fluss.TimestampLTZ(9))
	return s
}

// TestPyFlussReadsOurArrowBatches writes 10 000 rows in batches of varying
// size to a 3-bucket ARROW (ZSTD, the default) log table and reads them back
// with pyfluss: every value, bucket and offset must match.
func TestPyFlussReadsOurArrowBatches(t *testing.T) {
	const buckets, total = 3, 10_000
	addr := flusstest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(addr, ","), RequestTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) }) // after the database is dropped

	db := fmt.Sprintf("e2e_pyfluss_%d", time.Now().UnixNano())
	require.NoError(t, c.CreateDatabase(ctx, db, false))
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		assert.NoError(t, c.DropDatabase(cctx, db, true, true))
	})
	path := fluss.TablePath{Database: db, Table: "all_types"}
	require.NoError(t, c.CreateTableReady(ctx, path, &fluss.TableDescriptor{Schema: *readerSchema(), BucketCount: buckets}, 0))
	info, err := c.GetTableInfo(ctx, path)
	require.NoError(t, err)
	require.Equal(t, fluss.LogFormatArrow, info.Descriptor.LogFormat())
	require.Equal(t, fluss.ArrowCompressionZstd, info.Descriptor.ArrowCompression())
	schema := &info.Descriptor.Schema

	type placed struct {
		bucket int32
		offset int64
		row    fluss.Row
	}
	want := make(map[int64]placed, total)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	b, err := fluss.NewArrowLogBuilder(schema, info.SchemaID, info.Descriptor.ArrowCompression(), 3)
	require.NoError(t, err)
	next := make([]int64, buckets)
	for id := 0; id < total; {
		bucket := int32(r.IntN(buckets))
		n := min(total-id, 300+r.IntN(1700))
		b.Reset()
		rows := make([]fluss.Row, n)
		for i := range rows {
			rows[i] = readerRow(r, schema, int64(id+i))
			require.NoError(t, b.Append(rows[i]))
		}
		records, err := b.AppendTo(nil)
		require.NoError(t, err)
		leader, err := c.BucketLeader(ctx, info.TableID, fluss.NoPartition, bucket)
		require.NoError(t, err)
		res, err := c.ProduceLog(ctx, leader.ID, &fluss.ProduceLogRequest{TableID: info.TableID, Acks: -1,
			Timeout: 30 * time.Second, Buckets: []fluss.BucketRecords{{PartitionID: fluss.NoPartition, Bucket: bucket, Records: records}}})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err)
		require.Equal(t, next[bucket], res[0].Offset, "base offset of the batch in bucket %d", bucket)
		for i, row := range rows {
			want[int64(id+i)] = placed{bucket: bucket, offset: next[bucket] + int64(i), row: row}
		}
		next[bucket] += int64(n)
		id += n
	}

	var scan struct {
		Rows []struct {
			Partition  *string                    `json:"partition"`
			Bucket     int32                      `json:"bucket"`
			Offset     int64                      `json:"offset"`
			ChangeType string                     `json:"change_type"`
			Row        map[string]json.RawMessage `json:"row"`
		} `json:"rows"`
	}
	flusstest.PyFlussJSON(t, &scan, addr, "scan-log", "--table", path.String(), "--timeout", "120")
	require.Len(t, scan.Rows, total, "rows read by pyfluss")
	seen := make(map[int64]bool, total)
	for _, got := range scan.Rows {
		var id int64
		require.NoError(t, json.Unmarshal(got.Row["id"], &id))
		w, ok := want[id]
		require.True(t, ok, "pyfluss read a row with unknown id %d", id)
		require.False(t, seen[id], "row %d read twice", id)
		seen[id] = true
		assert.Nil(t, got.Partition)
		assert.Equal(t, "+A", got.ChangeType)
		assert.Equal(t, w.bucket, got.Bucket, "bucket of row %d", id)
		assert.Equal(t, w.offset, got.Offset, "offset of row %d", id)
		require.Len(t, got.Row, len(schema.Columns), "columns of row %d", id)
		for i, col := range schema.Columns {
			raw, ok := got.Row[col.Name]
			require.True(t, ok, "row %d lacks column %s", id, col.Name)
			assertJSONValue(t, col.Type, w.row[i], raw, fmt.Sprintf("row %d column %s", id, col.Name))
		}
	}
}

// readerRow returns a row with id and random values (about 10% nulls) that
// fit each column's precision exactly.
func readerRow(r *rand.Rand, s *fluss.Schema, id int64) fluss.Row {
	row := make(fluss.Row, len(s.Columns))
	row[0] = fluss.IntDatum(id)
	for i := 1; i < len(s.Columns); i++ {
		if r.IntN(10) == 0 {
			row[i] = fluss.NullDatum()
			continue
		}
		row[i] = readerDatum(r, s.Columns[i].Type)
	}
	return row
}

func readerDatum(r *rand.Rand, t fluss.DataType) fluss.Datum {
	signed := func(bits uint) int64 { return int64(r.Uint64()) >> (64 - bits) }
	switch t.Root {
	case fluss.TypeBoolean:
		return fluss.BoolDatum(r.IntN(2) == 1)
	case fluss.TypeTinyInt:
		return fluss.IntDatum(signed(8))
	case fluss.TypeSmallInt:
		return fluss.IntDatum(signed(16))
	case fluss.TypeBigInt:
		return fluss.IntDatum(int64(r.Uint64()))
	case fluss.TypeFloat:
		return fluss.FloatDatum(float64(float32(r.NormFloat64() * 1e3)))
	case fluss.TypeDouble:
		return fluss.FloatDatum(r.NormFloat64() * 1e9)
	case fluss.TypeDecimal:
		if t.Precision <= 18 {
			return fluss.IntDatum(r.Int64N(2*pow10(t.Precision)-1) - (pow10(t.Precision) - 1))
		}
		digits := make([]byte, 1+r.IntN(t.Precision))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		v, _ := new(big.Int).SetString(string(digits), 10)
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		return fluss.BytesDatum(twosComplement(v))
	case fluss.TypeChar:
		return fluss.StringDatum(text(r, r.IntN(t.Length+1)))
	case fluss.TypeString:
		return fluss.StringDatum(text(r, r.IntN(40)))
	case fluss.TypeBinary:
		return fluss.BytesDatum(randomBytes(r, t.Length))
	case fluss.TypeBytes:
		return fluss.BytesDatum(randomBytes(r, r.IntN(30)))
	case fluss.TypeDate:
		return fluss.IntDatum(r.Int64N(80_000) - 30_000)
	case fluss.TypeTime:
		ms := r.Int64N(86_400_000)
		if t.Precision == 0 {
			ms -= ms % 1000
		}
		return fluss.IntDatum(ms)
	case fluss.TypeTimestamp, fluss.TypeTimestampLTZ:
		ms := r.Int64N(4_000_000_000_000) - 1_000_000_000_000
		var nanos int32
		switch {
		case t.Precision == 0:
			ms -= ms % 1000
		case t.Precision <= 3:
		case t.Precision <= 6:
			nanos = int32(r.IntN(1000)) * 1000
		default:
			nanos = int32(r.IntN(1_000_000))
		}
		if nanos != 0 && ms < 0 {
			ms = -ms // keep sub-millisecond values after 1970: Fluss's Java reader rejects them before
		}
		return fluss.TimestampDatum(ms, nanos)
	}
	panic("unexpected type " + t.String())
}

func pow10(n int) int64 {
	v := int64(1)
	for range n {
		v *= 10
	}
	return v
}

func text(r *rand.Rand, maxBytes int) string {
	rs := []rune("abcxyz \u00e9\u20ac\U0001F642\"\\")
	var b strings.Builder
	for {
		ch := string(rs[r.IntN(len(rs))])
		if b.Len()+len(ch) > maxBytes {
			return b.String()
		}
		b.WriteString(ch)
	}
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// twosComplement renders v as minimal big-endian two's complement, the form
// of a DECIMAL datum with precision > 18 (Java's BigInteger.toByteArray).
func twosComplement(v *big.Int) []byte {
	n := v.BitLen()/8 + 1
	m := new(big.Int).Set(v)
	if v.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	b := m.FillBytes(make([]byte, n))
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	return b
}

func fromTwosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// decimalString renders unscaled/10^scale in plain notation with exactly
// scale fraction digits, as flusspy prints DECIMAL values.
func decimalString(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	for len(digits) <= scale {
		digits = "0" + digits
	}
	if scale > 0 {
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if unscaled.Sign() < 0 {
		return "-" + digits
	}
	return digits
}

// assertJSONValue checks one value as flusspy prints it (see the
// representation table in flusspy.py) against the datum we wrote.
func assertJSONValue(t *testing.T, typ fluss.DataType, d fluss.Datum, raw json.RawMessage, what string) {
	t.Helper()
	if d.Null {
		assert.JSONEq(t, "null", string(raw), what)
		return
	}
	var str string
	switch typ.Root {
	case fluss.TypeBoolean:
		var v bool
		require.NoError(t, json.Unmarshal(raw, &v), what)
		assert.Equal(t, d.I != 0, v, what)
		return
	case fluss.TypeTinyInt, fluss.TypeSmallInt, fluss.TypeInt, fluss.TypeBigInt:
		assert.Equal(t, strconv.FormatInt(d.I, 10), string(raw), what)
		return
	case fluss.TypeFloat, fluss.TypeDouble:
		v, err := strconv.ParseFloat(string(raw), 64)
		require.NoError(t, err, what)
		want := d.F
		if typ.Root == fluss.TypeFloat {
			want = float64(float32(d.F))
		}
		assert.Equal(t, math.Float64bits(want), math.Float64bits(v), "%s: want %v, got %v", what, want, v)
		return
	}
	require.NoError(t, json.Unmarshal(raw, &str), what)
	var want string
	switch typ.Root {
	case fluss.TypeDecimal:
		unscaled := big.NewInt(d.I)
		if typ.Precision > 18 {
			unscaled = fromTwosComplement(d.B)
		}
		want = decimalString(unscaled, typ.Scale)
	case fluss.TypeChar, fluss.TypeString:
		want = string(d.B)
	case fluss.TypeBinary, fluss.TypeBytes:
		want = base64.StdEncoding.EncodeToString(d.B)
	case fluss.TypeDate:
		want = time.Unix(d.I*86400, 0).UTC().Format("2006-01-02")
	case fluss.TypeTime:
		tm := time.UnixMilli(d.I).UTC()
		want = tm.Format("15:04:05") + fmt.Sprintf(".%09d", tm.Nanosecond())
	case fluss.TypeTimestamp, fluss.TypeTimestampLTZ:
		tm := time.UnixMilli(d.I).UTC().Add(time.Duration(d.N))
		want = tm.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%09d", tm.Nanosecond())
		if typ.Root == fluss.TypeTimestampLTZ {
			want += "Z"
		}
	default:
		t.Fatalf("%s: unexpected type %s", what, typ)
	}
	assert.Equal(t, want, str, what)
}

func TestDecimalString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		unscaled int64
		scale    int
		want     string
	}{
		{1234, 2, "12.34"},
		{-5, 2, "-0.05"},
		{0, 3, "0.000"},
		{7, 0, "7"},
		{-1230, 1, "-123.0"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, decimalString(big.NewInt(tt.unscaled), tt.scale), "%d scale %d", tt.unscaled, tt.scale)
	}
}

func TestTwosComplementRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0}},
		{127, []byte{0x7f}},
		{128, []byte{0x00, 0x80}},
		{-1, []byte{0xff}},
		{-128, []byte{0x80}},
		{-129, []byte{0xff, 0x7f}},
		{65535, []byte{0x00, 0xff, 0xff}},
	}
	for _, tt := range tests {
		got := twosComplement(big.NewInt(tt.v))
		assert.Equal(t, tt.want, got, "%d", tt.v)
		assert.Equal(t, tt.v, fromTwosComplement(got).Int64(), "%d round trip", tt.v)
	}
}
