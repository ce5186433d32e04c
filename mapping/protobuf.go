package mapping

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Protobuf values and keys (value.format / key.format protobuf).
//
// The writer schema of a record is compiled once: .proto text (as
// Confluent Schema Registry and confluent-kafka-go register it) with
// protocompile, a base64 FileDescriptorProto (as Python's serializer
// registers it and Apicurio returns it) linked by protocompile as a
// descriptor. Imports resolve from Schema.Deps, then from
// google/protobuf/* and the types Confluent's serializers never register
// (google/type/{date,timeofday,...}, confluent/meta.proto,
// confluent/type/decimal.proto). The message is the one the record's
// message indexes ([0], [1, 0], ...) or Apicurio type name select.
//
// For each (writer schema, message) a plan is built against the route's
// field tree: field number → the columns (or ROW fields) it fills and the
// conversion to each column's type, chosen once. A record is then one walk
// over the wire format (protowire) that fills the columns directly: no
// dynamic message, strings and bytes alias the payload, nested values come
// from the Converted's arenas.
//
// Semantics (proto3, as Flink's protobuf format with read-default-values):
// an absent field without explicit presence takes its default (0, "",
// false, the enum's first value, an empty ARRAY or MAP); a field with
// explicit presence (proto3 optional, proto2, a oneof member, a message)
// that is absent fills nothing, so the column is null (or missing_fields
// reject applies). A non-repeated field that occurs twice: the last value
// wins (two occurrences of a message field merge, field by field). Packed
// and unpacked repeated scalars are both read. Field numbers the writer
// schema does not know are skipped; with unknown_fields reject, a field of
// the payload that nothing reads (unknown to the writer schema, or known
// but read by no column or ROW field) makes the record invalid. Each oneof
// member is a field of its own.
//
// Conversions (column type ← protobuf type):
//
//	BOOLEAN                bool; string "true"/"false"
//	TINYINT … BIGINT       every integer type and enum numbers, range-checked
//	                       per value (uint64 above 2^63-1 does not fit BIGINT)
//	FLOAT, DOUBLE          float, double, integers
//	DECIMAL(p, s)          integers, float/double (rounded half-up),
//	                       confluent.type.Decimal, numeric strings
//	STRING, CHAR           string (UTF-8), enum (the value's name; an unknown
//	                       number as its decimal text), bool/integers/floats
//	                       as text
//	BYTES, BINARY          bytes, string (its UTF-8 bytes)
//	DATE                   google.type.Date, integers (days), strings
//	TIME                   google.type.TimeOfDay, integers (ms of day), strings
//	TIMESTAMP(_LTZ)        google.protobuf.Timestamp (seconds + nanos,
//	                       truncated to the precision), integers (epoch ms),
//	                       strings
//	BIGINT                 also google.protobuf.Timestamp (epoch ms) and
//	                       google.protobuf.Duration (ms, truncated toward 0)
//	ARRAY<T>               repeated fields
//	MAP<K, V>              map fields
//	ROW<...>               messages, fields by name (any message, the
//	                       well-known types included)
//	any of the above       wrappers (google.protobuf.Int64Value, ...): the
//	                       wrapped value; an absent wrapper is null
//
// A column whose field cannot convert (a message into STRING, a string
// into ARRAY, ...) is found when the plan is built, and every record of
// that writer schema is then invalid with that column named. Fields are
// found by name, then by JSON name (camelCase).

// Cache bounds. A writer schema is immutable for its id, so compiled files
// and plans live until the bound is reached; then the cache starts over.
const (
	pbMaxFiles         = 512 // compiled files, process-wide (by schema text)
	pbMaxSchemas       = 256 // writer schemas per decoder (by *Schema)
	pbMaxPlansPerFile  = 64  // messages per writer schema and decoder
	pbDenseFieldNumber = 4096
	pbMaxDecimalBytes  = 64
)

type protobufDecoder struct {
	t       registryTarget
	schemas writerSchemaCache[*pbSchema]
}

func newProtobufDecoder(t registryTarget) (registryDecoder, error) {
	d := &protobufDecoder{t: t}
	d.schemas.max = pbMaxSchemas
	return d, nil
}

// pbSchema is one writer schema, compiled, with the plans of the messages
// records named.
type pbSchema struct {
	file  protoreflect.FileDescriptor
	err   string
	mu    sync.Mutex
	plans atomic.Pointer[[]*pbPlan]
}

type pbPlan struct {
	indexes []int
	name    string
	msg     *pbMessage
	errCol  string
	err     string
}

func (d *protobufDecoder) decode(s *Serialized, out *Converted) (string, string) {
	if s.Schema.Type != "" && !strings.EqualFold(s.Schema.Type, "PROTOBUF") {
		return "", "writer schema " + strconv.FormatInt(s.Schema.ID, 10) + " is " + s.Schema.Type + ", not PROTOBUF"
	}
	ps := d.schema(s.Schema)
	if ps.err != "" {
		return "", ps.err
	}
	p := ps.plan(&s.Ref, &d.t)
	if p.err != "" {
		return p.errCol, p.err
	}
	r := pbRun{out: out}
	if slot, reason := r.message(s.Payload, p.msg, out.Row, out.seen); reason != "" {
		if slot >= 0 {
			return d.t.columns[slot].Name, reason
		}
		return "", reason
	}
	r.defaults(p.msg, out.Row, out.seen)
	return "", ""
}

func (d *protobufDecoder) schema(s *schemaregistry.Schema) *pbSchema {
	return d.schemas.get(s, func(s *schemaregistry.Schema) *pbSchema {
		c := pbCompile(s)
		ps := &pbSchema{file: c.file}
		if c.err != "" {
			ps.err = "writer schema " + strconv.FormatInt(s.ID, 10) + " does not compile: " + c.err
		}
		return ps
	})
}

// plan returns the plan of the message ref names, building it on first use.
func (ps *pbSchema) plan(ref *schemaregistry.Ref, t *registryTarget) *pbPlan {
	if plans := ps.plans.Load(); plans != nil {
		for _, p := range *plans {
			if p.name == ref.MessageName && slices.Equal(p.indexes, ref.MessageIndexes) {
				return p
			}
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var old []*pbPlan
	if plans := ps.plans.Load(); plans != nil {
		old = *plans
		for _, p := range old {
			if p.name == ref.MessageName && slices.Equal(p.indexes, ref.MessageIndexes) {
				return p
			}
		}
	}
	p := buildPBPlan(ps.file, ref, t)
	if len(old) < pbMaxPlansPerFile {
		plans := append(slices.Clip(old), p)
		ps.plans.Store(&plans)
	}
	return p
}
