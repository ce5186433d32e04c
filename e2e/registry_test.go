package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// serdePython is the venv with Confluent's Python serializers, made once
// per test binary by scripts/serde-venv.sh.
var serdePython = sync.OnceValues(func() (string, error) {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "scripts", "serde-venv.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("serde-venv.sh: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
})

// serdeResult is serde_produce.py's summary.
type serdeResult struct {
	Records    int   `json:"records"`
	Delivered  int   `json:"delivered"`
	ErrorCount int   `json:"error_count"`
	SchemaIDs  []int `json:"value_schema_ids"`
	Errors     []struct {
		Index int    `json:"index"`
		Stage string `json:"stage"`
		Error string `json:"error"`
	} `json:"errors"`
}

// serdeProduce serializes records (JSON values) with Confluent's Python
// serializer for format against the registry and produces them to the
// gateway with a librdkafka producer (acks=all, idempotent).
func serdeProduce(t *testing.T, bootstrap, registry, topic, format, schema string, records []map[string]any, extra ...string) serdeResult {
	t.Helper()
	py, err := serdePython()
	require.NoError(t, err)
	root, err := gatewaytest.ModuleRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, map[string]string{"avro": "schema.avsc", "protobuf": "schema.proto", "json": "schema.json"}[format])
	require.NoError(t, os.WriteFile(schemaFile, []byte(schema), 0o644))
	var lines bytes.Buffer
	for _, r := range records {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		lines.Write(append(b, '\n'))
	}
	recordsFile := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(recordsFile, lines.Bytes(), 0o644))
	args := append([]string{filepath.Join(root, "tools", "pyfluss", "serde_produce.py"),
		"--bootstrap", bootstrap, "--registry", registry, "--topic", topic, "--format", format,
		"--schema-file", schemaFile, "--records-file", recordsFile, "--timeout", "120"}, extra...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(testContext(t), py, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res serdeResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "serde_produce output %q (run error %v, stderr %s)", stdout.String(), runErr, stderr.String())
	return res
}

const orderAvro = `{
  "type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "flag", "type": "boolean"},
    {"name": "score", "type": "double"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "note", "type": ["null", "string"], "default": null},
    {"name": "ignored", "type": "int", "default": 0}
  ]
}`

// orderAvroV2 evolves the schema: note is gone, channel is new.
const orderAvroV2 = `{
  "type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "flag", "type": "boolean"},
    {"name": "score", "type": "double"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "channel", "type": "string", "default": "web"}
  ]
}`

func orderTable(name string) table {
	return table{name: name, buckets: 2, columns: []fluss.Column{
		col("id", fluss.BigInt()), col("name", fluss.String()), col("amount", fluss.Decimal(10, 2)),
		col("ts", fluss.TimestampLTZ(3)), col("day", fluss.Date()), col("flag", fluss.Boolean()),
		col("score", fluss.Double()), col("status", fluss.String()), col("note", fluss.String()),
		col("channel", fluss.String()),
	}}
}

func avroOrder(i int) map[string]any {
	o := map[string]any{
		"id": i, "name": fmt.Sprintf("order-%d", i), "amount": map[string]any{"$decimal": fmt.Sprintf("%d.%02d", i, i%100)},
		"ts": 1_704_067_200_000 + int64(i)*1000, "day": 19_723 + i, "flag": i%2 == 0, "score": float64(i) / 4,
		"status": []string{"NEW", "PAID"}[i%2], "ignored": i,
	}
	if i%3 != 0 {
		o["note"] = fmt.Sprintf("note %d", i)
	}
	return o
}

// registryProxy forwards TCP to the registry until it is taken down: then it
// refuses new connections and cuts open ones (the registry is "down").
type registryProxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func newRegistryProxy(t *testing.T, registryURL string) (*registryProxy, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host := strings.TrimPrefix(registryURL, "http://")
	host, path, _ := strings.Cut(host, "/")
	p := &registryProxy{ln: ln, target: host, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p, "http://" + ln.Addr().String() + "/" + path
}

func (p *registryProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (p *registryProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *registryProxy) setDown(down bool) {
	p.down.Store(down)
	if down {
		p.cut()
	}
}

// TestAvroRoutePythonSerializer: records serialized by Confluent's Python
// AvroSerializer (schema registered in a real Apicurio registry) land as
// typed columns, read back with pyfluss field by field; an evolved schema
// maps by name; a record naming a schema id the registry does not know is
// refused with INVALID_RECORD.
func TestAvroRoutePythonSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	orders := e.createTable(t, orderTable("avro_orders"))
	topic := uniqueName("avro-orders")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: avro}
`, topic, orders)})

	const n = 30
	var recs []map[string]any
	for i := range n {
		recs = append(recs, avroOrder(i))
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvro, recs)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, n, res.Delivered)

	// The evolved schema: note gone, channel new; both land by name.
	v2 := []map[string]any{{"id": 100, "name": "v2", "amount": map[string]any{"$decimal": "7.50"}, "ts": 1_704_067_200_000,
		"day": 19_723, "flag": true, "score": 1.5, "status": "PAID", "channel": "app"}}
	res = serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvroV2, v2)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)

	rows := e.scanLog(t, orders)
	require.Len(t, rows, n+1)
	byID := map[int64]map[string]json.RawMessage{}
	for _, r := range rows {
		byID[num(t, r.Row, "id")] = r.Row
	}
	for i := range n {
		row := byID[int64(i)]
		require.NotNil(t, row, "order %d", i)
		assert.Equal(t, fmt.Sprintf("order-%d", i), str(t, row, "name"))
		assert.Equal(t, fmt.Sprintf("%d.%02d", i, i%100), str(t, row, "amount"))
		assert.Equal(t, ltz(1_704_067_200_000+int64(i)*1000), str(t, row, "ts"))
		assert.Equal(t, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02"), str(t, row, "day"))
		assert.JSONEq(t, fmt.Sprint(i%2 == 0), string(row["flag"]))
		assert.JSONEq(t, fmt.Sprint(float64(i)/4), string(row["score"]))
		assert.Equal(t, []string{"NEW", "PAID"}[i%2], str(t, row, "status"))
		if i%3 == 0 {
			assert.True(t, isNull(row, "note"), "order %d note", i)
		} else {
			assert.Equal(t, fmt.Sprintf("note %d", i), str(t, row, "note"))
		}
		assert.True(t, isNull(row, "channel"), "v1 records have no channel")
	}
	row := byID[100]
	require.NotNil(t, row)
	assert.Equal(t, "app", str(t, row, "channel"))
	assert.True(t, isNull(row, "note"))
	assert.Equal(t, "7.50", str(t, row, "amount"))

	// A schema id the registry does not know: the batch is refused with
	// INVALID_RECORD and nothing of it is written.
	cl := newProducer(t, g.KafkaAddr, kgo.RecordRetries(0))
	value := append([]byte{0}, binary.BigEndian.AppendUint32(nil, 987_654)...)
	value = append(value, 0x02)
	r := cl.ProduceSync(testContext(t), &kgo.Record{Topic: topic, Value: value})
	require.Error(t, r.FirstErr())
	assert.ErrorIs(t, r.FirstErr(), kerr.InvalidRecord)
	assert.Len(t, e.scanLog(t, orders), n+1, "the unknown-id record was not written")
}

// TestAvroRouteRegistryDown: while the registry cannot be reached, batches
// whose writer schema the gateway has not cached yet are refused with a
// retriable error and nothing of them is written; the producer retries and,
// once the registry is back, every record lands exactly once.
func TestAvroRouteRegistryDown(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	proxy, proxied := newRegistryProxy(t, registry)
	orders := e.createTable(t, orderTable("avro_down"))
	topic := uniqueName("avro-down")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: proxied, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: avro}
`, topic, orders)})

	// Serialize with the registry reachable directly (the producer's own
	// registry access is not what is tested), then take the gateway's
	// path down before producing.
	proxy.setDown(true)
	const n = 20
	var recs []map[string]any
	for i := range n {
		recs = append(recs, avroOrder(i))
	}
	done := make(chan serdeResult, 1)
	go func() {
		done <- serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvro, recs,
			"--producer-config", "message.timeout.ms=120000", "--producer-config", "retry.backoff.ms=200")
	}()
	// The gateway refuses while the registry is down...
	require.NoError(t, waitFor(testContext(t), time.Minute, func() bool {
		return g.RequireMetrics(t).Sum("fluss_gateway_route_schema_registry_unavailable_total") >= 2
	}), "the gateway never reported the registry unavailable")
	assert.Empty(t, e.scanLog(t, orders), "nothing is written while the registry is down")
	// ...and the producer's retries land once it is back.
	proxy.setDown(false)
	var res serdeResult
	select {
	case res = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the producer did not finish after the registry came back")
	}
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, n, res.Delivered)
	rows := e.scanLog(t, orders)
	seen := map[int64]int{}
	for _, r := range rows {
		seen[num(t, r.Row, "id")]++
	}
	for i := range n {
		assert.Equal(t, 1, seen[int64(i)], "order %d lands exactly once", i)
	}
	assert.Len(t, rows, n)
}

// TestJSONSchemaRoutePythonSerializer: values serialized by Confluent's
// Python JSONSerializer (a draft-07 schema registered in Apicurio) land as
// columns; the gateway checks each against its writer schema.
func TestJSONSchemaRoutePythonSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	people := e.createTable(t, table{name: "js_people", buckets: 1, columns: []fluss.Column{
		col("id", fluss.BigInt()), col("name", fluss.String()), col("city", fluss.String()),
	}})
	topic := uniqueName("js-people")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value:
      format: json_schema
      columns: {city: address.city}
`, topic, people)})
	const schema = `{"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
  "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                 "address": {"type": "object", "properties": {"city": {"type": "string"}}}},
  "required": ["id", "name"]}`
	var recs []map[string]any
	for i := range 10 {
		recs = append(recs, map[string]any{"id": i, "name": fmt.Sprintf("p%d", i), "address": map[string]any{"city": fmt.Sprintf("c%d", i)}})
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "json", schema, recs)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, 10, res.Delivered)
	rows := e.scanLog(t, people)
	require.Len(t, rows, 10)
	for _, r := range rows {
		id := num(t, r.Row, "id")
		assert.Equal(t, fmt.Sprintf("p%d", id), str(t, r.Row, "name"))
		assert.Equal(t, fmt.Sprintf("c%d", id), str(t, r.Row, "city"))
	}
}

const orderProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  int64 id = 1;
  string name = 2;
  google.protobuf.Timestamp ts = 3;
  google.protobuf.StringValue note = 4;
  Status status = 5;
  double score = 6;
  enum Status { NEW = 0; PAID = 1; }
}
`

// TestProtobufRoutePythonSerializer: values serialized by Confluent's
// Python ProtobufSerializer (the .proto registered in Apicurio as a base64
// FileDescriptorProto, with message indexes in the framing) land as typed
// columns: a Timestamp into TIMESTAMP_LTZ, a StringValue wrapper as a
// nullable STRING, an enum as its name.
func TestProtobufRoutePythonSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	orders := e.createTable(t, table{name: "pb_orders", buckets: 1, columns: []fluss.Column{
		col("id", fluss.BigInt()), col("name", fluss.String()), col("ts", fluss.TimestampLTZ(3)),
		col("note", fluss.String()), col("status", fluss.String()), col("score", fluss.Double()),
	}})
	topic := uniqueName("pb-orders")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: protobuf}
`, topic, orders)})
	var recs []map[string]any
	for i := range 10 {
		r := map[string]any{"id": i, "name": fmt.Sprintf("o%d", i),
			"ts":     time.UnixMilli(1_704_067_200_000 + int64(i)*1000).UTC().Format(time.RFC3339Nano),
			"status": []string{"NEW", "PAID"}[i%2], "score": float64(i) / 2}
		if i%2 == 1 {
			r["note"] = fmt.Sprintf("n%d", i)
		}
		recs = append(recs, r)
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "protobuf", orderProto, recs, "--message", "shop.Order")
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, 10, res.Delivered)
	rows := e.scanLog(t, orders)
	require.Len(t, rows, 10)
	for _, r := range rows {
		i := num(t, r.Row, "id")
		assert.Equal(t, fmt.Sprintf("o%d", i), str(t, r.Row, "name"))
		assert.Equal(t, ltz(1_704_067_200_000+i*1000), str(t, r.Row, "ts"))
		assert.Equal(t, []string{"NEW", "PAID"}[i%2], str(t, r.Row, "status"))
		assert.JSONEq(t, fmt.Sprint(float64(i)/2), string(r.Row["score"]))
		if i%2 == 1 {
			assert.Equal(t, fmt.Sprintf("n%d", i), str(t, r.Row, "note"))
		} else {
			assert.True(t, isNull(r.Row, "note"), "an unset wrapper is null")
		}
	}
}

const profileAvro = `{
  "type": "record", "name": "Profile", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
      {"name": "street", "type": "string"}, {"name": "city", "type": "string"}]}},
    {"name": "scores", "type": {"type": "map", "values": "long"}},
    {"name": "visits", "type": {"type": "array", "items": {"type": "record", "name": "Visit", "fields": [
      {"name": "page", "type": "string"}, {"name": "ms", "type": "int"}]}}}
  ]
}`

// TestAvroNestedIntoFlussNestedColumns: Avro records, arrays and maps
// (Python AvroSerializer, Apicurio) land in Fluss ROW, ARRAY and MAP
// columns, read back with pyfluss.
func TestAvroNestedIntoFlussNestedColumns(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	profiles := e.createTable(t, table{name: "avro_profiles", buckets: 1, columns: []fluss.Column{
		col("id", fluss.BigInt()),
		col("tags", fluss.Array(fluss.String())),
		col("address", fluss.RowType(fluss.RowField("street", fluss.String()), fluss.RowField("city", fluss.String()))),
		col("scores", fluss.Map(fluss.String(), fluss.BigInt())),
		col("visits", fluss.Array(fluss.RowType(fluss.RowField("page", fluss.String()), fluss.RowField("ms", fluss.Int())))),
		col("city", fluss.String()),
	}})
	topic := uniqueName("avro-profiles")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value:
      format: avro
      columns: {city: address.city}
`, topic, profiles)})
	var recs []map[string]any
	for i := range 5 {
		tags := []string{}
		for j := range i {
			tags = append(tags, fmt.Sprintf("t%d", j))
		}
		recs = append(recs, map[string]any{"id": i, "tags": tags,
			"address": map[string]any{"street": fmt.Sprintf("%d Main St", i), "city": fmt.Sprintf("city%d", i)},
			"scores":  map[string]any{"a": i, "b": 10 * i},
			"visits":  []any{map[string]any{"page": "/home", "ms": i}, map[string]any{"page": "/buy", "ms": 2 * i}}})
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "avro", profileAvro, recs)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	rows := e.scanLog(t, profiles)
	require.Len(t, rows, 5)
	for _, r := range rows {
		i := num(t, r.Row, "id")
		tags := []string{}
		for j := range i {
			tags = append(tags, fmt.Sprintf("t%d", j))
		}
		wantTags, _ := json.Marshal(tags)
		assert.JSONEq(t, string(wantTags), string(r.Row["tags"]), "tags of %d", i)
		assert.JSONEq(t, fmt.Sprintf(`{"street": "%d Main St", "city": "city%d"}`, i, i), string(r.Row["address"]))
		var scores []struct {
			Key   string `json:"key"`
			Value int64  `json:"value"`
		}
		require.NoError(t, json.Unmarshal(r.Row["scores"], &scores))
		got := map[string]int64{}
		for _, kv := range scores {
			got[kv.Key] = kv.Value
		}
		assert.Equal(t, map[string]int64{"a": i, "b": 10 * i}, got)
		assert.JSONEq(t, fmt.Sprintf(`[{"page": "/home", "ms": %d}, {"page": "/buy", "ms": %d}]`, i, 2*i), string(r.Row["visits"]))
		assert.Equal(t, fmt.Sprintf("city%d", i), str(t, r.Row, "city"), "a path into the nested record")
	}
}

// TestJSONIntoNestedColumns: a plain json route fills ARRAY, MAP and ROW
// columns from JSON arrays and objects, read back with pyfluss.
func TestJSONIntoNestedColumns(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, table{name: "json_nested", buckets: 1, columns: []fluss.Column{
		col("id", fluss.BigInt()),
		col("tags", fluss.Array(fluss.String())),
		col("scores", fluss.Map(fluss.String(), fluss.BigInt())),
		col("address", fluss.RowType(fluss.RowField("street", fluss.String()), fluss.RowField("city", fluss.String()))),
	}})
	topic := uniqueName("json-nested")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: fmt.Sprintf("  - topic: %s\n    table: %s\n", topic, tbl)})
	cl := newProducer(t, g.KafkaAddr)
	produceAll(t, cl, &kgo.Record{Topic: topic, Value: []byte(`{"id": 1, "tags": ["x", "y"], "scores": {"a": 5}, "address": {"street": "1 Rue", "city": "Lyon"}}`)})
	rows := e.scanLog(t, tbl)
	require.Len(t, rows, 1)
	assert.JSONEq(t, `["x", "y"]`, string(rows[0].Row["tags"]))
	assert.JSONEq(t, `[{"key": "a", "value": 5}]`, string(rows[0].Row["scores"]))
	assert.JSONEq(t, `{"street": "1 Rue", "city": "Lyon"}`, string(rows[0].Row["address"]))
}

const logicalAvro = `{
  "type": "record", "name": "Logical", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "dfx", "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 3}},
    {"name": "f", "type": "float"}
  ]
}`

// TestAvroLogicalTypesPythonSerializer: the Avro logical types the other
// tests do not reach — time-millis/-micros, timestamp-micros,
// local-timestamp-millis/-micros, uuid, fixed, decimal on fixed — plus
// float, written by Confluent's Python AvroSerializer, read back with
// pyfluss.
func TestAvroLogicalTypesPythonSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	tbl := e.createTable(t, table{name: "avro_logical", buckets: 1, columns: []fluss.Column{
		col("id", fluss.BigInt()), col("t_ms", fluss.Time(3)), col("t_us", fluss.Time(3)),
		col("ts_us", fluss.TimestampLTZ(6)), col("lts_ms", fluss.Timestamp(3)), col("lts_us", fluss.Timestamp(6)),
		col("uid", fluss.String()), col("fx", fluss.Binary(4)), col("dfx", fluss.Decimal(12, 3)), col("f", fluss.Float()),
	}})
	topic := uniqueName("avro-logical")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: avro}
`, topic, tbl)})
	rec := map[string]any{"id": 1, "t_ms": 45_296_789, "t_us": 45_296_789_123, "ts_us": 1_704_067_200_123_456,
		"lts_ms": 1_704_067_200_123, "lts_us": 1_704_067_200_123_456, "uid": "2f1c6f4e-8d2b-4a6e-9c1d-3b5e7f9a0c12",
		"fx": map[string]any{"$bytes_hex": "01020304"}, "dfx": map[string]any{"$decimal": "123.456"}, "f": 1.5}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "avro", logicalAvro, []map[string]any{rec})
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	rows := e.scanLog(t, tbl)
	require.Len(t, rows, 1)
	row := rows[0].Row
	assert.Equal(t, "12:34:56.789000000", str(t, row, "t_ms"))
	assert.Equal(t, "12:34:56.789000000", str(t, row, "t_us"), "time-micros truncated to the column's millis")
	assert.Equal(t, "2024-01-01T00:00:00.123456000Z", str(t, row, "ts_us"))
	assert.Equal(t, "2024-01-01T00:00:00.123000000", str(t, row, "lts_ms"))
	assert.Equal(t, "2024-01-01T00:00:00.123456000", str(t, row, "lts_us"))
	assert.Equal(t, "2f1c6f4e-8d2b-4a6e-9c1d-3b5e7f9a0c12", str(t, row, "uid"))
	assert.Equal(t, "AQIDBA==", str(t, row, "fx"))
	assert.Equal(t, "123.456", str(t, row, "dfx"))
	assert.JSONEq(t, "1.5", string(row["f"]))
}

const profileProto = `syntax = "proto3";
package shop;

message Profile {
  int64 id = 1;
  repeated string tags = 2;
  Address address = 3;
  map<string, int64> scores = 4;
  repeated Visit visits = 5;
  message Address { string street = 1; string city = 2; }
  message Visit { string page = 1; int32 ms = 2; }
}
`

// TestProtobufNestedIntoFlussNestedColumns: nested messages, repeated
// fields (of scalars and of messages) and maps from Confluent's Python
// ProtobufSerializer land in Fluss ROW, ARRAY and MAP columns.
func TestProtobufNestedIntoFlussNestedColumns(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	tbl := e.createTable(t, table{name: "pb_profiles", buckets: 1, columns: []fluss.Column{
		col("id", fluss.BigInt()),
		col("tags", fluss.Array(fluss.String())),
		col("address", fluss.RowType(fluss.RowField("street", fluss.String()), fluss.RowField("city", fluss.String()))),
		col("scores", fluss.Map(fluss.String(), fluss.BigInt())),
		col("visits", fluss.Array(fluss.RowType(fluss.RowField("page", fluss.String()), fluss.RowField("ms", fluss.Int())))),
	}})
	topic := uniqueName("pb-profiles")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: protobuf}
`, topic, tbl)})
	rec := map[string]any{"id": 3, "tags": []string{"a", "b"}, "address": map[string]any{"street": "3 Rue", "city": "Nice"},
		"scores": map[string]any{"x": "7"}, "visits": []any{map[string]any{"page": "/", "ms": 4}, map[string]any{"page": "/y", "ms": 5}}}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "protobuf", profileProto, []map[string]any{rec}, "--message", "shop.Profile")
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	rows := e.scanLog(t, tbl)
	require.Len(t, rows, 1)
	row := rows[0].Row
	assert.JSONEq(t, `["a", "b"]`, string(row["tags"]))
	assert.JSONEq(t, `{"street": "3 Rue", "city": "Nice"}`, string(row["address"]))
	assert.JSONEq(t, `[{"key": "x", "value": 7}]`, string(row["scores"]))
	assert.JSONEq(t, `[{"page": "/", "ms": 4}, {"page": "/y", "ms": 5}]`, string(row["visits"]))
}
