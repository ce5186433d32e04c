package mapping

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	logCols := []fluss.Column{
		col("id", fluss.BigInt()),
		col("name", fluss.String()),
		col("payload", fluss.Bytes()),
		col("ts", fluss.TimestampLTZ(3)),
	}
	logTable := tableInfo("db", "log", logCols, nil)
	pkTable := tableInfo("db", "pk", []fluss.Column{
		col("id", fluss.String().NonNull()),
		col("v", fluss.Int()),
	}, []string{"id"})
	partTable := tableInfo("db", "part", []fluss.Column{
		col("v", fluss.Int()),
		col("dt", fluss.String()),
	}, nil, partitionedBy("dt"))
	tests := []struct {
		name string
		spec RouteSpec
		info *fluss.TableInfo
		want []string // substrings; empty = valid
		is   error
	}{
		{"json log ok", RouteSpec{Topic: "t"}, logTable, nil, nil},
		{"metadata ok", RouteSpec{Topic: "t", Metadata: MetadataSpec{Timestamp: "ts", Key: "payload"}}, logTable, nil, nil},
		{"missing metadata column", RouteSpec{Name: "r", Topic: "t", Metadata: MetadataSpec{Offset: "off"}}, logTable,
			[]string{`route "r" (table db.log): column "off": named by metadata.offset, does not exist in the table`}, nil},
		{"metadata type", RouteSpec{Topic: "t", Metadata: MetadataSpec{Offset: "name"}}, logTable,
			[]string{`column "name": has type STRING, which metadata.offset cannot fill`}, nil},
		{"headers map", RouteSpec{Topic: "t", Metadata: MetadataSpec{Headers: "name", HeadersFormat: HeadersMap}}, logTable,
			[]string{`column "name": headers as a MAP column: not implemented`}, ErrNotImplemented},
		// A column named twice by the spec is refused by NewRoutes already
		// (TestNewRoutesErrors); Validate catches what only the table shows.
		{"key json claims a metadata column", RouteSpec{Topic: "t", Metadata: MetadataSpec{Key: "payload"}, Key: KeySpec{Format: KeyJSON, Paths: map[string]string{"payload": "p"}}}, logTable,
			[]string{`column "payload": filled by both metadata.key and the key`}, nil},
		{"raw into string", RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueRaw, Column: "name"}}, logTable,
			[]string{`column "name": has type STRING, which a raw value cannot fill`}, nil},
		{"string into bytes", RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueString, Column: "payload"}}, logTable,
			[]string{`column "payload": has type BYTES, which a string value cannot fill`}, nil},
		{"value path to unknown column", RouteSpec{Topic: "t", Value: ValueSpec{Paths: map[string]string{"nope": "a.b"}}}, logTable,
			[]string{`column "nope": named by value.columns, does not exist`}, nil},
		{"value path to metadata column", RouteSpec{Topic: "t", Metadata: MetadataSpec{Timestamp: "ts"}, Value: ValueSpec{Paths: map[string]string{"ts": "a"}}}, logTable,
			[]string{`column "ts": has a value path but is filled by metadata.timestamp`}, nil},
		{"log delete", RouteSpec{Topic: "t", Tombstone: TombstoneDelete}, logTable,
			[]string{"log tables cannot take deletes"}, nil},
		{"log json key without columns", RouteSpec{Topic: "t", Key: KeySpec{Format: KeyJSON}}, logTable,
			[]string{"key.format json on a log table needs key.columns"}, nil},
		{"pk from key ok", RouteSpec{Topic: "t", Key: KeySpec{Format: KeyString, Column: "id"}}, pkTable, nil, nil},
		{"pk from json key ok", RouteSpec{Topic: "t", Key: KeySpec{Format: KeyJSON}}, pkTable, nil, nil},
		{"pk not covered", RouteSpec{Name: "users", Topic: "t"}, pkTable,
			[]string{`route "users" (table db.pk): column "id": is a primary key column but is filled by the value`}, nil},
		{"raw key into string pk", RouteSpec{Topic: "t", Key: KeySpec{Format: KeyRaw, Column: "id"}}, pkTable,
			[]string{`column "id": has type STRING NOT NULL, which a raw key cannot fill`}, nil},
		{"raw value leaves NOT NULL empty", RouteSpec{Topic: "t", Key: KeySpec{Format: KeyRaw, Column: "k"}, Value: ValueSpec{Format: ValueRaw, Column: "p"}},
			tableInfo("db", "nn", []fluss.Column{col("k", fluss.Bytes()), col("p", fluss.Bytes()), col("x", fluss.Int().NonNull())}, nil),
			[]string{`column "x": is NOT NULL but nothing fills it`}, nil},
		{"partition from timestamp ok", RouteSpec{Topic: "t", Partition: []PartitionSpec{{Column: "dt", Format: "yyyyMMdd"}}}, partTable, nil, nil},
		{"partition from field ok", RouteSpec{Topic: "t"}, partTable, nil, nil},
		{"partition not a key", RouteSpec{Topic: "t", Partition: []PartitionSpec{{Column: "v", Format: "yyyy"}}}, partTable,
			[]string{`column "v": is listed under partition but is not a partition key`}, nil},
		{"partition time into int", RouteSpec{Topic: "t", Partition: []PartitionSpec{{Column: "dt", Format: "yyyy"}}},
			tableInfo("db", "p2", []fluss.Column{col("v", fluss.Int()), col("dt", fluss.Int())}, nil, partitionedBy("dt")),
			[]string{`column "dt": has type INTEGER, which a formatted timestamp cannot fill`}, nil},
		{"partition unfilled", RouteSpec{Topic: "t", Value: ValueSpec{Format: ValueRaw, Column: "p"}},
			tableInfo("db", "p3", []fluss.Column{col("p", fluss.Bytes()), col("dt", fluss.String())}, nil, partitionedBy("dt")),
			[]string{`column "dt": is a partition key but nothing fills it`}, nil},
		{"partition double", RouteSpec{Topic: "t"},
			tableInfo("db", "p4", []fluss.Column{col("v", fluss.Int()), col("dt", fluss.Double())}, nil, partitionedBy("dt")),
			[]string{`column "dt": partition key: DOUBLE partition columns: not implemented`}, ErrNotImplemented},
		{"array column from a JSON key", RouteSpec{Topic: "t", Key: KeySpec{Format: KeyJSON, Paths: map[string]string{"a": "a"}}},
			tableInfo("db", "arr", []fluss.Column{col("a", fluss.DataType{Root: fluss.TypeArray, Elem: &fluss.DataType{Root: fluss.TypeInt}})}, nil),
			[]string{`column "a": has type ARRAY<INTEGER>, which a JSON key cannot fill: not implemented`}, ErrNotImplemented},
		{"no buckets", RouteSpec{Topic: "t"}, tableInfo("db", "nb", logCols, nil, buckets(0)),
			[]string{"table info has no bucket count"}, nil},
		{"several problems", RouteSpec{Topic: "t", Metadata: MetadataSpec{Offset: "x", Partition: "y"}}, logTable,
			[]string{`column "x"`, `column "y"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := tc.spec
			spec.Table = tc.info.Path
			rs, err := NewRoutes([]RouteSpec{spec})
			require.NoError(t, err)
			err = Validate(rs.All()[0], tc.info)
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			var re *RouteError
			assert.True(t, errors.As(err, &re), "errors are *RouteError")
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// Data-lake tables key and bucket rows as the lake format says, exactly as
// fluss.NewTableKeying does for the Java client's rules.
func TestBindLakeTables(t *testing.T) {
	t.Parallel()
	cols := []fluss.Column{col("id", fluss.Int().NonNull()), col("name", fluss.String().NonNull()), col("v", fluss.Int())}
	tests := []struct {
		name    string
		lake    string
		version string
		bucket  []string
	}{
		{"paimon default bucket key", "paimon", "", nil},
		{"paimon v2 other bucket key", "paimon", "2", []string{"id"}},
		{"paimon v1 other bucket key", "paimon", "1", []string{"id"}},
		{"iceberg v2 single-column bucket key", "iceberg", "2", []string{"id"}},
		{"lance", "lance", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := tableInfo("db", "lake", cols, []string{"id", "name"}, buckets(16), bucketKeys(tt.bucket...))
			info.Descriptor.Properties[fluss.PropDataLakeFormat] = tt.lake
			if tt.version != "" {
				info.Descriptor.Properties[fluss.PropKvFormatVersion] = tt.version
			}
			conv := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyJSON}}, info)
			tk, err := fluss.NewTableKeying(&info.Descriptor)
			require.NoError(t, err)
			buckets := map[int32]bool{}
			for id := range 40 {
				key := `{"id": ` + itoa(id) + `, "name": "n` + itoa(id) + `"}`
				out, err := convert(t, conv, Record{Key: []byte(key), Value: []byte(`{"v": 1}`)})
				require.NoError(t, err)
				wantKey, err := tk.PrimaryKey.Encode(nil, out.Row)
				require.NoError(t, err)
				assert.Equal(t, wantKey, out.Key, "primary key bytes")
				bk, err := tk.BucketKey.Encode(nil, out.Row)
				require.NoError(t, err)
				want, err := tk.Bucket(bk, 16)
				require.NoError(t, err)
				assert.Equal(t, want, out.Bucket)
				buckets[out.Bucket] = true
			}
			assert.Greater(t, len(buckets), 4, "keys spread over buckets")
		})
	}

	// Iceberg keys have one column: a composite key it would use is refused
	// at bind time, naming the route, as the Java client refuses it.
	info := tableInfo("db", "ice", cols, []string{"id", "name"})
	info.Descriptor.Properties[fluss.PropDataLakeFormat] = "iceberg"
	rs, err := NewRoutes([]RouteSpec{{Topic: "t", Table: info.Path, Key: KeySpec{Format: KeyJSON}}})
	require.NoError(t, err)
	_, err = rs.Bind(map[fluss.TablePath]*fluss.TableInfo{info.Path: info})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `route "t" (table db.ice)`)
	assert.Contains(t, err.Error(), "exactly one key column")
}
