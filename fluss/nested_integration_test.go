package fluss

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// ARRAY, MAP and ROW value columns against the real cluster: log tables in
// every log format and primary-key tables in both kv formats, created
// through our client (the nested types' table JSON), written through our
// encoders, read back through FetchLog and Lookup (and the server's own
// changelog, Arrow batches Java wrote) into the same values; and read by
// pyfluss (fluss-rust's Arrow and CompactedRow readers) value by value.

// requireSameColumnTypes: the server stores the types we sent (field ids
// aside, which it numbers itself).
func requireSameColumnTypes(t *testing.T, sent, got *Schema) {
	t.Helper()
	require.Len(t, got.Columns, len(sent.Columns))
	for i := range sent.Columns {
		require.Equal(t, javaTypeSpec(sent.Columns[i].Type), javaTypeSpec(got.Columns[i].Type), "column %s as stored", sent.Columns[i].Name)
	}
}

func TestNestedLogTablesRoundTrip(t *testing.T) {
	c := newClusterClient(t)
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"arrow_zstd", nil},
		{"arrow_lz4", map[string]string{PropArrowCompression: string(ArrowCompressionLZ4)}},
		{"indexed", map[string]string{PropLogFormat: string(LogFormatIndexed)}},
		{"compacted", map[string]string{PropLogFormat: string(LogFormatCompacted)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := nestedSchema()
			_, info := createTestTable(t, c, TableDescriptor{Schema: *sent, BucketCount: 1, Properties: tc.props})
			s := &info.Descriptor.Schema
			requireSameColumnTypes(t, sent, s)
			format := info.Descriptor.LogFormat()
			var b batchBuilder
			var err error
			switch format {
			case LogFormatArrow:
				b, err = NewArrowLogBuilder(s, info.SchemaID, info.Descriptor.ArrowCompression(), 3)
			case LogFormatIndexed:
				b, err = NewIndexedLogBuilder(s, info.SchemaID)
			default:
				b, err = NewCompactedLogBuilder(s, info.SchemaID)
			}
			require.NoError(t, err)
			rows := nestedRows(uint64(time.Now().UnixNano()), 1500, 15)
			for _, part := range [][]Row{rows[:1], rows[1:700], rows[700:]} {
				b.Reset()
				for _, row := range part {
					require.NoError(t, b.Append(row))
				}
				records, err := b.AppendTo(nil)
				require.NoError(t, err)
				res := produceBatch(t, c, info.TableID, 0, records)
				require.NoError(t, res.Err)
			}
			recs := fetchAllRecords(t, c, info, 0, format, int64(len(rows)))
			got := make([]Row, len(recs))
			for i := range recs {
				got[i] = recs[i].Row
			}
			requireRowsEqual(t, rows, got)
		})
	}
}

func TestNestedPkTableUpsertLookupChangelog(t *testing.T) {
	c := newClusterClient(t)
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		t.Run(string(format), func(t *testing.T) {
			sent := nestedSchema()
			sent.PrimaryKey = []string{"id"}
			_, info := createTestTable(t, c, TableDescriptor{Schema: *sent, BucketCount: 2,
				Properties: map[string]string{PropKvFormat: string(format)}})
			s := &info.Descriptor.Schema
			requireSameColumnTypes(t, sent, s)
			enc, err := NewKeyEncoder(s, s.PrimaryKey, "")
			require.NoError(t, err)
			w := &pkWriter{t: t, c: c, info: info, enc: enc, format: format,
				batches: map[int32]*KvBatchBuilder{}, logEnd: map[int32]int64{}}
			rows := nestedRows(uint64(time.Now().UnixNano()), 400, 15)
			keys := make([][]byte, len(rows))
			buckets := make([]int32, len(rows))
			var changelog [2][]Row
			for i, row := range rows {
				keys[i], buckets[i] = w.keyOf(row)
				w.logEnd[buckets[i]]++
				changelog[buckets[i]] = append(changelog[buckets[i]], row)
				require.NoError(t, w.batch(buckets[i]).Upsert(keys[i], row))
			}
			w.flush()

			ctx := testContext(t)
			for bucket := int32(0); bucket < 2; bucket++ {
				var ks [][]byte
				var want []Row
				for i := range rows {
					if buckets[i] == bucket {
						ks = append(ks, keys[i])
						want = append(want, rows[i])
					}
				}
				vals, err := c.Lookup(ctx, info.TableID, NoPartition, bucket, ks)
				require.NoError(t, err)
				require.Len(t, vals, len(ks))
				for j := range vals {
					require.NotNil(t, vals[j])
					schemaID, row, err := DecodeValueRow(vals[j], s, format)
					require.NoError(t, err)
					require.Equal(t, int16(info.SchemaID), schemaID)
					requireRowEqual(t, want[j], row, fmt.Sprintf("bucket %d key %d", bucket, j))
				}
				// the server's changelog: ARROW batches its ArrowWriter wrote
				// from our values
				recs := fetchAllRecords(t, c, info, bucket, info.Descriptor.LogFormat(), w.logEnd[bucket])
				got := make([]Row, len(recs))
				for i := range recs {
					require.Equal(t, ChangeInsert, recs[i].ChangeType)
					got[i] = recs[i].Row
				}
				want = changelog[bucket]
				if format == KvFormatIndexed {
					want = make([]Row, len(changelog[bucket]))
					for i, row := range changelog[bucket] {
						want[i] = indexedCharsPadded(columnTypes(s), row)
					}
				}
				requireRowsEqual(t, want, got)
			}
		})
	}
}

// indexedCharsPadded is row as the server's changelog carries it for an
// INDEXED kv table: a CHAR(n) field of a row (an IndexedRow, top-level or
// nested) is stored as n bytes, zero padded, and the server's ArrowWriter
// reads it with IndexedRow.getString, which keeps the padding; CHAR
// elements of arrays and maps are unpadded (BinaryArray).
func indexedCharsPadded(types []DataType, row []Datum) Row {
	out := make(Row, len(row))
	for i, d := range row {
		out[i] = indexedCharsPaddedDatum(&types[i], d, true)
	}
	return out
}

func indexedCharsPaddedDatum(t *DataType, d Datum, rowField bool) Datum {
	if d.Null {
		return d
	}
	switch t.Root {
	case TypeChar:
		if rowField && len(d.B) < t.Length {
			d.B = append(append([]byte(nil), d.B...), make([]byte, t.Length-len(d.B))...)
		}
	case TypeArray:
		es := make([]Datum, len(d.Nested.Elems))
		for i, e := range d.Nested.Elems {
			es[i] = indexedCharsPaddedDatum(t.Elem, e, false)
		}
		d = ArrayDatum(es...)
	case TypeMap:
		ks, vs := make([]Datum, len(d.Nested.Keys)), make([]Datum, len(d.Nested.Values))
		for i := range ks {
			ks[i] = indexedCharsPaddedDatum(t.Key, d.Nested.Keys[i], false)
			vs[i] = indexedCharsPaddedDatum(t.Value, d.Nested.Values[i], false)
		}
		d = MapDatum(ks, vs)
	case TypeRow:
		fs := make([]Datum, len(d.Nested.Fields))
		for i, f := range d.Nested.Fields {
			fs[i] = indexedCharsPaddedDatum(&t.Fields[i].Type, f, true)
		}
		d = RowDatum(fs...)
	}
	return d
}

// pyNestedSchema: the nested columns pyfluss is checked on.
func pyNestedSchema() *Schema {
	return &Schema{Columns: []Column{
		{Name: "id", Type: Int().NonNull()},
		{Name: "a_int", Type: Array(Int())},
		{Name: "m_str_big", Type: Map(String(), BigInt())},
		{Name: "r_ab", Type: RowType(RowField("a", Int()), RowField("b", String()))},
		{Name: "a_row", Type: Array(RowType(RowField("x", BigInt()), RowField("y", Array(String())), RowField("z", Map(Int(), Boolean()))))},
		{Name: "r_nested", Type: RowType(RowField("n", RowType(RowField("s", String()), RowField("l", Array(BigInt().NonNull())))), RowField("d", Date()))},
		{Name: "a_a", Type: Array(Array(Int()))},
		{Name: "m_str_row", Type: Map(String(), RowType(RowField("p", Int()), RowField("q", Bytes())))},
		{Name: "a_ts", Type: Array(Timestamp(9))},
		{Name: "r_times", Type: RowType(RowField("t", TimestampLTZ(6)), RowField("d", Date()), RowField("tm", Time(3)))},
	}}
}

// xcPyNested is a datum in flusspy's JSON form, nested types included:
// arrays as JSON arrays, maps as arrays of {"key", "value"}, rows as
// objects keyed by field name.
func xcPyNested(t DataType, d Datum, micros bool) any {
	if micros {
		d = xcPyMicros(t, d)
	}
	if d.Null {
		return nil
	}
	switch t.Root {
	case TypeArray:
		out := make([]any, len(d.Nested.Elems))
		for i, e := range d.Nested.Elems {
			out[i] = xcPyNested(*t.Elem, e, micros)
		}
		return out
	case TypeMap:
		out := make([]any, len(d.Nested.Keys))
		for i := range d.Nested.Keys {
			out[i] = map[string]any{"key": xcPyNested(*t.Key, d.Nested.Keys[i], micros), "value": xcPyNested(*t.Value, d.Nested.Values[i], micros)}
		}
		return out
	case TypeRow:
		out := make(map[string]any, len(t.Fields))
		for i, f := range t.Fields {
			out[f.Name] = xcPyNested(f.Type, d.Nested.Fields[i], micros)
		}
		return out
	}
	return xcPyValue(t, d)
}

// xcAssertPyNested compares a flusspy row with want; micros: timestamps as
// pyfluss's record rows carry them (Python datetimes, microseconds).
func xcAssertPyNested(t *testing.T, s *Schema, want Row, got map[string]json.RawMessage, micros bool, what string) {
	t.Helper()
	for i, c := range s.Columns {
		exp, err := json.Marshal(xcPyNested(c.Type, want[i], micros))
		require.NoError(t, err)
		require.Contains(t, got, c.Name, what)
		assert.Equal(t, exactJSON(t, exp), exactJSON(t, got[c.Name]), "%s column %s: want %s, got %s", what, c.Name, exp, got[c.Name])
	}
}

// exactJSON decodes JSON with numbers kept as their text, so that int64
// values compare exactly.
func exactJSON(t *testing.T, b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "%s", b)
	return v
}

// TestPyFlussReadsNestedColumns: pyfluss scans an ARROW log table and looks
// up a primary-key table (COMPACTED values) we wrote with nested columns,
// and sees every value we wrote.
func TestPyFlussReadsNestedColumns(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	c := newClusterClient(t)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	sent := pyNestedSchema()
	rows := make([]Row, 120)
	for i := range rows {
		rows[i] = randomNestedRow(r, sent, []int{0, 20, 100}[i%3])
		rows[i][0] = IntDatum(int64(i))
	}
	rows[1] = Row{IntDatum(1), ArrayDatum(), MapDatum(nil, nil), RowDatum(NullDatum(), NullDatum()), ArrayDatum(),
		RowDatum(RowDatum(StringDatum(""), ArrayDatum()), NullDatum()), ArrayDatum(ArrayDatum(), NullDatum()), MapDatum(nil, nil),
		ArrayDatum(), RowDatum(NullDatum(), NullDatum(), NullDatum())}
	rows[2] = Row{IntDatum(2), ArrayDatum(IntDatum(1), NullDatum(), IntDatum(3)),
		MapDatum([]Datum{StringDatum("a"), StringDatum("bb"), StringDatum("é")}, []Datum{IntDatum(1), NullDatum(), IntDatum(-1 << 63)}),
		RowDatum(IntDatum(5), StringDatum("five")),
		ArrayDatum(RowDatum(IntDatum(7), ArrayDatum(StringDatum("s"), NullDatum()), MapDatum([]Datum{IntDatum(1)}, []Datum{BoolDatum(true)})), NullDatum()),
		NullDatum(), NullDatum(), MapDatum([]Datum{StringDatum("k")}, []Datum{RowDatum(NullDatum(), BytesDatum([]byte{0, 1, 2}))}),
		ArrayDatum(TimestampDatum(1_700_000_000_123, 456_789), NullDatum(), TimestampDatum(0, 1)),
		RowDatum(TimestampDatum(-1_000, 0), IntDatum(-1), IntDatum(86_399_999))}

	t.Run("arrow_log_scan", func(t *testing.T) {
		path, info := createTestTable(t, c, TableDescriptor{Schema: *sent, BucketCount: 1})
		s := &info.Descriptor.Schema
		b, err := NewArrowLogBuilder(s, info.SchemaID, info.Descriptor.ArrowCompression(), 3)
		require.NoError(t, err)
		for _, part := range [][]Row{rows[:60], rows[60:]} {
			b.Reset()
			for _, row := range part {
				require.NoError(t, b.Append(row))
			}
			records, err := b.AppendTo(nil)
			require.NoError(t, err)
			require.NoError(t, produceBatch(t, c, info.TableID, 0, records).Err)
		}
		scanned := xcPyScan(t, addr, path)
		require.Len(t, scanned, len(rows))
		for i, sr := range scanned {
			require.Equal(t, int64(i), sr.Offset)
			xcAssertPyNested(t, s, rows[i], sr.Row, false, fmt.Sprintf("offset %d", i))
		}
	})

	t.Run("pk_lookup", func(t *testing.T) {
		pk := pyNestedSchema()
		pk.PrimaryKey = []string{"id"}
		path, info := createTestTable(t, c, TableDescriptor{Schema: *pk, BucketCount: 3})
		s := &info.Descriptor.Schema
		enc, err := NewKeyEncoder(s, s.PrimaryKey, "")
		require.NoError(t, err)
		w := &pkWriter{t: t, c: c, info: info, enc: enc, format: KvFormatCompacted,
			batches: map[int32]*KvBatchBuilder{}, logEnd: map[int32]int64{}}
		keys := make([]map[string]any, len(rows))
		for i, row := range rows {
			key, bucket := w.keyOf(row)
			w.logEnd[bucket]++
			require.NoError(t, w.batch(bucket).Upsert(key, row))
			keys[i] = map[string]any{"id": i}
		}
		w.flush()
		js, err := json.Marshal(keys)
		require.NoError(t, err)
		var out struct {
			Rows []map[string]json.RawMessage `json:"rows"`
		}
		flusstest.PyFlussJSON(t, &out, addr, "lookup", "--table", path.String(), "--keys-json", string(js))
		require.Len(t, out.Rows, len(rows))
		for i, got := range out.Rows {
			require.NotNil(t, got, "key %d", i)
			xcAssertPyNested(t, s, rows[i], got, true, fmt.Sprintf("key %d", i))
		}
	})
}

// TestServerRefusesNestedKeyColumns: Fluss refuses ARRAY, MAP and ROW
// primary-key and bucket-key columns at table creation, as our key encoder
// refuses them.
func TestServerRefusesNestedKeyColumns(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	db := newTestDatabase(t, c)
	for _, typ := range []DataType{Array(Int()), Map(String(), Int()), RowType(RowField("a", Int()))} {
		s := Schema{Columns: []Column{{Name: "k", Type: typ.NonNull()}, {Name: "v", Type: Int()}}}
		pk := TableDescriptor{Schema: s, BucketCount: 1}
		pk.Schema.PrimaryKey = []string{"k"}
		err := c.CreateTable(ctx, TablePath{Database: db, Table: uniqueName("pk")}, &pk, false)
		require.Error(t, err, "%s primary key", typ.Root)
		t.Logf("%s primary key: %v", typ.Root, err)
		bk := TableDescriptor{Schema: s, BucketCount: 2, BucketKeys: []string{"k"}}
		err = c.CreateTable(ctx, TablePath{Database: db, Table: uniqueName("bk")}, &bk, false)
		require.Error(t, err, "%s bucket key", typ.Root)
		t.Logf("%s bucket key: %v", typ.Root, err)
		_, err = NewKeyEncoder(&s, []string{"k"}, "")
		require.ErrorIs(t, err, ErrNestedKey)
	}
}
