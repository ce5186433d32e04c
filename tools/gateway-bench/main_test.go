package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"
	"gopkg.in/yaml.v3"

	"github.com/fluss-kafka/gateway/fluss"
)

func TestExpectedOffsets(t *testing.T) {
	tests := []struct {
		name string
		w    workload
		ids  []int64
		want int64
	}{
		{"log table counts records", workloadJSON, []int64{1, 1, 2}, 3},
		{"raw counts records", workloadRaw, []int64{5, 5}, 2},
		{"first upsert of a key is one change, later ones two", workloadUpsert, []int64{1, 2, 1, 3, 1}, 7},
		{"no records", workloadUpsert, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.w.expectedOffsets(tt.ids))
		})
	}
}

func TestExpectedSplitsRecordsOverTables(t *testing.T) {
	gen := newGenerator(10, 0)
	pr := &plannedRun{runSpec: runSpec{workload: workloadJSON}, gwTables: make([]*fluss.TableInfo, 4)}
	assert.Equal(t, []int64{3, 3, 2, 2}, expected(pr, gen, 10))

	gen.keySpace = 3 // ids 0 1 2 0 1 2 0: 3 inserts, 4 updates
	pr = &plannedRun{runSpec: runSpec{workload: workloadUpsert}, gwTables: make([]*fluss.TableInfo, 1)}
	assert.Equal(t, []int64{3 + 2*4}, expected(pr, gen, 7))
}

func TestRoundsOption(t *testing.T) {
	o, err := parseOptions([]string{"-bootstrap", "127.0.0.1:1", "-runs", "json/500/none", "-rounds", "3"})
	require.NoError(t, err)
	assert.Equal(t, 3, o.rounds)
	_, err = parseOptions([]string{"-bootstrap", "127.0.0.1:1", "-runs", "upsert/1/none", "-rounds", "2"})
	assert.ErrorContains(t, err, "upsert", "a second upsert round's end offsets are not counted")
	_, err = parseOptions([]string{"-bootstrap", "127.0.0.1:1", "-rounds", "0"})
	assert.Error(t, err)

	r := &runResult{spec: runSpec{workload: workloadJSON, topics: 500, codec: "none"}, round: 1}
	assert.Equal(t, "json/500/none", r.label())
	r.round = 2
	assert.Equal(t, "json/500/none#2", r.label())
}

func TestParseRuns(t *testing.T) {
	runs, err := parseRuns("json/1/none, upsert/2/zstd,avro/1/lz4")
	require.NoError(t, err)
	assert.Equal(t, []runSpec{{workloadJSON, 1, "none"}, {workloadUpsert, 2, "zstd"}, {workloadAvro, 1, "lz4"}}, runs)
	for _, bad := range []string{"json/1", "xml/1/none", "json/0/none", "json/1/brotli", "json/x/lz4"} {
		_, err := parseRuns(bad)
		assert.Error(t, err, bad)
	}
}

func TestGeneratorValues(t *testing.T) {
	gen := newGenerator(110, 0)
	for _, k := range []int64{0, 1, 99_999} {
		v := gen.value(nil, k)
		var obj map[string]any
		require.NoError(t, json.Unmarshal(v, &obj), string(v))
		assert.Len(t, obj, 6)
		assert.InDelta(t, 200, len(v), 25, string(v))
		assert.Equal(t, float64(k), obj["id"])
		assert.Equal(t, strconv.FormatInt(k, 10), string(gen.key(nil, k)))

		row, _ := gen.row(workloadJSON, make(fluss.Row, 6), nil, k)
		assert.Equal(t, k, row[0].I)
		assert.Equal(t, obj["payload"], string(row[5].B))
		assert.Equal(t, obj["event"], string(row[2].B))

		raw, _ := gen.row(workloadRaw, make(fluss.Row, 6), nil, k)
		require.Len(t, raw, 1)
		assert.Equal(t, v, raw[0].B)
	}
	gen.keySpace = 10
	assert.Equal(t, int64(3), gen.id(13))
}

func TestGatewayYAMLIsValidYAMLWithRoutes(t *testing.T) {
	routes := workloadJSON.route("a", fluss.TablePath{Database: "d", Table: "a"}) +
		workloadUpsert.route("b", fluss.TablePath{Database: "d", Table: "b"}) +
		workloadRaw.route("c", fluss.TablePath{Database: "d", Table: "c"})
	out := gatewayYAML("127.0.0.1:9123", 1000, 1001, writerSettings{Linger: "20ms", BatchSize: "1024"}, routes)
	var cfg struct {
		Listeners []struct{ Bind, Advertised string }
		Writer    map[string]string
		Logging   struct{ Level string }
		Routes    []struct {
			Topic, Table string
			Key          map[string]string
			Value        map[string]string
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(out), &cfg), out)
	require.Len(t, cfg.Listeners, 1)
	assert.Equal(t, "127.0.0.1:1000", cfg.Listeners[0].Bind)
	assert.Equal(t, map[string]string{"linger": "20ms", "batch_size": "1024"}, cfg.Writer)
	assert.Equal(t, "warn", cfg.Logging.Level)
	require.Len(t, cfg.Routes, 3)
	assert.Equal(t, "d.b", cfg.Routes[1].Table)
	assert.Equal(t, "id", cfg.Routes[1].Key["column"])
	assert.Equal(t, "raw", cfg.Routes[2].Value["format"])
}

// TestAvroWorkload: the avro route reads Avro values from the registry the
// configuration names; each value is 00 + the seeded schema id + the Avro
// binary of the json workload's fields, the registry serves that schema
// under that id, and the baseline row is the json workload's row.
func TestAvroWorkload(t *testing.T) {
	reg := startRegistry()
	defer reg.Close()
	out := gatewayYAML("127.0.0.1:9123", 1000, 1001, writerSettings{SchemaRegistry: reg.URL()},
		workloadAvro.route("a", fluss.TablePath{Database: "d", Table: "a"}))
	var cfg struct {
		SchemaRegistry struct{ URLs []string } `yaml:"schema_registry"`
		Routes         []struct {
			Topic, Table string
			Value        map[string]string
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(out), &cfg), out)
	assert.Equal(t, []string{reg.URL()}, cfg.SchemaRegistry.URLs)
	require.Len(t, cfg.Routes, 1)
	assert.Equal(t, map[string]string{"format": "avro", "subject": avroSubject}, cfg.Routes[0].Value)
	assert.Equal(t, workloadJSON.descriptor(4), workloadAvro.descriptor(4))
	assert.False(t, workloadAvro.keyed())

	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	served, err := cl.SchemaByID(t.Context(), avroSchemaID)
	require.NoError(t, err)
	assert.Equal(t, sr.TypeAvro, served.Type)
	writer := avro.MustParse(served.Schema)
	latest, err := cl.SchemaByVersion(t.Context(), avroSubject, -1)
	require.NoError(t, err)
	assert.Equal(t, avroSchemaID, latest.ID)
	var names []string
	for _, f := range writer.(*avro.RecordSchema).Fields() {
		names = append(names, f.Name())
	}
	var columns []string
	for _, c := range eventColumns {
		columns = append(columns, c.Name)
	}
	assert.Equal(t, columns, names, "the writer schema has the six event columns, in order")

	gen := newGenerator(110, 0)
	for _, k := range []int64{0, 1, 99_999} {
		v, err := gen.kafkaValue(workloadAvro, nil, k)
		require.NoError(t, err)
		require.Greater(t, len(v), 5)
		assert.Equal(t, byte(0), v[0], "Confluent magic byte")
		assert.Equal(t, uint32(avroSchemaID), binary.BigEndian.Uint32(v[1:5]))
		assert.InDelta(t, 140, len(v), 15, "the json fields, Avro-encoded")
		var got map[string]any
		require.NoError(t, avro.Unmarshal(writer, v[5:], &got))
		var want map[string]any
		require.NoError(t, json.Unmarshal(gen.value(nil, k), &want))
		require.Len(t, got, 6)
		for name, w := range want {
			switch g := got[name].(type) {
			case int64:
				assert.Equal(t, w, float64(g), name)
			default:
				assert.Equal(t, w, g, name)
			}
		}
		avroRow, _ := gen.row(workloadAvro, make(fluss.Row, 6), nil, k)
		jsonRow, _ := gen.row(workloadJSON, make(fluss.Row, 6), nil, k)
		assert.Equal(t, jsonRow, avroRow, "the baseline writes the same rows")
	}
}

func TestReadProcStatOfSelf(t *testing.T) {
	st, err := readProcStat(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, st.rss)
	assert.GreaterOrEqual(t, st.cpu.Seconds(), 0.0)
	_, err = readProcStat(-1)
	assert.Error(t, err)
}
