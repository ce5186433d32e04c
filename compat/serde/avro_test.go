package serde_test

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/avrov2"
	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/registrytest"
)

const orderAvroText = `{
  "type": "record", "name": "Order", "namespace": "compat.serde",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "score", "type": "double"},
    {"name": "flag", "type": "boolean"},
    {"name": "qty", "type": "int"},
    {"name": "note", "type": ["null", "string"], "default": null},
    {"name": "tag", "type": ["null", "string"], "default": null},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}}
  ]
}`

var orderAvroSchema = avro.MustParse(orderAvroText)

// avroOrder is the avrov2 serializer's input. Its Schema method hands the
// serializer the schema to register (rather than one reflected from the
// struct, which knows neither the enum nor timestamp-millis); hamba/avro
// then encodes the fields by their avro tags.
type avroOrder struct {
	ID     int64     `avro:"id"`
	Name   string    `avro:"name"`
	Score  float64   `avro:"score"`
	Flag   bool      `avro:"flag"`
	Qty    int32     `avro:"qty"`
	Note   *string   `avro:"note"`
	Tag    *string   `avro:"tag"`
	TS     time.Time `avro:"ts"`
	Status string    `avro:"status"`
}

func (*avroOrder) Schema() avro.Schema { return orderAvroSchema }

// TestAvroConfluentGoSerializer: records serialized by confluent-kafka-go's
// avrov2 serializer (schema auto-registered in Apicurio, Confluent framing)
// land in Fluss as typed columns: long, string, double, boolean, int,
// nullable unions set and null, timestamp-millis into TIMESTAMP_LTZ(3), an
// enum as its symbol.
func TestAvroConfluentGoSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	table := e.createOrderTable(t, "avro_orders")
	topic := uniqueName("go-avro-orders")
	g := startGateway(t, e, registry, topic, table, "avro")

	client := newRegistryClient(t, registry)
	ser, err := avrov2.NewSerializer(client, serde.ValueSerde, avrov2.NewSerializerConfig())
	require.NoError(t, err)
	defer ser.Close()
	var values [][]byte
	for i := range records {
		o := wantOrder(i)
		v, err := ser.Serialize(topic, &avroOrder{ID: o.id, Name: o.name, Score: o.score, Flag: o.flag, Qty: o.qty,
			Note: o.note, Tag: o.tag, TS: o.ts, Status: o.status})
		require.NoError(t, err, "serialize record %d", i)
		values = append(values, v)
	}
	requireRegistered(t, client, topic, "AVRO", values)

	produce(t, g.KafkaAddr, topic, values)
	checkRows(t, e.scanLog(t, table))
}
