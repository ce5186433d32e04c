package fluss

import (
	"encoding/json"
	"regexp"
	"testing"
	"testing/quick"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// Golden strings from apache/fluss v0.9.1-incubating,
// fluss-common/src/test/java/org/apache/fluss/utils/json/DataTypeJsonSerdeTest.java
// (createObjects / expectedJsons: every type nullable, then NOT NULL).
func TestDataTypeJSONGolden(t *testing.T) {
	row := DataType{Root: TypeRow, Fields: []Field{
		{Name: "f0", Type: BigInt(), ID: -1},
		{Name: "f1", Type: Int().NonNull(), ID: 1},
		{Name: "f2", Type: String(), ID: 2},
	}}
	types := []struct {
		typ  DataType
		json string
	}{
		{Boolean(), `{"type":"BOOLEAN"}`},
		{TinyInt(), `{"type":"TINYINT"}`},
		{SmallInt(), `{"type":"SMALLINT"}`},
		{Int(), `{"type":"INTEGER"}`},
		{BigInt(), `{"type":"BIGINT"}`},
		{Float(), `{"type":"FLOAT"}`},
		{Double(), `{"type":"DOUBLE"}`},
		{Decimal(10, 0), `{"type":"DECIMAL","precision":10,"scale":0}`},
		{Decimal(15, 5), `{"type":"DECIMAL","precision":15,"scale":5}`},
		{Char(1), `{"type":"CHAR","length":1}`},
		{Char(5), `{"type":"CHAR","length":5}`},
		{String(), `{"type":"STRING"}`},
		{Binary(1), `{"type":"BINARY","length":1}`},
		{Binary(100), `{"type":"BINARY","length":100}`},
		{Bytes(), `{"type":"BYTES"}`},
		{Date(), `{"type":"DATE"}`},
		{Time(0), `{"type":"TIME_WITHOUT_TIME_ZONE","precision":0}`},
		{Time(3), `{"type":"TIME_WITHOUT_TIME_ZONE","precision":3}`},
		{Timestamp(6), `{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":6}`},
		{Timestamp(3), `{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":3}`},
		{TimestampLTZ(6), `{"type":"TIMESTAMP_WITH_LOCAL_TIME_ZONE","precision":6}`},
		{TimestampLTZ(3), `{"type":"TIMESTAMP_WITH_LOCAL_TIME_ZONE","precision":3}`},
		{DataType{Root: TypeArray, Elem: ptr(Int().NonNull())}, `{"type":"ARRAY","element_type":{"type":"INTEGER","nullable":false}}`},
		{DataType{Root: TypeMap, Key: ptr(BigInt().NonNull()), Value: ptr(Int().NonNull())},
			`{"type":"MAP","key_type":{"type":"BIGINT","nullable":false},"value_type":{"type":"INTEGER","nullable":false}}`},
		{row, `{"type":"ROW","fields":[{"name":"f0","field_type":{"type":"BIGINT"},"field_id":-1},{"name":"f1","field_type":{"type":"INTEGER","nullable":false},"field_id":1},{"name":"f2","field_type":{"type":"STRING"},"field_id":2}]}`},
	}
	notNull := regexp.MustCompile(`^\{"type":"([A-Z_]+)"`)
	for _, tt := range types {
		// nullable, then the NOT NULL variant ("nullable":false right after type)
		cases := []struct {
			typ  DataType
			json string
		}{
			{tt.typ, tt.json},
			{tt.typ.NonNull(), notNull.ReplaceAllString(tt.json, `{"type":"$1","nullable":false`)},
		}
		for _, c := range cases {
			t.Run(c.json, func(t *testing.T) {
				got, err := AppendDataTypeJSON(nil, c.typ)
				require.NoError(t, err)
				assert.Equal(t, c.json, string(got))
				back, err := ParseDataTypeJSON([]byte(c.json))
				require.NoError(t, err)
				assert.Equal(t, c.typ, back)
			})
		}
	}
}

// DataTypeJsonSerdeTest.testJsonLackOfFieldId: a ROW field without field_id
// reads as id -1.
func TestDataTypeJSONLackOfFieldID(t *testing.T) {
	in := `{"type":"ROW","nullable":false,"fields":[{"name":"f0","field_type":{"type":"BIGINT"}},{"name":"f1","field_type":{"type":"INTEGER","nullable":false},"field_id":1},{"name":"f2","field_type":{"type":"STRING"},"field_id":2}]}`
	got, err := ParseDataTypeJSON([]byte(in))
	require.NoError(t, err)
	assert.Equal(t, DataType{Root: TypeRow, NotNull: true, Fields: []Field{
		{Name: "f0", Type: BigInt(), ID: -1},
		{Name: "f1", Type: Int().NonNull(), ID: 1},
		{Name: "f2", Type: String(), ID: 2},
	}}, got)
}

// Schemas and expected strings of apache/fluss v0.9.1-incubating,
// fluss-common/src/test/java/org/apache/fluss/utils/json/SchemaJsonSerdeTest.java.
// The Go schemas are built as the Java test builds them (columns without ids;
// PK columns nullable), so the encoder must apply the builder's rules.
var (
	schema0 = Schema{Columns: []Column{
		{Name: "a", Type: Int(), Comment: "a is first column"},
		{Name: "b", Type: String(), Comment: "b is second column"},
		{Name: "c", Type: Char(10), Comment: "c is third column"},
	}, PrimaryKey: []string{"a", "c"}}
	schema1 = Schema{Columns: []Column{
		{Name: "a", Type: Int()},
		{Name: "b", Type: String(), Comment: "b is second column"},
		{Name: "c", Type: Timestamp(6), Comment: "c is third column"},
	}, PrimaryKey: []string{"a"}}
	schema3 = Schema{Columns: []Column{
		{Name: "a", Type: BigInt(), Comment: "a is first column"},
		{Name: "b", Type: String(), Comment: "b is second column"},
		{Name: "c", Type: Timestamp(6), Comment: "c is third column"},
	}}
	schema5 = Schema{Columns: []Column{
		{Name: "a", Type: Int(), Comment: "a is first column"},
		{Name: "b", Type: DataType{Root: TypeRow, Fields: []Field{
			{Name: "c", Type: Int(), Description: "a is first column", ID: 0},
			{Name: "d", Type: Int(), Description: "a is first column", ID: 1},
		}}, Comment: "b is second column"},
	}}
)

const (
	schemaJSON0       = `{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER","nullable":false},"comment":"a is first column","id":0},{"name":"b","data_type":{"type":"STRING"},"comment":"b is second column","id":1},{"name":"c","data_type":{"type":"CHAR","nullable":false,"length":10},"comment":"c is third column","id":2}],"primary_key":["a","c"],"highest_field_id":2}`
	schemaJSON1       = `{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER","nullable":false},"id":0},{"name":"b","data_type":{"type":"STRING"},"comment":"b is second column","id":1},{"name":"c","data_type":{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":6},"comment":"c is third column","id":2}],"primary_key":["a"],"highest_field_id":2}`
	schemaJSON3       = `{"version":1,"columns":[{"name":"a","data_type":{"type":"BIGINT"},"comment":"a is first column","id":0},{"name":"b","data_type":{"type":"STRING"},"comment":"b is second column","id":1},{"name":"c","data_type":{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":6},"comment":"c is third column","id":2}],"highest_field_id":2}`
	schemaJSON4       = `{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER","nullable":false},"comment":"a is first column","id":0},{"name":"b","data_type":{"type":"INTEGER"},"comment":"b is second column","id":1},{"name":"c","data_type":{"type":"CHAR","nullable":false,"length":10},"comment":"c is third column","id":2}],"primary_key":["a","c"],"auto_increment_column":["b"],"highest_field_id":2}`
	schemaJSON5       = `{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER"},"comment":"a is first column","id":0},{"name":"b","data_type":{"type":"ROW","fields":[{"name":"c","field_type":{"type":"INTEGER"},"description":"a is first column","field_id":2},{"name":"d","field_type":{"type":"INTEGER"},"description":"a is first column","field_id":3}]},"comment":"b is second column","id":1}],"highest_field_id":3}`
	schemaJSONWithAgg = `{"version":1,"columns":[{"name":"product_id","data_type":{"type":"BIGINT","nullable":false},"id":0},{"name":"total_sales","data_type":{"type":"BIGINT"},"agg_function":{"type":"sum"},"id":1},{"name":"max_price","data_type":{"type":"DECIMAL","precision":10,"scale":2},"agg_function":{"type":"max"},"id":2},{"name":"last_update_time","data_type":{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":6},"agg_function":{"type":"last_value_ignore_nulls"},"id":3},{"name":"tags","data_type":{"type":"STRING"},"agg_function":{"type":"listagg","parameters":{"delimiter":";"}},"id":4},{"name":"categories","data_type":{"type":"STRING"},"agg_function":{"type":"string_agg","parameters":{"delimiter":"|"}},"id":5},{"name":"labels","data_type":{"type":"STRING"},"agg_function":{"type":"listagg"},"id":6}],"primary_key":["product_id"],"highest_field_id":6}`
)

// normalized returns s as Fluss's Schema builder stores it: ids assigned,
// PK columns NOT NULL.
func normalized(s Schema) Schema {
	out := Schema{Columns: assignColumnIDs(s.Columns), PrimaryKey: s.PrimaryKey}
	for i, c := range out.Columns {
		for _, k := range s.PrimaryKey {
			if c.Name == k {
				out.Columns[i].Type.NotNull = true
			}
		}
	}
	return out
}

func TestSchemaJSONGolden(t *testing.T) {
	tests := []struct {
		name   string
		schema Schema
		json   string
	}{
		{"SCHEMA_0", schema0, schemaJSON0},
		{"SCHEMA_1", schema1, schemaJSON1},
		{"SCHEMA_2 (copy of 1)", schema1, schemaJSON1},
		{"SCHEMA_3", schema3, schemaJSON3},
		{"SCHEMA_5", schema5, schemaJSON5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendSchemaJSON(nil, &tt.schema)
			require.NoError(t, err)
			assert.Equal(t, tt.json, string(got))

			back, err := ParseSchemaJSON([]byte(tt.json))
			require.NoError(t, err)
			assert.Equal(t, normalized(tt.schema), back)

			// Re-encoding what was read keeps its ids and gives the same bytes.
			again, err := AppendSchemaJSON(nil, &back)
			require.NoError(t, err)
			assert.Equal(t, tt.json, string(again))
		})
	}
}

// SCHEMA_4 (auto-increment) and SCHEMA_WITH_AGG (aggregate functions) use
// features our Schema type does not model; reading them must still give
// the columns and primary key.
func TestSchemaJSONUnmodelledFeatures(t *testing.T) {
	s, err := ParseSchemaJSON([]byte(schemaJSON4))
	require.NoError(t, err)
	assert.Equal(t, normalized(Schema{Columns: []Column{
		{Name: "a", Type: Int(), Comment: "a is first column"},
		{Name: "b", Type: Int(), Comment: "b is second column"},
		{Name: "c", Type: Char(10), Comment: "c is third column"},
	}, PrimaryKey: []string{"a", "c"}}), s)

	s, err = ParseSchemaJSON([]byte(schemaJSONWithAgg))
	require.NoError(t, err)
	require.Len(t, s.Columns, 7)
	assert.Equal(t, []string{"product_id"}, s.PrimaryKey)
	assert.Equal(t, Decimal(10, 2), s.Columns[2].Type)
	assert.Equal(t, int32(6), s.Columns[6].ID)
}

// SchemaJsonSerdeTest.testCompatibilityFromJsonLackOfColumnId: columns
// without ids get their positions.
func TestSchemaJSONLackOfColumnID(t *testing.T) {
	tests := []struct {
		json string
		want Schema
	}{
		{`{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER","nullable":false},"comment":"a is first column"},{"name":"b","data_type":{"type":"STRING"},"comment":"b is second column"},{"name":"c","data_type":{"type":"CHAR","nullable":false,"length":10},"comment":"c is third column"}],"primary_key":["a","c"]}`, schema0},
		{`{"version":1,"columns":[{"name":"a","data_type":{"type":"INTEGER","nullable":false}},{"name":"b","data_type":{"type":"STRING"},"comment":"b is second column"},{"name":"c","data_type":{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":6},"comment":"c is third column"}],"primary_key":["a"]}`, schema1},
		{`{"version":1,"columns":[{"name":"a","data_type":{"type":"BIGINT"},"comment":"a is first column"},{"name":"b","data_type":{"type":"STRING"},"comment":"b is second column"},{"name":"c","data_type":{"type":"TIMESTAMP_WITHOUT_TIME_ZONE","precision":6},"comment":"c is third column"}]}`, schema3},
	}
	for _, tt := range tests {
		got, err := ParseSchemaJSON([]byte(tt.json))
		require.NoError(t, err)
		assert.Equal(t, normalized(tt.want), got)
	}
}

// Descriptors and expected strings of apache/fluss v0.9.1-incubating,
// fluss-common/src/test/java/org/apache/fluss/utils/json/TableDescriptorJsonSerdeTest.java.
// Java writes properties in HashMap order, we write them sorted, so the
// golden's two property objects are compared after sorting their keys; every
// other byte is compared as is.
func TestTableJSONGolden(t *testing.T) {
	tests := []struct {
		name   string
		desc   TableDescriptor
		golden string
		parsed TableDescriptor // what ParseTableJSON(golden) returns
	}{
		{
			name: "table 0",
			desc: TableDescriptor{
				Schema: schema0, Comment: "first table", PartitionKeys: []string{"c"},
				BucketCount: 16, BucketKeys: []string{"a"},
				Properties:       map[string]string{"option-1": "100", "option-2": "200"},
				CustomProperties: map[string]string{"custom-1": `"value-1"`},
			},
			golden: `{"version":1,"schema":` + schemaJSON0 + `,"comment":"first table","partition_key":["c"],"bucket_key":["a"],"bucket_count":16,"properties":{"option-2":"200","option-1":"100"},"custom_properties":{"custom-1":"\"value-1\""}}`,
		},
		{
			name: "table 1",
			desc: TableDescriptor{
				Schema: schema1, BucketCount: 32,
				Properties: map[string]string{"option-3": "300", "option-4": "400",
					PropLogFormat: "INDEXED", PropKvFormat: "INDEXED"},
			},
			golden: `{"version":1,"schema":` + schemaJSON1 + `,"partition_key":[],"bucket_key":["a"],"bucket_count":32,"properties":{"option-3":"300","option-4":"400","table.log.format":"INDEXED","table.kv.format":"INDEXED"},"custom_properties":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendTableJSON(nil, &tt.desc)
			require.NoError(t, err)
			assert.Equal(t, sortPropertyObjects(t, tt.golden), string(got))

			back, err := ParseTableJSON([]byte(tt.golden))
			require.NoError(t, err)
			want := tt.desc
			want.Schema = normalized(tt.desc.Schema)
			want.BucketKeys = []string{"a"}
			if want.PartitionKeys == nil {
				want.PartitionKeys = []string{}
			}
			if want.CustomProperties == nil {
				want.CustomProperties = map[string]string{}
			}
			assert.Equal(t, want, back)
		})
	}
}

// sortPropertyObjects rewrites the flat "properties" and "custom_properties"
// objects of a table JSON with their keys sorted.
func sortPropertyObjects(t *testing.T, s string) string {
	re := regexp.MustCompile(`"(custom_)?properties":(\{[^{}]*\})`)
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		var props map[string]string
		require.NoError(t, json.Unmarshal([]byte(sub[2]), &props))
		return `"` + sub[1] + `properties":` + string(appendJSONMap(nil, props))
	})
}

func TestTableJSONDistribution(t *testing.T) {
	logSchema := Schema{Columns: []Column{{Name: "a", Type: Int()}, {Name: "p", Type: String()}}}
	pkSchema := Schema{Columns: []Column{{Name: "a", Type: Int()}, {Name: "p", Type: String()}}, PrimaryKey: []string{"a", "p"}}
	tests := []struct {
		name string
		desc TableDescriptor
		want string // the part after "partition_key"
	}{
		{"log, no distribution", TableDescriptor{Schema: logSchema}, `"partition_key":[],"properties":{},`},
		{"log, bucket count only", TableDescriptor{Schema: logSchema, BucketCount: 3}, `"partition_key":[],"bucket_key":[],"bucket_count":3,"properties":{},`},
		{"log, bucket key only", TableDescriptor{Schema: logSchema, BucketKeys: []string{"a"}}, `"partition_key":[],"bucket_key":["a"],"properties":{},`},
		{"pk, default bucket key minus partition keys", TableDescriptor{Schema: pkSchema, PartitionKeys: []string{"p"}},
			`"partition_key":["p"],"bucket_key":["a"],"properties":{},`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendTableJSON(nil, &tt.desc)
			require.NoError(t, err)
			assert.Contains(t, string(got), tt.want)
			_, err = ParseTableJSON(got)
			require.NoError(t, err)
		})
	}
}

func TestParseTableJSONRequiredKeys(t *testing.T) {
	base := `"schema":` + schemaJSON3
	tests := []struct {
		name string
		json string
	}{
		{"no schema", `{"version":1,"partition_key":[],"properties":{},"custom_properties":{}}`},
		{"no partition_key", `{"version":1,` + base + `,"properties":{},"custom_properties":{}}`},
		{"no properties", `{"version":1,` + base + `,"partition_key":[],"custom_properties":{}}`},
		{"no custom_properties", `{"version":1,` + base + `,"partition_key":[],"properties":{}}`},
		{"bucket_count without bucket_key", `{"version":1,` + base + `,"partition_key":[],"bucket_count":3,"properties":{},"custom_properties":{}}`},
		{"unknown type", `{"version":1,"schema":{"columns":[{"name":"a","data_type":{"type":"VARCHAR"}}]},"partition_key":[],"properties":{},"custom_properties":{}}`},
		{"decimal without scale", `{"version":1,"schema":{"columns":[{"name":"a","data_type":{"type":"DECIMAL","precision":3}}]},"partition_key":[],"properties":{},"custom_properties":{}}`},
		{"not json", `{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTableJSON([]byte(tt.json))
			require.Error(t, err)
		})
	}
}

func TestAppendSchemaJSONErrors(t *testing.T) {
	_, err := AppendSchemaJSON(nil, &Schema{Columns: []Column{{Name: "a", Type: Int()}}, PrimaryKey: []string{"x"}})
	require.Error(t, err)
	_, err = AppendSchemaJSON(nil, &Schema{Columns: []Column{{Name: "a", Type: DataType{}}}})
	require.Error(t, err)
	_, err = AppendSchemaJSON(nil, &Schema{Columns: []Column{{Name: "a", Type: DataType{Root: TypeArray}}}})
	require.Error(t, err)
}

// Jackson's default escaping; cross-checked against encoding/json decoding.
func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001F` + "\x7f" + `"`},
		{"</script>&é€", `"</script>&é€"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, string(appendJSONString(nil, tt.in)))
	}
	roundTrip := func(s string) bool {
		if !utf8.ValidString(s) {
			return true
		}
		var back string
		return json.Unmarshal(appendJSONString(nil, s), &back) == nil && back == s
	}
	require.NoError(t, quick.Check(roundTrip, nil))
}

func TestColumnIDAssignment(t *testing.T) {
	nested := DataType{Root: TypeArray, Elem: &DataType{Root: TypeRow, Fields: []Field{
		{Name: "x", Type: Int()},
		{Name: "y", Type: DataType{Root: TypeRow, Fields: []Field{{Name: "z", Type: Int()}}}},
	}}}
	cols := []Column{{Name: "a", Type: nested}, {Name: "b", Type: Int()}}
	require.False(t, columnIDsUsable(cols))
	got := assignColumnIDs(cols)
	assert.Equal(t, int32(0), got[0].ID)
	assert.Equal(t, int32(1), got[0].Type.Elem.Fields[0].ID)
	assert.Equal(t, int32(2), got[0].Type.Elem.Fields[1].ID)
	assert.Equal(t, int32(3), got[0].Type.Elem.Fields[1].Type.Fields[0].ID)
	assert.Equal(t, int32(4), got[1].ID)
	assert.Equal(t, int32(0), cols[0].Type.Elem.Fields[1].ID, "input not modified")
	assert.True(t, columnIDsUsable(got))
	assert.Equal(t, int32(3), highestFieldID(&got[0].Type))

	js, err := AppendSchemaJSON(nil, &Schema{Columns: cols})
	require.NoError(t, err)
	assert.Contains(t, string(js), `"highest_field_id":4}`)
}

// GetTableInfo's table_json comes from the network: parsing never panics,
// and whatever parses can be written again and parsed back.
func FuzzParseTableJSON(f *testing.F) {
	f.Add([]byte(`{"version":1,"schema":` + schemaJSON0 + `,"comment":"first table","partition_key":["c"],"bucket_key":["a"],"bucket_count":16,"properties":{"option-2":"200"},"custom_properties":{}}`))
	f.Add([]byte(`{"version":1,"schema":` + schemaJSON5 + `,"partition_key":[],"properties":{},"custom_properties":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTableJSON(data)
		if err != nil {
			return
		}
		out, err := AppendTableJSON(nil, &d)
		if err != nil {
			return // e.g. a primary key naming no column
		}
		if _, err := ParseTableJSON(out); err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
	})
}
