package serde_test

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/jsonschema"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// jsonOrder is the jsonschema serializer's input. The serializer reflects
// the schema it registers from the struct (invopop/jsonschema: draft
// 2020-12, the object under $defs behind a $ref): note is a required
// nullable field (written as null when unset), tag an optional one (left
// out when unset), ts a date-time string, status a string enum.
type jsonOrder struct {
	ID     int64     `json:"id"`
	Name   string    `json:"name"`
	Score  float64   `json:"score"`
	Flag   bool      `json:"flag"`
	Qty    int32     `json:"qty"`
	Note   *string   `json:"note" jsonschema:"nullable"`
	Tag    *string   `json:"tag,omitempty"`
	TS     time.Time `json:"ts"`
	Status string    `json:"status" jsonschema:"enum=NEW,enum=PAID,enum=SHIPPED"`
}

// TestJSONSchemaConfluentGoSerializer: values serialized by
// confluent-kafka-go's jsonschema serializer (schema reflected from a Go
// struct and auto-registered in Apicurio, validated by the serializer too)
// land in Fluss as typed columns; the gateway validates each against the
// registered schema.
func TestJSONSchemaConfluentGoSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	table := e.createOrderTable(t, "json_orders")
	topic := uniqueName("go-json-orders")
	g := startGateway(t, e, registry, topic, table, "json_schema")

	client := newRegistryClient(t, registry)
	conf := jsonschema.NewSerializerConfig()
	conf.EnableValidation = true
	ser, err := jsonschema.NewSerializer(client, serde.ValueSerde, conf)
	require.NoError(t, err)
	defer ser.Close()
	var values [][]byte
	for i := range records {
		o := wantOrder(i)
		v, err := ser.Serialize(topic, &jsonOrder{ID: o.id, Name: o.name, Score: o.score, Flag: o.flag, Qty: o.qty,
			Note: o.note, Tag: o.tag, TS: o.ts, Status: o.status})
		require.NoError(t, err, "serialize record %d", i)
		values = append(values, v)
	}
	requireRegistered(t, client, topic, "JSON", values)

	produce(t, g.KafkaAddr, topic, values)
	checkRows(t, e.scanLog(t, table))
}
