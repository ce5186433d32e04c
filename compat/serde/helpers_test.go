package serde_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flussdb"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// records is how many records each test serializes and produces.
const records = 20

// statuses are the enum's symbols (Avro enum, Protobuf enum, JSON Schema
// enum), in declaration order.
var statuses = []string{"NEW", "PAID", "SHIPPED"}

// order is one test record in Go terms; each format's test turns it into
// its serializer's input, and checkRows compares the rows with it.
type order struct {
	id     int64
	name   string
	score  float64
	flag   bool
	qty    int32
	note   *string // null for every third record
	tag    *string // null for every other record
	ts     time.Time
	status string
}

// wantOrder is record i: every field varies with i, negative and large
// numbers and non-ASCII text included, nullable fields both set and unset.
func wantOrder(i int) order {
	o := order{
		id:     1<<40 + int64(i),
		name:   fmt.Sprintf("order-%d ü€", i),
		score:  float64(i)*1.25 - 3.5,
		flag:   i%2 == 0,
		qty:    int32(i*7 - 50),
		ts:     time.UnixMilli(1_704_067_200_000 + int64(i)*1_001).UTC(),
		status: statuses[i%len(statuses)],
	}
	if i%3 != 0 {
		o.note = ptr(fmt.Sprintf("note %d", i))
	}
	if i%2 == 1 {
		o.tag = ptr(fmt.Sprintf("tag-%d", i))
	}
	return o
}

func ptr[T any](v T) *T { return &v }

// orderColumns is the table every test writes: one column per field.
var orderColumns = []fluss.Column{
	{Name: "id", Type: fluss.BigInt()},
	{Name: "name", Type: fluss.String()},
	{Name: "score", Type: fluss.Double()},
	{Name: "flag", Type: fluss.Boolean()},
	{Name: "qty", Type: fluss.Int()},
	{Name: "note", Type: fluss.String()},
	{Name: "tag", Type: fluss.String()},
	{Name: "ts", Type: fluss.TimestampLTZ(3)},
	{Name: "status", Type: fluss.String()},
}

// env is one test's database on the cluster (internal/flussdb).
type env struct{ *flussdb.DB }

func newEnv(t *testing.T) *env { return &env{flussdb.New(t, "compat_serde")} }

// createOrderTable creates a log table of orderColumns in the env's
// database, waits until its buckets have leaders, and returns "db.table".
func (e *env) createOrderTable(t *testing.T, name string) string {
	t.Helper()
	return e.CreateTable(t, name, &fluss.TableDescriptor{Schema: fluss.Schema{Columns: orderColumns}, BucketCount: 2})
}

// scanLog reads every row of the table out of Fluss with pyfluss.
func (e *env) scanLog(t *testing.T, table string) []map[string]json.RawMessage {
	t.Helper()
	scanned := e.ScanLog(t, table)
	rows := make([]map[string]json.RawMessage, len(scanned))
	for i, r := range scanned {
		rows[i] = r.Row
	}
	return rows
}

// startGateway starts the race-built gateway binary with one route of the
// registry format from topic to table, against the registry.
func startGateway(t *testing.T, e *env, registry, topic, table, format string) *gatewaytest.Process {
	t.Helper()
	bin, err := gatewaytest.Binary(true)
	require.NoError(t, err)
	return gatewaytest.StartTest(t, bin, gatewaytest.Config{
		Bootstrap:       e.Bootstrap,
		SchemaRegistry:  registry,
		RequestTimeout:  "30s",
		DialTimeout:     "10s",
		Linger:          "20ms",
		DeliveryTimeout: "1m",
		LogLevel:        "info",
		Deadline:        "30s",
		Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: %s}
`, topic, table, format),
	})
}

// newRegistryClient is confluent-kafka-go's schema-registry client of the
// registry.
func newRegistryClient(t *testing.T, registry string) schemaregistry.Client {
	t.Helper()
	c, err := schemaregistry.NewClient(schemaregistry.NewConfig(registry))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// requireRegistered checks that the serializer auto-registered the value
// schema under the topic's subject (TopicNameStrategy) with the given type,
// and that every value carries its id in the Confluent framing (magic byte
// 0, 4-byte big-endian id).
func requireRegistered(t *testing.T, c schemaregistry.Client, topic, schemaType string, values [][]byte) {
	t.Helper()
	md, err := c.GetLatestSchemaMetadata(topic + "-value")
	require.NoError(t, err)
	want := schemaType
	if want == "AVRO" {
		want = "" // Confluent's API leaves out the default type
	}
	assert.Contains(t, []string{want, schemaType}, md.SchemaType, "registered schema type")
	for i, v := range values {
		require.GreaterOrEqual(t, len(v), 5, "value %d", i)
		require.Equal(t, byte(0), v[0], "value %d: magic byte", i)
		require.Equal(t, md.ID, int(binary.BigEndian.Uint32(v[1:5])), "value %d: schema id", i)
	}
	t.Logf("subject %s-value: schema id %d, version %d, type %q:\n%s", topic, md.ID, md.Version, md.SchemaType, md.Schema)
}

// produce sends the values to the gateway with a confluent-kafka-go
// producer (librdkafka: idempotent, acks=all) and requires every delivery
// report to succeed.
func produce(t *testing.T, addr, topic string, values [][]byte) {
	t.Helper()
	p, err := ckafka.NewProducer(&ckafka.ConfigMap{
		"bootstrap.servers":  addr,
		"acks":               "all",
		"enable.idempotence": true,
		"linger.ms":          5,
		"message.timeout.ms": 120_000,
	})
	require.NoError(t, err)
	defer p.Close()
	go func() {
		for ev := range p.Events() { // logs and client-level errors
			if err, ok := ev.(ckafka.Error); ok {
				t.Logf("producer event: %v", err)
			}
		}
	}()
	reports := make(chan ckafka.Event, len(values))
	for i, v := range values {
		require.NoError(t, p.Produce(&ckafka.Message{
			TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
			Key:            []byte(strconv.Itoa(i)),
			Value:          v,
		}, reports))
	}
	timeout := time.After(3 * time.Minute)
	for range values {
		select {
		case ev := <-reports:
			m, ok := ev.(*ckafka.Message)
			require.True(t, ok, "delivery report %T %v", ev, ev)
			require.NoError(t, m.TopicPartition.Error, "delivery of key %s", m.Key)
		case <-timeout:
			t.Fatal("delivery reports missing after 3 minutes")
		}
	}
}

// checkRows compares every row with the record of its id, every column.
func checkRows(t *testing.T, rows []map[string]json.RawMessage) {
	t.Helper()
	require.Len(t, rows, records)
	byID := map[int64]map[string]json.RawMessage{}
	for _, r := range rows {
		var id int64
		require.NoError(t, json.Unmarshal(r["id"], &id), "id of %v", r)
		require.NotContains(t, byID, id, "id %d twice", id)
		byID[id] = r
	}
	for i := range records {
		want := wantOrder(i)
		row := byID[want.id]
		require.NotNil(t, row, "record %d (id %d) missing", i, want.id)
		assert.Len(t, row, len(orderColumns), "record %d columns", i)
		assert.Equal(t, want.name, decode[string](t, row, "name"), "record %d name", i)
		assert.Equal(t, want.score, decode[float64](t, row, "score"), "record %d score", i)
		assert.Equal(t, want.flag, decode[bool](t, row, "flag"), "record %d flag", i)
		assert.Equal(t, want.qty, decode[int32](t, row, "qty"), "record %d qty", i)
		assert.Equal(t, want.note, decode[*string](t, row, "note"), "record %d note", i)
		assert.Equal(t, want.tag, decode[*string](t, row, "tag"), "record %d tag", i)
		// flusspy renders TIMESTAMP_LTZ as UTC with nanoseconds.
		assert.Equal(t, want.ts.Format("2006-01-02T15:04:05.000000000Z"), decode[string](t, row, "ts"), "record %d ts", i)
		assert.Equal(t, want.status, decode[string](t, row, "status"), "record %d status", i)
	}
}

// decode decodes one column of a scanned row (a pointer type for a
// nullable column: nil for JSON null).
func decode[T any](t *testing.T, row map[string]json.RawMessage, col string) T {
	t.Helper()
	var v T
	raw, ok := row[col]
	require.True(t, ok, "column %s missing in %v", col, row)
	require.NoError(t, json.Unmarshal(raw, &v), "column %s = %s", col, raw)
	return v
}

func testContext(t *testing.T) context.Context { return flussdb.Context(t) }

// uniqueName returns a Fluss-valid name unique to this run.
func uniqueName(prefix string) string { return flussdb.UniqueName(prefix) }
