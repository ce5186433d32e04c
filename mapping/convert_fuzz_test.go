package mapping

import (
	"testing"
	"unicode/utf8"

	"github.com/fluss-kafka/gateway/fluss"
)

// fuzzRoutes are routes over every scalar type, JSON key and value, nested
// paths, metadata and a partition, so the fuzzer reaches every converter.
func fuzzRoutes(t testing.TB) []*Route {
	cols := []fluss.Column{
		col("id", fluss.BigInt().NonNull()),
		col("b", fluss.Boolean()),
		col("i8", fluss.TinyInt()),
		col("i16", fluss.SmallInt()),
		col("i32", fluss.Int()),
		col("f", fluss.Float()),
		col("d", fluss.Double()),
		col("dec", fluss.Decimal(10, 3)),
		col("bigdec", fluss.Decimal(30, 5)),
		col("s", fluss.String()),
		col("c", fluss.Char(4)),
		col("bin", fluss.Binary(4)),
		col("by", fluss.Bytes()),
		col("dt", fluss.Date()),
		col("tm", fluss.Time(3)),
		col("ts", fluss.Timestamp(6)),
		col("ltz", fluss.TimestampLTZ(9)),
		col("nested", fluss.String()),
		col("h", fluss.String()),
		col("part", fluss.String().NonNull()),
	}
	pk := tableInfo("db", "pk", cols, []string{"id", "part"}, partitionedBy("part"), buckets(7))
	log := tableInfo("db", "log", cols, nil, partitionedBy("part"), buckets(3))
	specs := []RouteSpec{
		{Topic: "pk", Table: pk.Path, Key: KeySpec{Format: KeyJSON}, Value: ValueSpec{Paths: map[string]string{"nested": "x.y.z"}},
			Metadata: MetadataSpec{Headers: "h"}},
		{Topic: "log", Table: log.Path, Value: ValueSpec{UnknownFields: FieldReject, Paths: map[string]string{"nested": "$.x.y"}},
			Partition: []PartitionSpec{{Column: "part", Format: "yyyyMMddHH"}}},
	}
	rs, err := NewRoutes(specs)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := rs.Bind(map[fluss.TablePath]*fluss.TableInfo{pk.Path: pk, log.Path: log})
	if err != nil {
		t.Fatal(err)
	}
	return bound.All()
}

// fuzzSeeds are key/value pairs; the first converts on every fuzz route.
var fuzzSeeds = []struct{ key, value string }{
	{`{"id": 1, "part": "p1"}`, `{"id": 5, "b": true, "i8": 1, "i16": 2, "i32": 3, "f": 1.5, "d": 2.5e10, "dec": "1.2345", "bigdec": -123456789012345.678,
			"s": "h\u00e9\n", "c": "abcd", "bin": "AQID", "by": "", "dt": "2024-02-29", "tm": "23:59:59.999", "ts": "2024-01-02T03:04:05.123456Z",
			"ltz": 1700000000000, "x": {"y": {"z": [1, {"a": null}]}}}`},
	{`{"id": -9223372036854775808, "part": "a-b_c"}`, `{}`},
	{`{"id": 1, "part": "p"}`, ``},
	{`{"id": 1}`, `{"i8": 128}`},
	{`[]`, `{"s": "\ud83d\ude00\ud800"}`},
	{``, `{"x": {"y": "plain"}}`},
	{`{"id": "1", "part": "x"}`, `{"dec": 1e400, "ts": "2024-01-02 03:04:05+05:30", "dt": 19000}`},
	{`{"id": 1, "part": "x"}`, "{\"s\": \"\xff\"}"},
	{`{"id": 1, "part": "x"}`, `{"a": [[[[[[[[[[]]]]]]]]]], "b": nul}`},
}

func TestFuzzSeedConverts(t *testing.T) {
	t.Parallel()
	for _, r := range fuzzRoutes(t) {
		out := &Converted{}
		rec := &Record{Topic: r.Name(), Key: []byte(fuzzSeeds[0].key), Value: []byte(fuzzSeeds[0].value), Timestamp: 1_700_000_000_000}
		if err := r.Converter().Convert(rec, out); err != nil {
			t.Fatalf("route %s: %v", r.Name(), err)
		}
		if got := string(out.Row[r.Converter().Schema().ColumnIndex("nested")].B); got == "" {
			t.Fatalf("route %s: nested path not filled", r.Name())
		}
	}
}

func FuzzConvert(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s.key), []byte(s.value), int64(1_700_000_000_000), int32(1))
	}
	routes := fuzzRoutes(f)
	f.Fuzz(func(t *testing.T, key, value []byte, ts int64, partition int32) {
		if len(key) == 0 {
			key = nil
		}
		if len(value) == 0 {
			value = nil
		}
		for _, r := range routes {
			rec := &Record{Topic: r.Name(), Key: key, Value: value, Timestamp: ts, Partition: partition,
				Headers: []Header{{Key: "k", Value: value}}}
			out := &Converted{}
			err := r.Converter().Convert(rec, out)
			if err != nil {
				if _, ok := err.(*RecordError); !ok {
					t.Fatalf("error is %T, want *RecordError: %v", err, err)
				}
				continue
			}
			conv := r.Converter()
			if len(out.Row) != len(conv.Schema().Columns) {
				t.Fatalf("row has %d columns", len(out.Row))
			}
			if out.Bucket < 0 || int(out.Bucket) >= conv.NumBuckets() {
				t.Fatalf("bucket %d out of range", out.Bucket)
			}
			for i, d := range out.Row {
				typ := conv.Schema().Columns[i].Type
				if d.Null {
					if typ.NotNull && out.Op != fluss.WriteDelete {
						t.Fatalf("null in NOT NULL column %s", conv.Schema().Columns[i].Name)
					}
					continue
				}
				if (typ.Root == fluss.TypeString || typ.Root == fluss.TypeChar) && !utf8.Valid(d.B) {
					t.Fatalf("column %s holds invalid UTF-8", conv.Schema().Columns[i].Name)
				}
				if (typ.Root == fluss.TypeTimestamp || typ.Root == fluss.TypeTimestampLTZ) && (d.N < 0 || d.N >= 1e6) {
					t.Fatalf("nano of milli %d out of range", d.N)
				}
			}
			if conv.HasPrimaryKey() && len(out.Key) == 0 {
				t.Fatal("primary-key row without key bytes")
			}
			if out.Partition == "" {
				t.Fatal("partitioned row without partition name")
			}
		}
	})
}
