package main

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestParseRuns(t *testing.T) {
	runs, err := parseRuns("json/1/none, upsert/2/zstd")
	require.NoError(t, err)
	assert.Equal(t, []runSpec{{workloadJSON, 1, "none"}, {workloadUpsert, 2, "zstd"}}, runs)
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

func TestReadProcStatOfSelf(t *testing.T) {
	st, err := readProcStat(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, st.rss)
	assert.GreaterOrEqual(t, st.cpu.Seconds(), 0.0)
	_, err = readProcStat(-1)
	assert.Error(t, err)
}
