package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// TestReloadPicksUpAddedColumns: a column added to a table (ALTER TABLE
// ADD COLUMN, here through the Fluss client) is filled after a reload,
// while a producer keeps writing across it: every record lands once, rows
// written before read null there, rows after carry the value (read back
// with pyfluss). Before this, writes after such a reload failed until a
// restart: the table's batches were still built for the old schema.
func TestReloadPicksUpAddedColumns(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, table{name: "grows", buckets: 2, columns: []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String())}})
	topic := "grows-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})
	ctx := testContext(t)
	cl := newProducer(t, g.KafkaAddr)

	// A producer that never stops while the table changes.
	var sent atomic.Int64
	var failed atomic.Value
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id": %d, "name": "n%d", "extra": "x%d"}`, i, i, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				failed.Store(err)
				return
			}
			sent.Store(i + 1)
		}
	}()
	require.NoError(t, waitFor(ctx, time.Minute, func() bool { return sent.Load() >= 50 }))

	path := fluss.TablePath{Database: e.Name, Table: strings.TrimPrefix(tbl, e.Name+".")}
	require.NoError(t, e.Client.AddColumns(ctx, path, []fluss.Column{col("extra", fluss.String())}))
	g.RequireSignal(t, syscall.SIGHUP)
	require.NoError(t, waitFor(ctx, 2*time.Minute, func() bool {
		return g.RequireMetrics(t).Sum("fluss_gateway_config_reloads_total", `result="success"`) == 1
	}), "reload not applied; log:\n%s", g.Logs())
	// The one record in flight while the reload was applied (ProduceSync:
	// one at a time) may have been converted with either schema.
	afterReload := sent.Load() + 1
	require.NoError(t, waitFor(ctx, time.Minute, func() bool { return sent.Load() >= afterReload+50 }), "the producer stalled: %v", failed.Load())
	close(stop)
	<-done
	require.Nil(t, failed.Load(), "a write failed across the schema change")
	total := sent.Load()

	rows := e.scanLog(t, tbl)
	seen := map[int64]int{}
	var filled, null int
	for _, r := range rows {
		id := num(t, r.Row, "id")
		seen[id]++
		_, has := r.Row["extra"] // a batch of the older schema has no such column
		switch {
		case !has || isNull(r.Row, "extra"):
			null++
			assert.Less(t, id, afterReload, "id %d, written after the reload, has no extra", id)
		default:
			filled++
			assert.Equal(t, fmt.Sprintf("x%d", id), str(t, r.Row, "extra"))
			assert.GreaterOrEqual(t, id, int64(50), "id %d was written before the column existed", id)
		}
	}
	for id := range total {
		assert.Equal(t, 1, seen[id], "id %d", id)
	}
	assert.Len(t, rows, int(total))
	assert.GreaterOrEqual(t, null, 50, "rows before the change read null")
	assert.GreaterOrEqual(t, filled, 50, "rows after the reload carry the new column")
	t.Logf("%d records: %d with extra null, %d filled", total, null, filled)
}

// registerSchema registers an Avro schema under subject through the
// registry's Confluent-compatible API and returns its id.
func registerSchema(t *testing.T, registry, subject, schema string) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]string{"schema": schema})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, registry+"/subjects/"+subject+"/versions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "register %s: %s", subject, out)
	var id struct{ ID int64 }
	require.NoError(t, json.Unmarshal(out, &id))
	return id.ID
}

// TestTablesPlanApplyFollowAvroSubject: `gateway tables plan|apply` against
// real Apicurio and Fluss. With no table, plan prints the CREATE TABLE the
// subject's latest Avro schema makes and apply creates it (the gateway's
// route binds to it and every record lands); a new schema version adding a
// field plans and applies an ADD COLUMN, picked up by a reload (v1 rows
// null there, v2 rows carry the value); a field whose type changed is
// reported, naming field and table, and nothing is applied.
func TestTablesPlanApplyFollowAvroSubject(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	topic := uniqueName("follow")
	subject := topic + "-value"
	table := e.Name + ".follow_orders"
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: avro, subject: %s}
    metadata: {offset: kafka_offset}
    follow_schema: {buckets: 2}
`, topic, table, subject)}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "gateway.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg.yaml(freePort(t), freePort(t))), 0o644))
	bin, err := gatewayBinary()
	require.NoError(t, err)
	tables := func(cmd string) (string, error) {
		var stdout, stderr bytes.Buffer
		c := exec.CommandContext(testContext(t), bin, "tables", cmd, "-config", cfgFile)
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		return stdout.String() + stderr.String(), err
	}

	registerSchema(t, registry, subject, orderAvro)
	out, err := tables("plan")
	require.NoError(t, err, out)
	assert.Contains(t, out, "CREATE TABLE "+table+" (")
	assert.Contains(t, out, "amount DECIMAL(10, 2)")
	assert.Contains(t, out, "ts TIMESTAMP_WITH_LOCAL_TIME_ZONE(3)")
	assert.Contains(t, out, "kafka_offset BIGINT")
	_, err = e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_orders"})
	require.ErrorIs(t, err, fluss.ErrTableNotExist, "plan changes nothing")
	out, err = tables("apply")
	require.NoError(t, err, out)
	info, err := e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_orders"})
	require.NoError(t, err)
	assert.Equal(t, 2, info.Descriptor.BucketCount)
	out, err = tables("plan")
	require.NoError(t, err, out)
	assert.Contains(t, out, "nothing to do")

	g := startGateway(t, cfg)
	const n = 20
	var recs []map[string]any
	for i := range n {
		recs = append(recs, avroOrder(i))
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvro, recs)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)

	// v2: note gone, channel new.
	registerSchema(t, registry, subject, orderAvroV2)
	out, err = tables("plan")
	require.NoError(t, err, out)
	assert.Contains(t, out, "ALTER TABLE "+table+" ADD COLUMN channel STRING;")
	out, err = tables("apply")
	require.NoError(t, err, out)
	g.RequireSignal(t, syscall.SIGHUP)
	require.NoError(t, waitFor(testContext(t), 2*time.Minute, func() bool {
		return g.RequireMetrics(t).Sum("fluss_gateway_config_reloads_total", `result="success"`) == 1
	}), "reload not applied; log:\n%s", g.Logs())
	v2 := []map[string]any{{"id": 100, "name": "v2", "amount": map[string]any{"$decimal": "7.50"}, "ts": 1_704_067_200_000,
		"day": 19_723, "flag": true, "score": 1.5, "status": "PAID", "channel": "app"}}
	res = serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvroV2, v2)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)

	rows := e.scanLog(t, table)
	require.Len(t, rows, n+1)
	for _, r := range rows {
		id := num(t, r.Row, "id")
		_, has := r.Row["channel"]
		if id == 100 {
			assert.Equal(t, "app", str(t, r.Row, "channel"))
			continue
		}
		assert.True(t, !has || isNull(r.Row, "channel"), "v1 order %d has no channel", id)
		assert.Equal(t, fmt.Sprintf("order-%d", id), str(t, r.Row, "name"))
	}

	// v3 changes a field's type: reported, nothing applied.
	v3 := strings.Replace(orderAvroV2, `{"name": "score", "type": "double"}`, `{"name": "score", "type": "string"}`, 1)
	require.NotEqual(t, orderAvroV2, v3)
	registerSchema(t, registry, subject, v3)
	out, err = tables("apply")
	require.Error(t, err, out)
	assert.Contains(t, out, "field score is STRING in the writer schema, but column score of "+table+" is DOUBLE")
	info, err = e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_orders"})
	require.NoError(t, err)
	assert.Equal(t, "DOUBLE", info.Descriptor.Schema.Columns[slices.IndexFunc(info.Descriptor.Schema.Columns,
		func(c fluss.Column) bool { return c.Name == "score" })].Type.Root.String())
}

// TestFollowSchemaAddsColumnsTwoInstances: with follow_schema.add_columns,
// two gateway instances (one exactly once, one at least once) receive records of a new Avro schema version (a
// field the table lacks) at the same time, from Confluent's Python
// serializer: both add or find the column, no record fails, v1 rows read
// null there and every v2 row carries its value (read back with pyfluss).
func TestFollowSchemaAddsColumnsTwoInstances(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	spec := orderTable("follow_auto")
	spec.columns = slices.DeleteFunc(slices.Clone(spec.columns), func(c fluss.Column) bool { return c.Name == "channel" })
	table := e.createTable(t, spec)
	topic := uniqueName("follow-auto")
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: avro}
    follow_schema: {add_columns: true}
`, topic, table)}
	// The second instance writes at least once (the merged path), the
	// first exactly once: both paths add columns.
	merged := cfg
	merged.Routes = strings.Replace(cfg.Routes, "follow_schema: {add_columns: true}", "follow_schema: {add_columns: true}\n    exactly_once: false", 1)
	require.NotEqual(t, cfg.Routes, merged.Routes)
	a, b := startGateway(t, cfg), startGateway(t, merged)

	var v1 []map[string]any
	for i := range 10 {
		v1 = append(v1, avroOrder(i))
	}
	res := serdeProduce(t, a.KafkaAddr, registry, topic, "avro", orderAvro, v1)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)

	v2 := func(from int) []map[string]any {
		var recs []map[string]any
		for i := from; i < from+10; i++ {
			recs = append(recs, map[string]any{"id": i, "name": fmt.Sprintf("order-%d", i), "amount": map[string]any{"$decimal": "7.50"},
				"ts": 1_704_067_200_000, "day": 19_723, "flag": true, "score": 1.5, "status": "PAID", "channel": fmt.Sprintf("app-%d", i)})
		}
		return recs
	}
	results := make(chan serdeResult, 2)
	for i, g := range []*gatewaytest.Process{a, b} {
		go func() { results <- serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvroV2, v2(100*(i+1))) }()
	}
	for range 2 {
		r := <-results
		require.Zero(t, r.ErrorCount, "%+v", r.Errors)
		require.Equal(t, 10, r.Delivered)
	}

	info, err := e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_auto"})
	require.NoError(t, err)
	names := make([]string, 0, len(info.Descriptor.Schema.Columns))
	for _, c := range info.Descriptor.Schema.Columns {
		names = append(names, c.Name)
	}
	assert.Equal(t, "channel", names[len(names)-1], "the new field, appended once: %v", names)
	rows := e.scanLog(t, table)
	require.Len(t, rows, 30)
	for _, r := range rows {
		id := num(t, r.Row, "id")
		_, has := r.Row["channel"]
		if id >= 100 {
			assert.Equal(t, fmt.Sprintf("app-%d", id), str(t, r.Row, "channel"), "v2 order %d", id)
		} else {
			assert.True(t, !has || isNull(r.Row, "channel"), "v1 order %d", id)
		}
	}
	assert.Contains(t, names, "ignored", "v1's field the table lacked was added too")
	added, found := 0, 0
	for _, g := range []*gatewaytest.Process{a, b} {
		if strings.Contains(g.Logs(), "columns added to follow a writer schema") {
			added++
		}
		if strings.Contains(g.Logs(), "added by another writer") {
			found++
		}
	}
	assert.GreaterOrEqual(t, added, 1, "an instance added the column")
	counted := a.RequireMetrics(t).Sum("fluss_gateway_route_columns_added_total") + b.RequireMetrics(t).Sum("fluss_gateway_route_columns_added_total")
	assert.GreaterOrEqual(t, counted, float64(2), "ignored and channel added, and counted")
	t.Logf("instances that added the column: %d, that found it added by the other: %d; table columns %v, schema id %d", added, found, names, info.SchemaID)
	for _, g := range []*gatewaytest.Process{a, b} {
		assert.NotContains(t, g.Logs(), "columns for a writer schema not added", "no batch failed for it")
	}

	// v3 changes a field's type, which Fluss cannot follow: its records are
	// refused with a reason naming the field and both types; nothing is
	// added, and v2 records still land.
	v3 := strings.Replace(orderAvroV2, `{"name": "score", "type": "double"}`, `{"name": "score", "type": "string"}`, 1)
	require.NotEqual(t, orderAvroV2, v3)
	bad := v2(300)
	for _, r := range bad {
		r["score"] = "high"
	}
	res = serdeProduce(t, a.KafkaAddr, registry, topic, "avro", v3, bad[:3])
	assert.Equal(t, 3, res.ErrorCount, "v3 records refused: %+v", res)
	assert.Contains(t, a.Logs(), "Avro string cannot fill DOUBLE", "the reason names the types")
	assert.Contains(t, a.Logs(), "table="+table, "and the table")
	assert.Regexp(t, `batch rejected.*column \\"score\\"`, a.Logs(), "and the field")
	res = serdeProduce(t, b.KafkaAddr, registry, topic, "avro", orderAvroV2, v2(400)[:2])
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	info, err = e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_auto"})
	require.NoError(t, err)
	assert.Len(t, info.Descriptor.Schema.Columns, len(names), "v3 added nothing")
	assert.Len(t, e.scanLog(t, table), 32, "the two later v2 records, none of v3")
}

// TestFollowSchemaCreatesTableAvro: a route whose table does not exist,
// with follow_schema.create and add_columns: the first Avro records
// (Confluent's Python serializer, real Apicurio) create the table from
// their writer schema, and a later schema version's new field is added;
// every record is read back with its values.
func TestFollowSchemaCreatesTableAvro(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	topic := uniqueName("follow-create")
	table := e.Name + ".follow_created"
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: avro}
    follow_schema: {create: true, add_columns: true, buckets: 3}
`, topic, table)})
	require.Equal(t, int16(0), metadataError(t, g.KafkaAddr, topic), "the topic is served before its table exists")
	_, err := e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_created"})
	require.ErrorIs(t, err, fluss.ErrTableNotExist)

	var v1 []map[string]any
	for i := range 10 {
		v1 = append(v1, avroOrder(i))
	}
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvro, v1)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	v2 := []map[string]any{{"id": 100, "name": "v2", "amount": map[string]any{"$decimal": "7.50"}, "ts": 1_704_067_200_000,
		"day": 19_723, "flag": true, "score": 1.5, "status": "PAID", "channel": "app"}}
	res = serdeProduce(t, g.KafkaAddr, registry, topic, "avro", orderAvroV2, v2)
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)

	info, err := e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_created"})
	require.NoError(t, err)
	assert.Equal(t, 3, info.Descriptor.BucketCount)
	var got []string
	for _, c := range info.Descriptor.Schema.Columns {
		got = append(got, c.Name+" "+c.Type.String())
	}
	assert.Equal(t, []string{"id BIGINT", "name STRING", "amount DECIMAL(10, 2)", "ts TIMESTAMP_WITH_LOCAL_TIME_ZONE(3)", "day DATE",
		"flag BOOLEAN", "score DOUBLE", "status STRING", "note STRING", "ignored INTEGER", "channel STRING"}, got)
	rows := e.scanLog(t, table)
	require.Len(t, rows, 11)
	for _, r := range rows {
		id := num(t, r.Row, "id")
		if id == 100 {
			assert.Equal(t, "app", str(t, r.Row, "channel"))
			continue
		}
		assert.Equal(t, fmt.Sprintf("order-%d", id), str(t, r.Row, "name"))
		assert.Equal(t, fmt.Sprintf("%d.%02d", id, id%100), str(t, r.Row, "amount"))
	}
	assert.Contains(t, g.Logs(), "table created from a writer schema")
}

// TestFollowSchemaCreatesAndEvolvesProtobufAndJSONSchema: as the Avro
// tests, with Confluent's Python Protobuf and JSON Schema serializers
// against real Apicurio: the first records create the table, a second
// version's new field becomes a column, a third version that changes a
// field's type is refused record by record and changes nothing.
func TestFollowSchemaCreatesAndEvolvesProtobufAndJSONSchema(t *testing.T) {
	registry := registrytest.URL(t)
	for _, tc := range []struct {
		format, serde string
		v1, v2, v3    string
		extra         []string
		bad           func(i int) map[string]any
	}{
		{
			format: "protobuf", serde: "protobuf", extra: []string{"--message", "shop.Item"},
			v1:  "syntax = \"proto3\";\npackage shop;\nmessage Item { int64 id = 1; string name = 2; }\n",
			v2:  "syntax = \"proto3\";\npackage shop;\nmessage Item { int64 id = 1; string name = 2; string channel = 3; }\n",
			v3:  "syntax = \"proto3\";\npackage shop;\nmessage Ref { int64 n = 1; }\nmessage Item { Ref id = 1; string name = 2; string channel = 3; }\n",
			bad: func(i int) map[string]any { return map[string]any{"id": map[string]any{"n": i}, "name": "bad"} },
		},
		{
			format: "json_schema", serde: "json",
			v1:  `{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id"]}`,
			v2:  `{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "channel": {"type": "string"}}, "required": ["id"]}`,
			v3:  `{"type": "object", "properties": {"id": {"type": "object", "properties": {"n": {"type": "integer"}}}, "name": {"type": "string"}}}`,
			bad: func(i int) map[string]any { return map[string]any{"id": map[string]any{"n": i}, "name": "bad"} },
		},
	} {
		t.Run(tc.format, func(t *testing.T) {
			e := newEnv(t)
			topic := uniqueName("follow-" + tc.serde)
			table := e.Name + ".follow_items"
			path := fluss.TablePath{Database: e.Name, Table: "follow_items"}
			g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: %s}
    follow_schema: {create: true, add_columns: true, buckets: 2}
`, topic, table, tc.format)})
			recs := func(from, n int, channel bool) []map[string]any {
				var out []map[string]any
				for i := from; i < from+n; i++ {
					r := map[string]any{"id": i, "name": fmt.Sprintf("n%d", i)}
					if channel {
						r["channel"] = fmt.Sprintf("c%d", i)
					}
					out = append(out, r)
				}
				return out
			}
			res := serdeProduce(t, g.KafkaAddr, registry, topic, tc.serde, tc.v1, recs(0, 5, false), tc.extra...)
			require.Zero(t, res.ErrorCount, "v1: %+v", res.Errors)
			info, err := e.Client.GetTableInfo(testContext(t), path)
			require.NoError(t, err, "the first records created the table")
			assert.Equal(t, []string{"id BIGINT", "name STRING"}, columnList(info))

			res = serdeProduce(t, g.KafkaAddr, registry, topic, tc.serde, tc.v2, recs(100, 5, true), tc.extra...)
			require.Zero(t, res.ErrorCount, "v2: %+v", res.Errors)
			e.Client.InvalidateTableInfo(path)
			info, err = e.Client.GetTableInfo(testContext(t), path)
			require.NoError(t, err)
			assert.Equal(t, []string{"id BIGINT", "name STRING", "channel STRING"}, columnList(info))

			res = serdeProduce(t, g.KafkaAddr, registry, topic, tc.serde, tc.v3, []map[string]any{tc.bad(200), tc.bad(201)}, tc.extra...)
			assert.Equal(t, 2, res.ErrorCount, "v3 records refused: %+v", res)
			assert.Contains(t, g.Logs(), "batch rejected")

			rows := e.scanLog(t, table)
			require.Len(t, rows, 10, "v1 and v2 records, none of v3")
			for _, r := range rows {
				id := num(t, r.Row, "id")
				assert.Equal(t, fmt.Sprintf("n%d", id), str(t, r.Row, "name"))
				_, has := r.Row["channel"]
				if id >= 100 {
					assert.Equal(t, fmt.Sprintf("c%d", id), str(t, r.Row, "channel"))
				} else {
					assert.True(t, !has || isNull(r.Row, "channel"), "v1 record %d", id)
				}
			}
		})
	}
}

// columnList renders a table's columns as "name TYPE".
func columnList(info *fluss.TableInfo) []string {
	var out []string
	for _, c := range info.Descriptor.Schema.Columns {
		out = append(out, c.Name+" "+c.Type.String())
	}
	return out
}

// TestFollowSchemaWritesRecordsWithoutNestedField: a schema version that
// adds a field inside a record (a ROW column), which Fluss cannot add, no
// longer stops the producer: under unknown_fields' default (ignore) its
// records are written without that field, the table is unchanged, and the
// field not added is logged once per writer schema (a WARN naming route,
// table and field) and counted
// (fluss_gateway_route_writer_fields_not_added_total); the refusal metric
// is gone. Every row reads back, the nested values without the new field.
func TestFollowSchemaWritesRecordsWithoutNestedField(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	topic := uniqueName("follow-nested")
	table := e.Name + ".follow_nested"
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - name: nested
    topic: %s
    table: %s
    value: {format: avro}
    follow_schema: {create: true, add_columns: true, buckets: 1}
`, topic, table)})
	const v1 = `{"type": "record", "name": "Person", "namespace": "shop", "fields": [
  {"name": "id", "type": "long"},
  {"name": "addr", "type": {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}]}}]}`
	v2 := strings.Replace(v1, `[{"name": "city", "type": "string"}]`, `[{"name": "city", "type": "string"}, {"name": "zip", "type": "string"}]`, 1)
	require.NotEqual(t, v1, v2)
	res := serdeProduce(t, g.KafkaAddr, registry, topic, "avro", v1, []map[string]any{{"id": 1, "addr": map[string]any{"city": "Lyon"}}})
	require.Zero(t, res.ErrorCount, "%+v", res.Errors)
	nested := []map[string]any{{"id": 2, "addr": map[string]any{"city": "Nice", "zip": "06000"}}, {"id": 3, "addr": map[string]any{"city": "Pau", "zip": "64000"}}}
	res = serdeProduce(t, g.KafkaAddr, registry, topic, "avro", v2, nested)
	require.Zero(t, res.ErrorCount, "the records of the schema with a new nested field are written: %+v", res.Errors)
	require.Equal(t, 2, res.Delivered)
	require.NoError(t, waitFor(testContext(t), 30*time.Second, func() bool {
		return strings.Contains(g.Logs(), "writer schema field not added to the table")
	}), "no WARN; log:\n%s", g.Logs())
	var warned []string
	for line := range strings.Lines(g.Logs()) {
		if strings.Contains(line, "writer schema field not added to the table") {
			warned = append(warned, line)
		}
	}
	require.Len(t, warned, 1, "logged once for the writer schema")
	assert.Contains(t, warned[0], "level=WARN")
	assert.Contains(t, warned[0], "route=nested")
	assert.Contains(t, warned[0], "table="+table)
	assert.Contains(t, warned[0], "addr.zip")
	assert.NotContains(t, g.Logs(), "writer schema refused")
	m := g.RequireMetrics(t)
	assert.Equal(t, float64(1), m.Sum("fluss_gateway_route_writer_fields_not_added_total", `route="nested"`))
	assert.False(t, m.Has("fluss_gateway_route_writer_schemas_refused_total"), "the refusal metric is gone")
	info, err := e.Client.GetTableInfo(testContext(t), fluss.TablePath{Database: e.Name, Table: "follow_nested"})
	require.NoError(t, err)
	assert.Equal(t, []string{"id BIGINT", "addr ROW<city STRING>"}, columnList(info))
	rows := e.scanLog(t, table)
	require.Len(t, rows, 3)
	cities := map[int64]string{1: "Lyon", 2: "Nice", 3: "Pau"}
	for _, r := range rows {
		id := num(t, r.Row, "id")
		require.Contains(t, cities, id)
		assert.JSONEq(t, fmt.Sprintf(`{"city": %q}`, cities[id]), string(r.Row["addr"]), "id %d: the ROW without the new field", id)
		delete(cities, id)
	}
	assert.Empty(t, cities, "every record read back once")
}
