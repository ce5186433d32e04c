package mapping

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func dlqInfo() *fluss.TableInfo {
	return tableInfo("ops", "dlq", []fluss.Column{
		col(DLQColumnTopic, fluss.String()),
		col(DLQColumnPartition, fluss.Int()),
		col(DLQColumnOffset, fluss.BigInt()),
		col(DLQColumnTimestamp, fluss.TimestampLTZ(3)),
		col(DLQColumnKey, fluss.Bytes()),
		col(DLQColumnValue, fluss.Bytes()),
		col(DLQColumnHeaders, fluss.String()),
		col(DLQColumnRoute, fluss.String()),
		col(DLQColumnReason, fluss.String()),
		col("extra", fluss.Int()),
	}, nil, buckets(3))
}

func str(s string) fluss.Datum { return fluss.Datum{B: []byte(s)} }

var null = fluss.Datum{Null: true}

func assertRow(t *testing.T, want, got fluss.Row) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, want[i].Equal(got[i]), "column %d: want %+v (%q), got %+v (%q)", i, want[i], want[i].B, got[i], got[i].B)
	}
}

func TestConvertJSONFields(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{
		col("id", fluss.BigInt()),
		col("name", fluss.String()),
		col("city", fluss.String()),
		col("zip", fluss.String()),
		col("addr", fluss.String()),
		col("req", fluss.Int().NonNull()),
	}, nil)
	base := RouteSpec{Topic: "t", Value: ValueSpec{Paths: map[string]string{"city": "$.addr.city", "zip": "addr.zip.code"}}}
	reject := base
	reject.Value.UnknownFields = FieldReject
	reject.Value.MissingFields = FieldReject
	lenient := bind(t, base, info)
	strict := bind(t, reject, info)

	tests := []struct {
		name   string
		route  *Route
		value  string
		want   fluss.Row
		column string
		reason string
	}{
		{"all fields", lenient, `{"id": 1, "name": "a", "addr": {"city": "Paris", "zip": {"code": "75001"}}, "req": 3}`,
			fluss.Row{{I: 1}, str("a"), str("Paris"), str("75001"), str(`{"city": "Paris", "zip": {"code": "75001"}}`), {I: 3}}, "", ""},
		{"fields in reverse order", lenient, `{"req": 3, "addr": {"zip": {"code": "75001"}, "city": "Paris"}, "name": "a", "id": 1}`,
			fluss.Row{{I: 1}, str("a"), str("Paris"), str("75001"), str(`{"zip": {"code": "75001"}, "city": "Paris"}`), {I: 3}}, "", ""},
		{"order broken by unknown and repeated fields", lenient, `{"id": 1, "x": 0, "name": "a", "id": 4, "name": "b", "req": 3, "name": "c"}`,
			fluss.Row{{I: 4}, str("c"), null, null, null, {I: 3}}, "", ""},
		{"missing become null", lenient, `{"req": 1}`,
			fluss.Row{null, null, null, null, null, {I: 1}}, "", ""},
		{"unknown ignored, nested too", lenient, `{"req": 1, "x": [1, {"y": null}], "addr": {"country": "FR"}}`,
			fluss.Row{null, null, null, null, str(`{"country": "FR"}`), {I: 1}}, "", ""},
		{"path through non-object", lenient, `{"req": 1, "addr": "nowhere"}`,
			fluss.Row{null, null, null, null, str("nowhere"), {I: 1}}, "", ""},
		{"escaped field name", lenient, `{"n\u0061me": "b", "req": 1}`,
			fluss.Row{null, str("b"), null, null, null, {I: 1}}, "", ""},
		{"duplicate field: last wins", lenient, `{"id": 1, "id": 2, "req": 1}`,
			fluss.Row{{I: 2}, null, null, null, null, {I: 1}}, "", ""},
		{"whitespace", lenient, " \n{ \"req\" :\t1 }\r\n",
			fluss.Row{null, null, null, null, null, {I: 1}}, "", ""},
		{"NOT NULL missing", lenient, `{"id": 1}`, nil, "req", "no value for a NOT NULL column"},
		{"NOT NULL null", lenient, `{"req": null}`, nil, "req", "null for a NOT NULL column"},
		{"bad type names column", lenient, `{"id": "x", "req": 1}`, nil, "id", `not an integer: "x"`},
		{"unknown rejected", strict, `{"id": 1, "name": "a", "addr": {"city": "c", "zip": {"code": "z"}}, "req": 1, "extra": 1}`, nil, "", `unknown field "extra"`},
		{"unknown nested rejected", strict, `{"addr": {"city": "c", "state": "s"}}`, nil, "", `unknown field "state"`},
		{"missing rejected", strict, `{"id": 1, "req": 1}`, nil, "name", "field missing"},
		{"not an object", lenient, `[1, 2]`, nil, "", "not a JSON object"},
		{"scalar", lenient, `42`, nil, "", "not a JSON object"},
		{"empty", lenient, ``, nil, "", "empty, not a JSON object"},
		{"truncated", lenient, `{"id": 1`, nil, "", "invalid JSON"},
		{"trailing data", lenient, `{"req": 1} x`, nil, "", "data after the JSON object"},
		{"bad literal", lenient, `{"req": tru}`, nil, "", "invalid literal"},
		{"bad number", lenient, `{"req": 01}`, nil, "", "expected ',' or '}'"},
		{"bad skipped value", lenient, `{"zzz": [1,,2], "req": 1}`, nil, "", "invalid JSON"},
		{"bad escape", lenient, `{"name": "\x"}`, nil, "", "invalid escape"},
		{"control char", lenient, "{\"name\": \"a\x01\"}", nil, "", "control character"},
		{"deep nesting", lenient, `{"x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, nil, "", "nested too deeply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := convert(t, tc.route, Record{Index: 5, Value: []byte(tc.value)})
			if tc.reason != "" {
				require.Error(t, err)
				var re *RecordError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, int32(5), re.Index)
				assert.Equal(t, tc.column, re.Column)
				assert.Contains(t, re.Reason, tc.reason)
				assert.Contains(t, err.Error(), `route "t": record 5: `)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, fluss.WriteAppend, out.Op)
			assert.Empty(t, out.Key)
			assertRow(t, tc.want, out.Row)
		})
	}
}

func TestConvertRawAndString(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("k", fluss.Bytes()), col("p", fluss.Bytes()), col("s", fluss.String())}, nil)
	raw := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyRaw, Column: "k"}, Value: ValueSpec{Format: ValueRaw, Column: "p"}}, info)
	out, err := convert(t, raw, Record{Key: []byte{0, 1}, Value: []byte{0xff, 0}})
	require.NoError(t, err)
	assertRow(t, fluss.Row{{B: []byte{0, 1}}, {B: []byte{0xff, 0}}, null}, out.Row)

	// An empty key is a key; a nil key is null.
	out, err = convert(t, raw, Record{Key: []byte{}, Value: []byte{}})
	require.NoError(t, err)
	assert.False(t, out.Row[0].Null)
	assert.False(t, out.Row[1].Null)
	out, err = convert(t, raw, Record{Value: []byte("v")})
	require.NoError(t, err)
	assert.True(t, out.Row[0].Null)

	text := bind(t, RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueString, Column: "s"}}, info)
	out, err = convert(t, text, Record{Value: []byte("héllo")})
	require.NoError(t, err)
	assertRow(t, fluss.Row{null, null, str("héllo")}, out.Row)
	_, err = convert(t, text, Record{Value: []byte{0xff}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `column "s": value is not valid UTF-8`)

	// Tombstones cannot go to a log table.
	_, err = convert(t, text, Record{Index: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "record 2: null value (tombstone) cannot be written to a log table")
}

func TestConvertPrimaryKey(t *testing.T) {
	t.Parallel()
	cols := []fluss.Column{
		col("id", fluss.Int().NonNull()),
		col("region", fluss.String().NonNull()),
		col("name", fluss.String()),
		col("score", fluss.Double()),
	}
	info := tableInfo("db", "users", cols, []string{"id", "region"}, buckets(8))
	r := bind(t, RouteSpec{Topic: "users", Key: KeySpec{Format: KeyJSON}}, info)
	enc, err := fluss.NewKeyEncoder(&info.Descriptor.Schema, []string{"id", "region"}, "")
	require.NoError(t, err)

	ids := []int{1, 2, 3, 127, 128, 1000, -5, 65536}
	for _, id := range ids {
		key := []byte(`{"id": ` + itoa(id) + `, "region": "eu"}`)
		out, err := convert(t, r, Record{Key: key, Value: []byte(`{"name": "n", "score": 1.5, "id": 999}`), Partition: 3})
		require.NoError(t, err)
		assert.Equal(t, fluss.WriteUpsert, out.Op)
		// The key overrides the value's id.
		assertRow(t, fluss.Row{{I: int64(id)}, str("eu"), str("n"), {F: 1.5}}, out.Row)
		wantKey, err := enc.Encode(nil, out.Row)
		require.NoError(t, err)
		assert.Equal(t, wantKey, out.Key)
		assert.Equal(t, fluss.BucketForKey(wantKey, 8), out.Bucket, "bucket from the key, not the Kafka partition")

		// A tombstone deletes by the same key, into the same bucket.
		del, err := convert(t, r, Record{Key: key, Partition: 0})
		require.NoError(t, err)
		assert.Equal(t, fluss.WriteDelete, del.Op)
		assertRow(t, fluss.Row{{I: int64(id)}, str("eu"), null, null}, del.Row)
		assert.Equal(t, wantKey, del.Key)
		assert.Equal(t, out.Bucket, del.Bucket)
	}

	_, err = convert(t, r, Record{Value: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "record has no key, but the route reads the key as JSON")
	_, err = convert(t, r, Record{Key: []byte(`{"id": 1}`), Value: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `column "region": primary key or partition column has no value`)
	_, err = convert(t, r, Record{Key: []byte(`{"id": 1}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `column "region": tombstone: primary key or partition column has no value`)
	_, err = convert(t, r, Record{Key: []byte(`{"id": null, "region": "x"}`), Value: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `column "id": key: null for a NOT NULL column`)
	_, err = convert(t, r, Record{Key: []byte(`not json`), Value: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "key: invalid JSON")

	// tombstone: reject
	rej := bind(t, RouteSpec{Topic: "users", Key: KeySpec{Format: KeyJSON}, Tombstone: TombstoneReject}, info)
	_, err = convert(t, rej, Record{Key: []byte(`{"id": 1, "region": "x"}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rejected by the route's tombstone policy")
}

func TestConvertStringKeyIntoTypedPK(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt().NonNull()), col("v", fluss.String())}, []string{"id"}, buckets(5))
	r := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyString, Column: "id"}}, info)
	out, err := convert(t, r, Record{Key: []byte("42"), Value: []byte(`{"v": "x"}`)})
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 42}, str("x")}, out.Row)
	assert.Equal(t, fluss.BucketForKey(out.Key, 5), out.Bucket)

	_, err = convert(t, r, Record{Key: []byte("abc"), Value: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `column "id": key: not an integer: "abc"`)
	_, err = convert(t, r, Record{Value: []byte(`{"v": "x"}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `column "id": primary key or partition column has no value`)
}

func TestConvertMetadata(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{
		col("v", fluss.Int()),
		col("k", fluss.String()),
		col("h", fluss.String()),
		col("ts", fluss.TimestampLTZ(0)),
		col("p", fluss.BigInt()),
		col("o", fluss.BigInt()),
		col("topic", fluss.String()),
	}, nil)
	r := bind(t, RouteSpec{Pattern: "t.*", Metadata: MetadataSpec{Key: "k", Headers: "h", Timestamp: "ts", Partition: "p", Offset: "o", Topic: "topic"}}, info)
	rec := Record{
		Topic: "t-1", Partition: 2, Offset: 17, Timestamp: 1_700_000_000_123,
		Key: []byte("key"), Value: []byte(`{"v": 1, "k": "ignored"}`),
		Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "q\"", Value: []byte("x\n\xff")}, {Key: "n"}, {Key: "a", Value: []byte("2")}},
	}
	out, err := convert(t, r, rec)
	require.NoError(t, err)
	assertRow(t, fluss.Row{
		{I: 1}, str("key"), str(`{"a":"1","q\"":"x\n` + "\ufffd" + `","n":null,"a":"2"}`),
		{I: 1_700_000_000_000}, {I: 2}, {I: 17}, str("t-1"),
	}, out.Row)
	assert.Equal(t, int32(2), out.Bucket)

	rec.Key, rec.Headers = nil, nil
	out, err = convert(t, r, rec)
	require.NoError(t, err)
	assert.True(t, out.Row[1].Null, "nil key is null")
	assert.Equal(t, "{}", string(out.Row[2].B))

	rec.Key = []byte{0xff}
	_, err = convert(t, r, rec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "key is not valid UTF-8")

	// BIGINT timestamps and INT partitions.
	info2 := tableInfo("db", "t2", []fluss.Column{col("ts", fluss.BigInt()), col("p", fluss.Int())}, nil)
	r2 := bind(t, RouteSpec{Topic: "x", Value: ValueSpec{Format: ValueRaw, Column: "v"}, Metadata: MetadataSpec{Timestamp: "ts", Partition: "p"}},
		tableInfo("db", "t2", append(info2.Descriptor.Schema.Columns, col("v", fluss.Bytes())), nil))
	out, err = convert(t, r2, Record{Timestamp: 1_700_000_000_123, Partition: 9, Value: []byte("x")})
	require.NoError(t, err)
	assertRow(t, fluss.Row{{I: 1_700_000_000_123}, {I: 9}, {B: []byte("x")}}, out.Row)
	assert.Equal(t, int32(1), out.Bucket, "partition 9 modulo 4 buckets")
}

func TestConvertPartitions(t *testing.T) {
	t.Parallel()
	ts := ms("2024-03-05T23:30:00Z")
	tests := []struct {
		name     string
		cols     []fluss.Column
		keys     []string
		spec     RouteSpec
		value    string
		want     string
		reason   string
		rowCheck func(t *testing.T, row fluss.Row)
	}{
		{"day from timestamp", []fluss.Column{col("v", fluss.Int()), col("dt", fluss.String())}, []string{"dt"},
			RouteSpec{Partition: []PartitionSpec{{Column: "dt", Format: "yyyyMMdd"}}}, `{"v": 1, "dt": "ignored"}`, "20240305", "",
			func(t *testing.T, row fluss.Row) { assert.Equal(t, "20240305", string(row[1].B)) }},
		{"hour in a zone", []fluss.Column{col("v", fluss.Int()), col("dt", fluss.String())}, []string{"dt"},
			RouteSpec{Partition: []PartitionSpec{{Column: "dt", Format: "yyyyMMddHH", TimeZone: "Asia/Tokyo"}}}, `{"v": 1}`, "2024030608", "", nil},
		{"quarter and separators", []fluss.Column{col("dt", fluss.String())}, []string{"dt"},
			RouteSpec{Partition: []PartitionSpec{{Column: "dt", Format: "yyyy_Q-MM-dd-HH-mm-ss"}}}, `{}`, "2024_1-03-05-23-30-00", "", nil},
		{"string field", []fluss.Column{col("v", fluss.Int()), col("region", fluss.String())}, []string{"region"},
			RouteSpec{}, `{"v": 1, "region": "eu-west_1"}`, "eu-west_1", "", nil},
		{"two keys", []fluss.Column{col("region", fluss.String()), col("dt", fluss.String())}, []string{"region", "dt"},
			RouteSpec{Partition: []PartitionSpec{{Column: "dt", Format: "yyyy"}}}, `{"region": "eu"}`, "eu$2024", "", nil},
		{"int field", []fluss.Column{col("y", fluss.Int())}, []string{"y"}, RouteSpec{}, `{"y": -2024}`, "-2024", "", nil},
		{"bool field", []fluss.Column{col("b", fluss.Boolean())}, []string{"b"}, RouteSpec{}, `{"b": true}`, "true", "", nil},
		{"bytes field", []fluss.Column{col("b", fluss.Bytes())}, []string{"b"}, RouteSpec{}, `{"b": "AQ/+"}`, "010ffe", "", nil},
		{"date field", []fluss.Column{col("d", fluss.Date())}, []string{"d"}, RouteSpec{}, `{"d": "2024-01-02"}`, "2024-01-02", "", nil},
		{"time field", []fluss.Column{col("t", fluss.Time(3))}, []string{"t"}, RouteSpec{}, `{"t": "01:02:03.004"}`, "01-02-03_004", "", nil},
		{"timestamp field", []fluss.Column{col("t", fluss.Timestamp(6))}, []string{"t"}, RouteSpec{}, `{"t": "2024-01-02T03:04:05.120300Z"}`, "2024-01-02-03-04-05_1203", "", nil},
		{"timestamp field whole second", []fluss.Column{col("t", fluss.TimestampLTZ(3))}, []string{"t"}, RouteSpec{}, `{"t": "2024-01-02T03:04:05Z"}`, "2024-01-02-03-04-05_", "", nil},
		{"null partition", []fluss.Column{col("region", fluss.String()), col("v", fluss.String())}, []string{"region"}, RouteSpec{}, `{"v": "x"}`, "", `column "region": primary key or partition column has no value`, nil},
		{"explicit null partition", []fluss.Column{col("region", fluss.String())}, []string{"region"}, RouteSpec{}, `{"region": null}`, "", `column "region": primary key or partition column is null`, nil},
		{"invalid partition value", []fluss.Column{col("region", fluss.String())}, []string{"region"}, RouteSpec{}, `{"region": "a b"}`, "", `partition value "a b" is not`, nil},
		{"reserved partition prefix", []fluss.Column{col("region", fluss.String())}, []string{"region"}, RouteSpec{}, `{"region": "__x"}`, "", `partition value "__x" is not`, nil},
		{"empty partition value", []fluss.Column{col("region", fluss.String())}, []string{"region"}, RouteSpec{}, `{"region": ""}`, "", "partition value", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			info := tableInfo("db", "p", tc.cols, nil, partitionedBy(tc.keys...))
			spec := tc.spec
			spec.Topic = "t"
			r := bind(t, spec, info)
			require.True(t, r.Converter().Partitioned())
			out, err := convert(t, r, Record{Timestamp: ts, Value: []byte(tc.value)})
			if tc.reason != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Partition)
			if tc.rowCheck != nil {
				tc.rowCheck(t, out.Row)
			}
		})
	}
}

func TestConvertPartitionedPrimaryKey(t *testing.T) {
	t.Parallel()
	// PK (id, dt), partitioned by dt: the key bytes hold only id.
	info := tableInfo("db", "pp", []fluss.Column{
		col("id", fluss.BigInt().NonNull()), col("v", fluss.String()), col("dt", fluss.String().NonNull()),
	}, []string{"id", "dt"}, partitionedBy("dt"), buckets(16))
	r := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyString, Column: "id"},
		Partition: []PartitionSpec{{Column: "dt", Format: "yyyyMMdd"}}}, info)
	ts := ms("2024-12-31T10:00:00Z")
	up, err := convert(t, r, Record{Key: []byte("7"), Value: []byte(`{"v": "x"}`), Timestamp: ts})
	require.NoError(t, err)
	del, err := convert(t, r, Record{Key: []byte("7"), Timestamp: ts})
	require.NoError(t, err)
	enc, err := fluss.NewKeyEncoder(&info.Descriptor.Schema, []string{"id"}, "")
	require.NoError(t, err)
	want, err := enc.Encode(nil, up.Row)
	require.NoError(t, err)
	for _, out := range []*Converted{up, del} {
		assert.Equal(t, "20241231", out.Partition)
		assert.Equal(t, want, out.Key)
		assert.Equal(t, fluss.BucketForKey(want, 16), out.Bucket)
	}
	assert.Equal(t, fluss.WriteUpsert, up.Op)
	assert.Equal(t, fluss.WriteDelete, del.Op)
}

func TestBucketChoice(t *testing.T) {
	t.Parallel()
	cols := []fluss.Column{col("id", fluss.Int()), col("v", fluss.String())}

	// Log table without a bucket key: Kafka partition modulo buckets.
	plain := bind(t, RouteSpec{Topic: "t"}, tableInfo("db", "plain", cols, nil, buckets(3)))
	for p, want := range map[int32]int32{0: 0, 1: 1, 2: 2, 3: 0, 7: 1} {
		out, err := convert(t, plain, Record{Partition: p, Value: []byte(`{"id": 1}`)})
		require.NoError(t, err)
		assert.Equal(t, want, out.Bucket, "partition %d", p)
	}
	_, err := convert(t, plain, Record{Partition: -1, Value: []byte(`{"id": 1}`)})
	require.Error(t, err)

	// Log table with a bucket key: the client's partition is ignored.
	info := tableInfo("db", "keyed", cols, nil, buckets(6), bucketKeys("id"))
	keyed := bind(t, RouteSpec{Topic: "t"}, info)
	enc, err := fluss.NewKeyEncoder(&info.Descriptor.Schema, []string{"id"}, "")
	require.NoError(t, err)
	for id := range 50 {
		var first int32
		for p := int32(0); p < 3; p++ {
			out, err := convert(t, keyed, Record{Partition: p, Value: []byte(`{"id": ` + itoa(id) + `}`)})
			require.NoError(t, err)
			want, err := enc.Encode(nil, out.Row)
			require.NoError(t, err)
			assert.Equal(t, fluss.BucketForKey(want, 6), out.Bucket)
			if p == 0 {
				first = out.Bucket
			}
			assert.Equal(t, first, out.Bucket, "same key, same bucket, whatever the partition")
		}
	}
	_, err = convert(t, keyed, Record{Value: []byte(`{"v": "no id"}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "encode bucket key")
}

// fakeKeying proves Bind uses the injected functions.
func TestWithKeying(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("id", fluss.String().NonNull())}, []string{"id"}, buckets(10))
	rs, err := NewRoutes([]RouteSpec{{Topic: "t", Table: info.Path, Key: KeySpec{Format: KeyString, Column: "id"}}})
	require.NoError(t, err)
	var gotCols []string
	bound, err := rs.Bind(map[fluss.TablePath]*fluss.TableInfo{info.Path: info}, WithKeying(Keying{
		NewKeyEncoder: func(_ *fluss.Schema, cols []string, _ string) (KeyEncoder, error) {
			gotCols = cols
			return keyEncoderFunc(func(dst []byte, row fluss.Row) ([]byte, error) { return append(dst, row[0].B...), nil }), nil
		},
		BucketForKey: func(k []byte, n int) int32 { return int32(len(k) % n) },
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{"id"}, gotCols)
	r, _ := bound.Resolve("t")
	out, err := convert(t, r, Record{Key: []byte("abc"), Value: []byte(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []byte("abc"), out.Key)
	assert.Equal(t, int32(3), out.Bucket)
}

type keyEncoderFunc func(dst []byte, row fluss.Row) ([]byte, error)

func (f keyEncoderFunc) Encode(dst []byte, row fluss.Row) ([]byte, error) { return f(dst, row) }

func TestDLQ(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("v", fluss.Int())}, nil)
	r := bind(t, RouteSpec{Name: "orders", Topic: "t", Errors: ErrorSpec{Mode: ErrorsDLQ, DLQTable: dlqInfo().Path}}, info, dlqInfo())
	rec := Record{Topic: "t", Partition: 4, Offset: 99, Index: 1, Timestamp: 1234, Key: []byte("k"), Value: []byte(`{"v": "x"}`),
		Headers: []Header{{Key: "h", Value: []byte("1")}}}
	out, err := convert(t, r, rec)
	require.Error(t, err)
	var re *RecordError
	require.ErrorAs(t, err, &re)
	dout := &Converted{}
	r.DLQ().Build(&rec, r.Name(), re.Message(), dout)
	assert.Equal(t, fluss.WriteAppend, dout.Op)
	assert.Equal(t, int32(1), dout.Bucket, "partition 4 modulo 3 buckets")
	assertRow(t, fluss.Row{
		str("t"), {I: 4}, {I: 99}, {I: 1234}, str("k"), str(`{"v": "x"}`), str(`{"h":"1"}`), str("orders"),
		str(`column "v": value: not an integer: "x"`), null,
	}, dout.Row)
	_ = out

	// A tombstone without key.
	r.DLQ().Build(&Record{Topic: "t"}, "orders", "why", dout)
	assert.True(t, dout.Row[4].Null)
	assert.True(t, dout.Row[5].Null)
}

func TestNewDLQErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		info *fluss.TableInfo
		want string
	}{
		{"pk", tableInfo("o", "d", []fluss.Column{col("kafka_value", fluss.Bytes()), col("reason", fluss.String().NonNull())}, []string{"reason"}), "must be a log table"},
		{"no reason", tableInfo("o", "d", []fluss.Column{col("kafka_value", fluss.Bytes())}, nil), `column "reason" is required`},
		{"no value", tableInfo("o", "d", []fluss.Column{col("reason", fluss.String())}, nil), `column "kafka_value" is required`},
		{"bad type", tableInfo("o", "d", []fluss.Column{col("kafka_value", fluss.String()), col("reason", fluss.String())}, nil), `column "kafka_value" has type STRING`},
		{"not null value", tableInfo("o", "d", []fluss.Column{col("kafka_value", fluss.Bytes().NonNull()), col("reason", fluss.String())}, nil), `column "kafka_value" must be nullable`},
		{"other not null", tableInfo("o", "d", []fluss.Column{col("kafka_value", fluss.Bytes()), col("reason", fluss.String()), col("x", fluss.Int().NonNull())}, nil), `column "x" is not a dead-letter column and is NOT NULL`},
		{"partitioned", tableInfo("o", "d", []fluss.Column{col("kafka_value", fluss.Bytes()), col("reason", fluss.String())}, nil, partitionedBy("reason")), "not implemented"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewDLQ(tc.info)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestConvertedReuse(t *testing.T) {
	t.Parallel()
	info := tableInfo("db", "t", []fluss.Column{col("a", fluss.String()), col("b", fluss.Int())}, nil)
	r := bind(t, RouteSpec{Topic: "t"}, info)
	out := &Converted{}
	require.NoError(t, r.Converter().Convert(&Record{Value: []byte(`{"a": "x\u00e9", "b": 1}`)}, out))
	assertRow(t, fluss.Row{str("xé"), {I: 1}}, out.Row)
	// Fields missing in the next record must not leak from the previous.
	require.NoError(t, r.Converter().Convert(&Record{Value: []byte(`{"b": 2}`)}, out))
	assertRow(t, fluss.Row{null, {I: 2}}, out.Row)
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRebucketForAPartitionsOwnCount: Fluss 1.0 partitions may have another
// bucket count than the table; Rebucket applies Convert's rule for it.
func TestRebucketForAPartitionsOwnCount(t *testing.T) {
	t.Parallel()
	keyed := tableInfo("db", "t", []fluss.Column{col("id", fluss.BigInt().NonNull()), col("v", fluss.String())}, []string{"id"}, buckets(5))
	r := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyString, Column: "id"}}, keyed)
	out, err := convert(t, r, Record{Key: []byte("42"), Value: []byte(`{"v": "x"}`)})
	require.NoError(t, err)
	for _, n := range []int{1, 3, 5, 7, 64} {
		r.Converter().Rebucket(out, 0, n)
		assert.Equal(t, fluss.BucketForKey(out.Key, n), out.Bucket, "%d buckets", n)
	}

	log := tableInfo("db", "l", []fluss.Column{col("v", fluss.String())}, nil, buckets(4))
	r = bind(t, RouteSpec{Topic: "l"}, log)
	out, err = convert(t, r, Record{Partition: 6, Value: []byte(`{"v": "x"}`)})
	require.NoError(t, err)
	assert.Equal(t, int32(2), out.Bucket, "6 mod 4")
	r.Converter().Rebucket(out, 6, 5)
	assert.Equal(t, int32(1), out.Bucket, "6 mod the partition's 5")
}
