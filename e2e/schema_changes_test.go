package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// The schema-change tests (issue 30, "Schema changes never stop a
// producer"): tables created and widened by follow_schema while real
// producers (Confluent's Python serializers, Apicurio's Java serde) move
// from one writer schema to the next against the real registry, every row
// read back out of Fluss with pyfluss.
//
// The writer schemas, in each registry format: v1 is a person (id, name,
// addr {city}); "top" adds an optional top-level field channel; "nested"
// adds an optional field zip inside addr (a ROW column, which Fluss cannot
// widen); "both" adds the two (the BACKWARD-compatible v2); "typed"
// changes id from an integer to a string.

// schemaChangeFormat is one registry format's writer schemas.
type schemaChangeFormat struct {
	format string   // the route's value.format
	serde  string   // serde_produce.py --format
	extra  []string // serde_produce.py arguments for every schema (the Protobuf message)
	schema func(top, nested bool) string
	typed  string
	// typedID is record i's id under typed: text that no BIGINT column may
	// take from that format.
	typedID func(i int) string
	// odd is "both" with a top-level field odd of a type no column holds
	// (a union of several types, google.protobuf.Struct); oddValue is a
	// value of it.
	odd      string
	oddValue any
}

func schemaChangeFormats() []schemaChangeFormat {
	avroSchema := func(top, nested, odd bool) string {
		zip, channel := "", ""
		if nested {
			zip = `, {"name": "zip", "type": ["null", "string"], "default": null}`
		}
		if top {
			channel = `, {"name": "channel", "type": ["null", "string"], "default": null}`
		}
		if odd {
			channel += `, {"name": "odd", "type": ["null", "string", "long"], "default": null}`
		}
		return fmt.Sprintf(`{"type": "record", "name": "Person", "namespace": "shop", "fields": [
  {"name": "id", "type": "long"},
  {"name": "name", "type": "string"},
  {"name": "addr", "type": {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}%s]}}%s]}`, zip, channel)
	}
	protoSchema := func(top, nested, odd bool) string {
		imports, zip, channel := "", "", ""
		if nested {
			zip = "    optional string zip = 2;\n"
		}
		if top {
			channel = "  optional string channel = 4;\n"
		}
		if odd {
			imports = "import \"google/protobuf/struct.proto\";\n"
			channel += "  google.protobuf.Struct odd = 5;\n"
		}
		return "syntax = \"proto3\";\npackage shop;\n" + imports + "\nmessage Event {\n  int64 id = 1;\n  string name = 2;\n  Addr addr = 3;\n" + channel +
			"  message Addr {\n    string city = 1;\n" + zip + "  }\n}\n"
	}
	jsonSchema := func(top, nested, odd bool) string {
		zip, channel := "", ""
		if nested {
			zip = `, "zip": {"type": "string"}`
		}
		if top {
			channel = `, "channel": {"type": "string"}`
		}
		if odd {
			channel += `, "odd": {"type": ["string", "integer"]}`
		}
		return fmt.Sprintf(`{"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
  "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                 "addr": {"type": "object", "properties": {"city": {"type": "string"}%s}}%s},
  "required": ["id", "name", "addr"]}`, zip, channel)
	}
	mustReplace := func(s, old, new string) string {
		out := strings.Replace(s, old, new, 1)
		if out == s {
			panic("schema change: " + old + " not in " + s)
		}
		return out
	}
	two := func(gen func(top, nested, odd bool) string) func(top, nested bool) string {
		return func(top, nested bool) string { return gen(top, nested, false) }
	}
	return []schemaChangeFormat{
		{
			format: "avro", serde: "avro", schema: two(avroSchema),
			typed: mustReplace(avroSchema(false, false, false), `{"name": "id", "type": "long"}`, `{"name": "id", "type": "string"}`),
			// An Avro string never fills a BIGINT, digits or not.
			typedID: func(i int) string { return fmt.Sprint(i) },
			odd:     avroSchema(true, true, true), oddValue: "odd",
		},
		{
			format: "protobuf", serde: "protobuf", extra: []string{"--message", "shop.Event"}, schema: two(protoSchema),
			typed:   mustReplace(protoSchema(false, false, false), "int64 id = 1;", "string id = 1;"),
			typedID: func(i int) string { return fmt.Sprintf("id-%d", i) },
			odd:     protoSchema(true, true, true), oddValue: map[string]any{"k": "odd"},
		},
		{
			format: "json_schema", serde: "json", schema: two(jsonSchema),
			typed:   mustReplace(jsonSchema(false, false, false), `"id": {"type": "integer"}`, `"id": {"type": "string"}`),
			typedID: func(i int) string { return fmt.Sprintf("id-%d", i) },
			odd:     jsonSchema(true, true, true), oddValue: "odd",
		},
	}
}

// person is record i: channel with top, addr.zip with nested.
func person(i int, top, nested bool) map[string]any {
	addr := map[string]any{"city": fmt.Sprintf("city-%d", i)}
	if nested {
		addr["zip"] = fmt.Sprintf("zip-%d", i)
	}
	r := map[string]any{"id": i, "name": fmt.Sprintf("name-%d", i), "addr": addr}
	if top {
		r["channel"] = fmt.Sprintf("ch-%d", i)
	}
	return r
}

func persons(from, n int, top, nested bool) []map[string]any {
	out := make([]map[string]any, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, person(i, top, nested))
	}
	return out
}

func idRange(from, n int) []int {
	out := make([]int, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, i)
	}
	return out
}

// mixedPersons are --envelope lines to partition 0 for ids from..from+n-1:
// even ids v1 records (schema 1), odd ids records of schema 2 (top and
// nested as given).
func mixedPersons(from, n int, top, nested bool) []map[string]any {
	out := make([]map[string]any, 0, n)
	for i := from; i < from+n; i++ {
		if i%2 == 0 {
			out = append(out, map[string]any{"partition": 0, "schema": 1, "value": person(i, false, false)})
		} else {
			out = append(out, map[string]any{"partition": 0, "schema": 2, "value": person(i, top, nested)})
		}
	}
	return out
}

var (
	personColumns        = []string{"id BIGINT", "name STRING", "addr ROW<city STRING>"}
	personColumnsChannel = []string{"id BIGINT", "name STRING", "addr ROW<city STRING>", "channel STRING"}
)

// requirePersonRows requires rows to be exactly the records of ids, each
// once, with name and addr read back (the city only: a nested field the
// table lacks is not written), and channel filled for the ids channel
// says, null (or absent: written before the column existed) for the others.
func requirePersonRows(t *testing.T, rows []scannedRow, ids []int, channel func(id int64) bool) {
	t.Helper()
	want := map[int64]bool{}
	for _, id := range ids {
		want[int64(id)] = true
	}
	seen := map[int64]int{}
	for _, r := range rows {
		id := num(t, r.Row, "id")
		seen[id]++
		if !want[id] {
			assert.Fail(t, "a row that should not be there", "id %d: %v", id, r.Row)
			continue
		}
		assert.Equal(t, fmt.Sprintf("name-%d", id), str(t, r.Row, "name"), "id %d", id)
		assert.JSONEq(t, fmt.Sprintf(`{"city": "city-%d"}`, id), string(r.Row["addr"]), "id %d: the ROW column", id)
		_, has := r.Row["channel"]
		if channel(id) {
			assert.Equal(t, fmt.Sprintf("ch-%d", id), str(t, r.Row, "channel"), "id %d", id)
		} else {
			assert.True(t, !has || isNull(r.Row, "channel"), "id %d has no channel: %s", id, r.Row["channel"])
		}
	}
	for id := range want {
		assert.Equal(t, 1, seen[id], "id %d is read back once", id)
	}
	require.Len(t, rows, len(ids), "every record once, none other")
}

// tableColumns reads the table's columns afresh, as "name TYPE".
func (e *env) tableColumns(t *testing.T, name string) []string {
	t.Helper()
	path := fluss.TablePath{Database: e.Name, Table: name}
	e.Client.InvalidateTableInfo(path)
	info, err := e.Client.GetTableInfo(testContext(t), path)
	require.NoError(t, err, "table %s", path)
	return columnList(info)
}

const fieldsNotAddedMsg = "writer schema field not added to the table"

// fieldsNotAddedLines are the gateway's WARN lines for route about writer
// schema fields the table does not get.
func fieldsNotAddedLines(g *gatewaytest.Process, route string) []string {
	re := regexp.MustCompile(`(^|\s)route=` + regexp.QuoteMeta(route) + `(\s|$)`)
	var out []string
	for line := range strings.Lines(g.Logs()) {
		if strings.Contains(line, fieldsNotAddedMsg) && re.MatchString(line) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// requireFieldsNotAdded requires route to have logged the WARN once per
// writer schema (schemas lines so far), each naming the table and field,
// and its counter of fields not added to be at fields.
func requireFieldsNotAdded(t *testing.T, g *gatewaytest.Process, route, table, field string, schemas, fields int) {
	t.Helper()
	require.NoError(t, waitFor(testContext(t), 30*time.Second, func() bool { return len(fieldsNotAddedLines(g, route)) >= schemas }),
		"no WARN %q for route %s; log:\n%s", fieldsNotAddedMsg, route, g.Logs())
	lines := fieldsNotAddedLines(g, route)
	assert.Len(t, lines, schemas, "one WARN per writer schema: %q", lines)
	for _, l := range lines {
		assert.Contains(t, l, "level=WARN")
		assert.Contains(t, l, "table="+table)
		assert.Contains(t, l, field)
	}
	assert.Equal(t, float64(fields), g.RequireMetrics(t).Sum("fluss_gateway_route_writer_fields_not_added_total", `route="`+route+`"`),
		"fields not added by route %s", route)
}

// serdeRun is serde_produce.py's summary with what serdeResult leaves out.
type serdeRun struct {
	serdeResult
	BySchema   map[string][]int `json:"value_schema_ids_by_schema"`
	Partitions map[string]int   `json:"partitions"`
	RecordsHex []struct {
		Index int     `json:"index"`
		Value *string `json:"value"`
	} `json:"records_hex"`
}

// serdeMixed runs serde_produce.py in --envelope mode with two value
// schemas of f's format: each line's "schema" (1 or 2) picks schema1 or
// schema2. With bootstrap "" pass "--dry-run" in extra.
func serdeMixed(t *testing.T, bootstrap, registry, topic string, f schemaChangeFormat, schema1, schema2 string, lines []map[string]any, extra ...string) serdeRun {
	t.Helper()
	py, err := serdePython()
	require.NoError(t, err)
	root, err := gatewaytest.ModuleRoot()
	require.NoError(t, err)
	schemaName := map[string]string{"avro": "schema.avsc", "protobuf": "schema.proto", "json": "schema.json"}[f.serde]
	file := func(name, content string) string { // each in a directory of its own
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	var body bytes.Buffer
	for _, l := range lines {
		b, err := json.Marshal(l)
		require.NoError(t, err)
		body.Write(append(b, '\n'))
	}
	args := []string{filepath.Join(root, "tools", "pyfluss", "serde_produce.py"), "--registry", registry, "--topic", topic,
		"--format", f.serde, "--envelope", "--schema-file", file(schemaName, schema1),
		"--schema2-file", file(schemaName, schema2), "--records-file", file("records.jsonl", body.String()), "--timeout", "120"}
	if bootstrap != "" {
		args = append(args, "--bootstrap", bootstrap)
	}
	if len(f.extra) > 0 { // the same message in both
		args = append(args, f.extra...)
		args = append(args, "--message2", f.extra[len(f.extra)-1])
	}
	args = append(args, extra...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(testContext(t), py, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res serdeRun
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "serde_produce output %q (run error %v, stderr %s)", stdout.String(), runErr, stderr.String())
	return res
}

// produceRequests is how many Produce requests the gateway has received.
func produceRequests(t *testing.T, g *gatewaytest.Process) float64 {
	t.Helper()
	return g.RequireMetrics(t).Sum("fluss_gateway_kafka_requests_total", `api="produce"`)
}

// serdeMixedBatch produces lines (to one partition) as serdeMixed does,
// lingering so that they make one batch, and requires them to have come in
// one Produce request: one batch mixing the two writer schemas.
func serdeMixedBatch(t *testing.T, g *gatewaytest.Process, registry, topic string, f schemaChangeFormat, schema1, schema2 string, lines []map[string]any) serdeRun {
	t.Helper()
	before := produceRequests(t, g)
	res := serdeMixed(t, g.KafkaAddr, registry, topic, f, schema1, schema2, lines, "--producer-config", "linger.ms=500")
	require.Zero(t, res.ErrorCount, "mixed: %+v", res.Errors)
	require.Equal(t, len(lines), res.Delivered, "mixed")
	require.Len(t, res.BySchema, 2, "two writer schemas: %v", res.BySchema)
	assert.Equal(t, map[string]int{"0": len(lines)}, res.Partitions)
	assert.Equal(t, float64(1), produceRequests(t, g)-before, "the %d records came in one Produce request, one batch", len(lines))
	return res
}

// schemaIDOf is the schema id of a value in Confluent's prefix framing.
func schemaIDOf(t *testing.T, value []byte) int {
	t.Helper()
	require.GreaterOrEqual(t, len(value), 5, "framed value %x", value)
	require.Equal(t, byte(0), value[0], "magic byte of %x", value)
	return int(binary.BigEndian.Uint32(value[1:5]))
}

var deadLetterColumns = []fluss.Column{
	col("kafka_topic", fluss.String()), col("kafka_partition", fluss.Int()), col("kafka_offset", fluss.BigInt()),
	col("kafka_value", fluss.Bytes()), col("route", fluss.String()), col("reason", fluss.String()),
}

// TestSchemaChangeRegistryFormats: per registry format (Confluent's Python
// serializers, real Apicurio), one gateway with four follow_schema routes
// (create and add_columns) whose tables the first v1 records create:
//
//   - ignore (unknown_fields' default): 250 v1 records create the table
//     from v1; "nested" records are written without zip, the table
//     unchanged; "top" adds channel; 250 "both" records are written with
//     channel and without zip; "both" with a top-level field of a type no
//     column holds is written without it. Each writer schema with fields
//     not added logs one WARN and counts its fields.
//   - ignore, one Kafka batch mixing v1 and "both" records: all written,
//     the v1 ones with channel null.
//   - reject (unknown_fields: reject): "top" is still written whole;
//     "nested" records are refused; a Produce of one batch mixing v1 and
//     "both" records fails whole with record errors naming exactly the
//     "both" records; "typed" records are refused and add nothing.
//   - reject + dlq: a batch mixing v1 and "both" records writes its v1
//     records to the table and its "both" records to the dead-letter
//     table, as do "nested" and "typed" records.
//
// Every row is read back with pyfluss: no record lost, none twice.
func TestSchemaChangeRegistryFormats(t *testing.T) {
	registry := registrytest.URL(t)
	for _, f := range schemaChangeFormats() {
		t.Run(f.format, func(t *testing.T) {
			e := newEnv(t)
			dead := e.createTable(t, table{name: "dead_letters", buckets: 1, columns: deadLetterColumns})
			topic := map[string]string{}
			tbl := map[string]string{}
			for _, r := range []string{"follow", "mixed", "strict", "dlq"} {
				topic[r] = uniqueName("sc-" + r)
				tbl[r] = e.Name + ".sc_" + r
			}
			g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - name: follow
    topic: %s
    table: %s
    value: {format: %s}
    follow_schema: {create: true, add_columns: true, buckets: 3}
  - name: mixed
    topic: %s
    table: %s
    value: {format: %s}
    follow_schema: {create: true, add_columns: true, buckets: 2}
  - name: strict
    topic: %s
    table: %s
    value: {format: %s, unknown_fields: reject}
    follow_schema: {create: true, add_columns: true, buckets: 2}
  - name: dlq
    topic: %s
    table: %s
    value: {format: %s, unknown_fields: reject}
    follow_schema: {create: true, add_columns: true, buckets: 2}
    errors: {mode: dlq, dlq_table: %s}
`, topic["follow"], tbl["follow"], f.format, topic["mixed"], tbl["mixed"], f.format,
				topic["strict"], tbl["strict"], f.format, topic["dlq"], tbl["dlq"], f.format, dead)})
			produce := func(t *testing.T, route, schema string, recs []map[string]any) serdeResult {
				t.Helper()
				return serdeProduce(t, g.KafkaAddr, registry, topic[route], f.serde, schema, recs, f.extra...)
			}
			requireAll := func(t *testing.T, res serdeResult, n int, what string) {
				t.Helper()
				require.Zero(t, res.ErrorCount, "%s: %+v", what, res.Errors)
				require.Equal(t, n, res.Delivered, what)
			}

			t.Run("ignore", func(t *testing.T) {
				requireAll(t, produce(t, "follow", f.schema(false, false), persons(0, 250, false, false)), 250, "v1")
				assert.Equal(t, personColumns, e.tableColumns(t, "sc_follow"), "the table is created from v1")

				requireAll(t, produce(t, "follow", f.schema(false, true), persons(1000, 50, false, true)), 50, "nested")
				assert.Equal(t, personColumns, e.tableColumns(t, "sc_follow"), "a field inside the ROW column adds nothing")
				requireFieldsNotAdded(t, g, "follow", tbl["follow"], "addr.zip", 1, 1)

				requireAll(t, produce(t, "follow", f.schema(true, false), persons(2000, 50, true, false)), 50, "top")
				assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_follow"), "the top-level field is added")

				requireAll(t, produce(t, "follow", f.schema(true, true), persons(3000, 250, true, true)), 250, "both")
				assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_follow"))
				requireFieldsNotAdded(t, g, "follow", tbl["follow"], "addr.zip", 2, 2)

				// "both" and a top-level field of a type no column holds:
				// written without it (and without zip), two fields counted.
				odd := persons(4000, 10, true, true)
				for _, r := range odd {
					r["odd"] = f.oddValue
				}
				requireAll(t, produce(t, "follow", f.odd, odd), 10, "odd")
				assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_follow"), "a field no column holds adds nothing")
				requireFieldsNotAdded(t, g, "follow", tbl["follow"], "addr.zip", 3, 4)
				lines := fieldsNotAddedLines(g, "follow")
				if assert.Len(t, lines, 3) {
					assert.Contains(t, lines[2], "odd", "the WARN names the field")
				}

				ids := slices.Concat(idRange(0, 250), idRange(1000, 50), idRange(2000, 50), idRange(3000, 250), idRange(4000, 10))
				requirePersonRows(t, e.scanLog(t, tbl["follow"]), ids, func(id int64) bool { return id >= 2000 })
			})

			t.Run("mixed batch ignore", func(t *testing.T) {
				requireAll(t, produce(t, "mixed", f.schema(false, false), persons(0, 5, false, false)), 5, "v1")
				serdeMixedBatch(t, g, registry, topic["mixed"], f, f.schema(false, false), f.schema(true, true), mixedPersons(100, 20, true, true))
				assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_mixed"))
				requireFieldsNotAdded(t, g, "mixed", tbl["mixed"], "addr.zip", 1, 1)
				requirePersonRows(t, e.scanLog(t, tbl["mixed"]), slices.Concat(idRange(0, 5), idRange(100, 20)),
					func(id int64) bool { return id >= 100 && id%2 == 1 })
			})

			t.Run("reject", func(t *testing.T) {
				requireAll(t, produce(t, "strict", f.schema(false, false), persons(0, 5, false, false)), 5, "v1")
				requireAll(t, produce(t, "strict", f.schema(true, false), persons(10, 5, true, false)), 5, "top, written whole")
				assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_strict"))

				res := produce(t, "strict", f.schema(false, true), persons(20, 3, false, true))
				assert.Equal(t, 3, res.ErrorCount, "nested records refused: %+v", res)
				assert.Zero(t, res.Delivered)

				// One batch mixing v1 and "both" records, serialized by the
				// Python serializers (dry run) and sent as one Produce: the
				// batch fails whole (Kafka batches are atomic) and its record
				// errors name the "both" records only.
				dry := serdeMixed(t, "", registry, topic["strict"], f, f.schema(false, false), f.schema(true, true),
					mixedPersons(30, 6, true, true), "--dry-run")
				require.Zero(t, dry.ErrorCount, "%+v", dry.Errors)
				require.Len(t, dry.RecordsHex, 6)
				var raw []rawRecord
				for _, r := range dry.RecordsHex {
					require.NotNil(t, r.Value)
					v, err := hex.DecodeString(*r.Value)
					require.NoError(t, err)
					raw = append(raw, rawRecord{value: v})
				}
				resp := produceRaw(t, g.KafkaAddr, topic["strict"], 0, recordBatch(time.Now(), raw...))
				assert.Equal(t, kerr.InvalidRecord.Code, resp.ErrorCode, "%v", kerr.ErrorForCode(resp.ErrorCode))
				var named []int32
				for _, re := range resp.ErrorRecords {
					named = append(named, re.RelativeOffset)
					if assert.NotNil(t, re.ErrorMessage, "record %d", re.RelativeOffset) {
						assert.Contains(t, *re.ErrorMessage, "zip", "record %d: the reason names the field", re.RelativeOffset)
					}
				}
				slices.Sort(named)
				assert.Equal(t, []int32{1, 3, 5}, named, "only the records of the schema with the new nested field are named")

				res = produce(t, "strict", f.typed, []map[string]any{
					{"id": f.typedID(40), "name": "name-40", "addr": map[string]any{"city": "city-40"}},
					{"id": f.typedID(41), "name": "name-41", "addr": map[string]any{"city": "city-41"}},
				})
				assert.Equal(t, 2, res.ErrorCount, "a type change is refused, never coerced: %+v", res)
				assert.Zero(t, res.Delivered)
				assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_strict"), "the type change changed nothing")

				requirePersonRows(t, e.scanLog(t, tbl["strict"]), slices.Concat(idRange(0, 5), idRange(10, 5)),
					func(id int64) bool { return id >= 10 })
			})

			t.Run("dlq", func(t *testing.T) {
				requireAll(t, produce(t, "dlq", f.schema(false, false), persons(0, 5, false, false)), 5, "v1")
				mixed := serdeMixedBatch(t, g, registry, topic["dlq"], f, f.schema(false, false), f.schema(true, true), mixedPersons(100, 20, true, true))
				require.Len(t, mixed.BySchema["2"], 1, "%v", mixed.BySchema)
				bothID := mixed.BySchema["2"][0]
				nested := produce(t, "dlq", f.schema(false, true), persons(20, 3, false, true))
				requireAll(t, nested, 3, "nested, dead-lettered")
				require.Len(t, nested.SchemaIDs, 1)
				nestedID := nested.SchemaIDs[0]
				typed := produce(t, "dlq", f.typed, []map[string]any{
					{"id": f.typedID(200), "name": "name-200", "addr": map[string]any{"city": "city-200"}},
					{"id": f.typedID(201), "name": "name-201", "addr": map[string]any{"city": "city-201"}},
				})
				requireAll(t, typed, 2, "typed, dead-lettered")
				require.Len(t, typed.SchemaIDs, 1)
				typedID := typed.SchemaIDs[0]

				var v1Mixed []int
				for i := 100; i < 120; i += 2 {
					v1Mixed = append(v1Mixed, i)
				}
				requirePersonRows(t, e.scanLog(t, tbl["dlq"]), slices.Concat(idRange(0, 5), v1Mixed),
					func(int64) bool { return false })

				byID := map[int]int{}
				for _, r := range e.scanLog(t, dead) {
					if str(t, r.Row, "route") != "dlq" {
						continue
					}
					assert.Equal(t, topic["dlq"], str(t, r.Row, "kafka_topic"))
					v, err := base64.StdEncoding.DecodeString(str(t, r.Row, "kafka_value"))
					require.NoError(t, err)
					id := schemaIDOf(t, v)
					byID[id]++
					reason := str(t, r.Row, "reason")
					switch id {
					case bothID:
						assert.Contains(t, reason, "zip", "the reason names the nested field")
						assert.Equal(t, int64(0), num(t, r.Row, "kafka_partition"), "the mixed batch's partition")
					case nestedID:
						assert.Contains(t, reason, "zip", "the reason names the nested field")
					case typedID:
						assert.Contains(t, reason, "id", "the reason names the field whose type changed")
					}
				}
				assert.Equal(t, map[int]int{bothID: 10, nestedID: 3, typedID: 2}, byID,
					"the mixed batch's v2 records, the nested and the typed ones are dead-lettered, once each (schema ids %d, %d, %d)", bothID, nestedID, typedID)
			})
		})
	}
}

const multiMessageProtoV1 = `syntax = "proto3";
package shop;

message Meta {
  string source = 1;
  int64 seq = 2;
}

message Event {
  int64 id = 1;
  string name = 2;
  Addr addr = 3;
  message Addr { string city = 1; }
}
`

// multiMessageProtoV2 adds a field to each message: Event's is added to
// the table, Meta's is not (no record is a Meta).
const multiMessageProtoV2 = `syntax = "proto3";
package shop;

message Meta {
  string source = 1;
  int64 seq = 2;
  string extra = 3;
}

message Event {
  int64 id = 1;
  string name = 2;
  Addr addr = 3;
  optional string channel = 4;
  message Addr { string city = 1; }
}
`

// TestSchemaChangeProtobufMultiMessage: a .proto with two top-level
// messages, Meta first, then Event, which the records are (message index
// 1): the table is created with Event's columns and a second version adds
// Event's new field, never Meta's; every row reads back. `gateway tables
// plan` follows value.message: shop.Event, and without it refuses the
// file, naming both messages.
func TestSchemaChangeProtobufMultiMessage(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	topic := uniqueName("sc-multi")
	table := e.Name + ".sc_multi"
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: protobuf}
    follow_schema: {create: true, add_columns: true, buckets: 2}
`, topic, table)})
	event := []string{"--message", "shop.Event"}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "protobuf", multiMessageProtoV1, persons(0, 20, false, false), event...)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, 20, res.Delivered)
	assert.Equal(t, personColumns, e.tableColumns(t, "sc_multi"), "Event's columns, not Meta's")

	res = serdeProduce(t, g.KafkaAddr, registry, topic, "protobuf", multiMessageProtoV2, persons(100, 20, true, false), event...)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, 20, res.Delivered)
	assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_multi"), "Event's new field, not Meta's")
	requirePersonRows(t, e.scanLog(t, table), slices.Concat(idRange(0, 20), idRange(100, 20)), func(id int64) bool { return id >= 100 })

	// tables plan has no record to take the message from: value.message
	// names it.
	bin, err := gatewayBinary()
	require.NoError(t, err)
	plan := func(value string) (string, error) {
		cfg := gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s.sc_planned
    value: %s
    follow_schema: {buckets: 1}
`, topic, e.Name, value)}
		file := filepath.Join(t.TempDir(), "gateway.yaml")
		require.NoError(t, os.WriteFile(file, []byte(cfg.yaml(freePort(t), freePort(t))), 0o644))
		var out bytes.Buffer
		c := exec.CommandContext(testContext(t), bin, "tables", "plan", "-config", file)
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		return out.String(), err
	}
	out, err := plan(fmt.Sprintf("{format: protobuf, subject: %s-value, message: shop.Event}", topic))
	require.NoError(t, err, out)
	t.Logf("tables plan with value.message:\n%s", out)
	assert.Contains(t, out, "CREATE TABLE "+e.Name+".sc_planned (")
	assert.Contains(t, out, "id BIGINT")
	assert.Contains(t, out, "channel STRING")
	assert.NotContains(t, out, "source", "nothing of Meta")
	assert.NotContains(t, out, "extra", "nothing of Meta")
	out, err = plan(fmt.Sprintf("{format: protobuf, subject: %s-value}", topic))
	require.Error(t, err, "several messages and no value.message: %s", out)
	t.Logf("tables plan without value.message: %v\n%s", err, out)
	assert.Contains(t, out, "shop.Meta", "the candidates are named")
	assert.Contains(t, out, "shop.Event", "the candidates are named")
	assert.NotContains(t, out, "CREATE TABLE")
}

// TestSchemaChangeApicurioJavaSerde: Apicurio's Java Avro serde (3.1.7,
// auto-register, contentId prefix) writes v1, whose records create the
// table, then v2 with an optional top-level field and an optional field
// inside the nested record: v2's records are written with the new column
// and without the nested field (one WARN, counted), v1 rows read null in
// the new column.
func TestSchemaChangeApicurioJavaSerde(t *testing.T) {
	p := apicurioSerde3.producer(t)
	e := newEnv(t)
	registry := registrytest.URL(t)
	native := strings.TrimSuffix(registry, "/apis/ccompat/v7") + "/apis/registry/v3"
	topic := uniqueName("sc-java")
	table := e.Name + ".sc_java"
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - name: java
    topic: %s
    table: %s
    value: {format: avro}
    follow_schema: {create: true, add_columns: true, buckets: 2}
`, topic, table)})
	serde := []string{"apicurio.registry.url=" + native, "apicurio.registry.auto-register=true"}
	avroSchema := schemaChangeFormats()[0].schema

	// Avro's JSON encoding: a union's branch is named.
	v1 := persons(0, 30, false, false)
	p.produce(t, g.KafkaAddr, topic, avroSchema(false, false), v1, serde...)
	assert.Equal(t, personColumns, e.tableColumns(t, "sc_java"))

	var v2 []map[string]any
	for _, r := range persons(100, 30, true, true) {
		addr := r["addr"].(map[string]any)
		addr["zip"] = map[string]any{"string": addr["zip"]}
		r["channel"] = map[string]any{"string": r["channel"]}
		v2 = append(v2, r)
	}
	p.produce(t, g.KafkaAddr, topic, avroSchema(true, true), v2, serde...)
	assert.Equal(t, personColumnsChannel, e.tableColumns(t, "sc_java"))
	requireFieldsNotAdded(t, g, "java", table, "addr.zip", 1, 1)
	requirePersonRows(t, e.scanLog(t, table), slices.Concat(idRange(0, 30), idRange(100, 30)), func(id int64) bool { return id >= 100 })
}

// TestSchemaChangePrimaryKeyFromKey: an Avro- and a Protobuf-keyed topic
// (Confluent's Python serializers for key and value) on routes with
// follow_schema.primary_key_from_key: the first records create a
// primary-key table whose key is the key schema's fields (NOT NULL), the
// value's fields the other columns; records of the same key upsert, and
// the changelog read back with pyfluss holds one insert per key and ends
// at each key's latest value.
func TestSchemaChangePrimaryKeyFromKey(t *testing.T) {
	registry := registrytest.URL(t)
	for _, tc := range []struct {
		format, serde, key, value, keyFile string
		extra                              []string
	}{
		{
			format: "avro", serde: "avro", keyFile: "key.avsc",
			key: `{"type": "record", "name": "CustomerKey", "namespace": "shop", "fields": [
  {"name": "id", "type": "long"}, {"name": "region", "type": "string"}]}`,
			value: `{"type": "record", "name": "Customer", "namespace": "shop", "fields": [
  {"name": "name", "type": "string"}, {"name": "tier", "type": "int"}]}`,
		},
		{
			format: "protobuf", serde: "protobuf", keyFile: "key.proto",
			key:   "syntax = \"proto3\";\npackage shop;\nmessage CustomerKey { int64 id = 1; string region = 2; }\n",
			value: "syntax = \"proto3\";\npackage shop;\nmessage Customer { string name = 1; int32 tier = 2; }\n",
			extra: []string{"--message", "shop.Customer", "--key-message", "shop.CustomerKey"},
		},
	} {
		t.Run(tc.format, func(t *testing.T) {
			schemaChangePrimaryKeyFromKey(t, registry, tc.format, tc.serde, tc.key, tc.value, tc.keyFile, tc.extra)
		})
	}
}

func schemaChangePrimaryKeyFromKey(t *testing.T, registry, format, serde, keySchema, valueSchema, keyName string, extra []string) {
	e := newEnv(t)
	topic := uniqueName("sc-pk")
	table := e.Name + ".sc_customers"
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    key: {format: %s}
    value: {format: %s}
    follow_schema: {create: true, primary_key_from_key: true, buckets: 2}
`, topic, table, format, format)})
	keyFile := filepath.Join(t.TempDir(), keyName)
	require.NoError(t, os.WriteFile(keyFile, []byte(keySchema), 0o644))
	region := func(i int) string { return []string{"eu", "us"}[i%2] }
	line := func(i int, version string, tier int) map[string]any {
		return map[string]any{"key": map[string]any{"id": i, "region": region(i)},
			"value": map[string]any{"name": fmt.Sprintf("%s-%d", version, i), "tier": tier}}
	}
	keyed := append([]string{"--envelope", "--key-format", serde, "--key-schema-file", keyFile}, extra...)

	var first []map[string]any
	for i := range 10 {
		first = append(first, line(i, "v1", i))
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, serde, valueSchema, first, keyed...)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, 10, res.Delivered)

	path := fluss.TablePath{Database: e.Name, Table: "sc_customers"}
	e.Client.InvalidateTableInfo(path)
	info, err := e.Client.GetTableInfo(testContext(t), path)
	require.NoError(t, err)
	assert.Equal(t, []string{"id", "region"}, info.Descriptor.Schema.PrimaryKey, "the key schema's fields")
	assert.ElementsMatch(t, []string{"id BIGINT NOT NULL", "region STRING NOT NULL", "name STRING", "tier INTEGER"}, columnList(info))
	assert.Equal(t, 2, info.Descriptor.BucketCount)

	// Every key again (v2), five new keys, then keys 0-2 a third time (v3),
	// in one producer run: the same key's records keep their order.
	var second []map[string]any
	for i := range 15 {
		second = append(second, line(i, "v2", 100+i))
	}
	for i := range 3 {
		second = append(second, line(i, "v3", 200+i))
	}
	res = serdeProduce(t, g.KafkaAddr, registry, topic, serde, valueSchema, second, keyed...)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	require.Equal(t, len(second), res.Delivered)

	type key struct {
		id     int64
		region string
	}
	state := map[key]map[string]json.RawMessage{}
	changes := map[string]int{}
	for _, r := range e.scanLog(t, table) { // the changelog, in offset order per bucket
		k := key{num(t, r.Row, "id"), str(t, r.Row, "region")}
		changes[r.ChangeType]++
		switch r.ChangeType {
		case "+I":
			assert.NotContains(t, state, k, "key %v inserted twice", k)
			state[k] = r.Row
		case "+U":
			assert.Contains(t, state, k, "key %v updated before its insert", k)
			state[k] = r.Row
		case "-U":
		default:
			assert.Fail(t, "unexpected change", "%s %v", r.ChangeType, r.Row)
		}
	}
	assert.Equal(t, 15, changes["+I"], "one insert per key: %v", changes)
	assert.Equal(t, 13, changes["+U"], "one update per later record of a key: %v", changes)
	require.Len(t, state, 15)
	for i := range 15 {
		row := state[key{int64(i), region(i)}]
		require.NotNil(t, row, "key %d", i)
		version, tier := "v2", 100+i
		if i < 3 {
			version, tier = "v3", 200+i
		}
		assert.Equal(t, fmt.Sprintf("%s-%d", version, i), str(t, row, "name"), "key %d: the latest value", i)
		assert.Equal(t, int64(tier), num(t, row, "tier"), "key %d", i)
	}
}
