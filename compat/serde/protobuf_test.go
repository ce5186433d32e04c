package serde_test

import (
	_ "embed"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/protobuf"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fluss-kafka/gateway/internal/registrytest"
)

//go:embed testdata/order.proto
var orderProto string

// orderProtoFile is the file's name in the compiled descriptor, and so in
// the registered schema.
const orderProtoFile = "compat/serde/order.proto"

// orderMessage compiles testdata/order.proto (its google/protobuf imports
// resolved to the descriptors linked into this binary, so that timestamppb
// and wrapperspb values fit its fields) and returns compat.serde.Order.
func orderMessage(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	comp := protocompile.Compiler{Resolver: protocompile.CompositeResolver{
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{orderProtoFile: orderProto})},
		protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
			return protocompile.SearchResult{Desc: fd}, err
		}),
	}}
	files, err := comp.Compile(testContext(t), orderProtoFile)
	require.NoError(t, err)
	md := files[0].Messages().ByName("Order")
	require.NotNil(t, md)
	return md
}

// pbOrder is order o as a dynamic compat.serde.Order.
func pbOrder(md protoreflect.MessageDescriptor, o order) *dynamicpb.Message {
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("id"), protoreflect.ValueOfInt64(o.id))
	m.Set(f("name"), protoreflect.ValueOfString(o.name))
	m.Set(f("score"), protoreflect.ValueOfFloat64(o.score))
	m.Set(f("flag"), protoreflect.ValueOfBool(o.flag))
	m.Set(f("qty"), protoreflect.ValueOfInt32(o.qty))
	if o.note != nil {
		m.Set(f("note"), protoreflect.ValueOfString(*o.note))
	}
	if o.tag != nil {
		m.Set(f("tag"), protoreflect.ValueOfMessage(wrapperspb.String(*o.tag).ProtoReflect()))
	}
	m.Set(f("ts"), protoreflect.ValueOfMessage(timestamppb.New(o.ts).ProtoReflect()))
	status := md.Enums().ByName("Status").Values().ByName(protoreflect.Name(o.status))
	m.Set(f("status"), protoreflect.ValueOfEnum(status.Number()))
	return m
}

// TestProtobufConfluentGoSerializer: messages serialized by
// confluent-kafka-go's protobuf serializer (the .proto text auto-registered
// in Apicurio, Confluent framing with message indexes) land in Fluss as
// typed columns: int64, string, double, bool, int32, a proto3 optional and
// a StringValue wrapper set and unset (null), a google.protobuf.Timestamp
// into TIMESTAMP_LTZ(3), an enum as its value name (NEW, the zero value,
// is not on the wire at all). The messages are dynamicpb ones: the
// serializer takes any proto.Message and derives the schema from its
// descriptor, so no generated code (and no protoc) is needed.
func TestProtobufConfluentGoSerializer(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	table := e.createOrderTable(t, "pb_orders")
	topic := uniqueName("go-pb-orders")
	g := startGateway(t, e, registry, topic, table, "protobuf")

	md := orderMessage(t)
	client := newRegistryClient(t, registry)
	ser, err := protobuf.NewSerializer(client, serde.ValueSerde, protobuf.NewSerializerConfig())
	require.NoError(t, err)
	defer ser.Close()
	var values [][]byte
	for i := range records {
		v, err := ser.Serialize(topic, pbOrder(md, wantOrder(i)))
		require.NoError(t, err, "serialize record %d", i)
		values = append(values, v)
	}
	requireRegistered(t, client, topic, "PROTOBUF", values)

	produce(t, g.KafkaAddr, topic, values)
	checkRows(t, e.scanLog(t, table))
}
