package mapping

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Framing is how a route's producers mark the registry schema of a value
// or key (the serializers in use differ where the bytes alone are
// ambiguous; see package schemaregistry).
type Framing string

// Framings.
const (
	// FramingConfluent (the default): Confluent's serializers — a
	// __value_schema_id / __key_schema_id header or a 00 + 4-byte id
	// prefix; Protobuf values carry message indexes. Apicurio 3.x's
	// default (00 + 4-byte contentId) and Apicurio headers are read too.
	FramingConfluent Framing = "confluent"
	// FramingApicurio: Apicurio's serdes — Apicurio headers or a 00 +
	// 4-byte contentId prefix; Protobuf values start with Apicurio's type
	// ref instead of message indexes.
	FramingApicurio Framing = "apicurio"
	// FramingApicurioGlobalID8: Apicurio 2.x with headers disabled: a
	// 00 + 8-byte globalId prefix.
	FramingApicurioGlobalID8 Framing = "apicurio-global-id-8"
)

// IsRegistryFormat reports whether a value or key format (as the
// configuration spells it) is a schema-registry format.
func IsRegistryFormat(format string) bool {
	switch format {
	case string(ValueAvro), string(ValueProtobuf), string(ValueJSONSchema):
		return true
	}
	return false
}

// checkRegistry checks the registry settings of the value or key (what).
func checkRegistry(what, format string, f Framing, subject string, add func(field, format string, args ...any)) {
	if !IsRegistryFormat(format) {
		if f != "" {
			add(what+".framing", "only applies to %s.format avro, protobuf and json_schema", what)
		}
		if subject != "" {
			add(what+".subject", "only applies to %s.format avro, protobuf and json_schema", what)
		}
		return
	}
	switch f {
	case "", FramingConfluent, FramingApicurio, FramingApicurioGlobalID8:
	default:
		add(what+".framing", "%q is not one of confluent, apicurio, apicurio-global-id-8", f)
	}
}

// SpecFramingOptions is how the values (or keys) of a route spec's
// registry format are framed (FramingOptions, before the route is bound).
func SpecFramingOptions(spec RouteSpec, key bool) (schemaregistry.Options, bool) {
	spec = spec.WithDefaults()
	if key {
		if !IsRegistryFormat(string(spec.Key.Format)) {
			return schemaregistry.Options{}, false
		}
		return framingOptions(string(spec.Key.Format), spec.Key.Framing, true), true
	}
	if !IsRegistryFormat(string(spec.Value.Format)) {
		return schemaregistry.Options{}, false
	}
	return framingOptions(string(spec.Value.Format), spec.Value.Framing, false), true
}

// framingOptions are what ParseFraming needs for a registry format.
func framingOptions(format string, f Framing, key bool) schemaregistry.Options {
	o := schemaregistry.Options{Key: key}
	protobuf := format == string(ValueProtobuf)
	switch f {
	case FramingApicurio:
		o.TypeRef = protobuf
	case FramingApicurioGlobalID8:
		o.TypeRef = protobuf
		o.PrefixKind, o.PrefixWidth = schemaregistry.GlobalID, 8
	default:
		o.MessageIndexes = protobuf
	}
	return o
}

// Serialized is a registry-framed value or key as the caller resolved it
// before Convert: the caller parses the framing (FramingOptions says how)
// and looks the writer schema up in the registry, so that Convert does no
// I/O. Err set means the record is bad (its framing does not parse, or the
// registry does not know its schema): Convert reports it as a record error.
type Serialized struct {
	Ref     schemaregistry.Ref
	Schema  *schemaregistry.Schema
	Payload []byte // the bytes after the framing
	Err     error
}

// FramingOptions reports whether the route's value (key=false) or key is
// in a schema-registry format, and how to parse its framing.
func (c *Converter) FramingOptions(key bool) (schemaregistry.Options, bool) {
	if key {
		if !IsRegistryFormat(string(c.keyFormat)) {
			return schemaregistry.Options{}, false
		}
		return framingOptions(string(c.keyFormat), c.keyFraming, true), true
	}
	if !IsRegistryFormat(string(c.valueFormat)) {
		return schemaregistry.Options{}, false
	}
	return framingOptions(string(c.valueFormat), c.valueFraming, false), true
}

// A registryDecoder fills a route's columns from registry-serialized
// payloads of one format, with the writer schema each record names. It is
// safe for concurrent use (it may cache what it compiles per writer
// schema). decode sets out.Row[i] and out.seen[i] for every column it
// fills; it reports a record error as the column (or "") and the reason.
type registryDecoder interface {
	decode(s *Serialized, out *Converted) (col, reason string)
}

// registryTarget is what a decoder writes: the table's columns, the field
// tree (column name or value.columns path → columns) and the unknown-field
// policy.
type registryTarget struct {
	columns       []fluss.Column
	tree          *jsonNode
	rejectUnknown bool
	// message is the Protobuf message a check without a record takes
	// (value.message / key.message; "" the file's first).
	message string
	// walkJSON fills the tree's columns from a JSON document as the json
	// format does (json_schema payloads are JSON text).
	walkJSON func(data []byte, out *Converted) (col, reason string)
}

func newRegistryDecoder(format string, t registryTarget) (registryDecoder, error) {
	switch format {
	case string(ValueAvro):
		return newAvroDecoder(t)
	case string(ValueProtobuf):
		return newProtobufDecoder(t)
	case string(ValueJSONSchema):
		return newJSONSchemaDecoder(t)
	}
	return nil, fmt.Errorf("mapping: %q is not a schema-registry format", format)
}

// decodeSerialized runs a registry decoder on one value or key.
func (c *Converter) decodeSerialized(dec registryDecoder, s *Serialized, out *Converted) (string, string) {
	if s.Err != nil {
		return "", s.Err.Error()
	}
	if s.Schema == nil {
		return "", "no writer schema resolved for the record (the gateway did not look it up)"
	}
	return dec.decode(s, out)
}

// A schemaChecker compiles a writer schema against the route's columns
// without a record: what `gateway validate` does with a subject's latest
// schema.
type schemaChecker interface {
	check(s *schemaregistry.Schema) error
}

// CheckWriterSchema reports whether records written with s would convert:
// the schema compiles and every field the route maps fits its column. key
// selects the key's format. It is nil for formats that are not
// schema-registry ones.
func (c *Converter) CheckWriterSchema(s *schemaregistry.Schema, key bool) error {
	dec := c.valueDec
	if key {
		dec = c.keyDec
	}
	ch, ok := dec.(schemaChecker)
	if !ok || s == nil {
		return nil
	}
	return ch.check(s)
}

func checkFailure(col, reason string) error {
	if col != "" {
		return fmt.Errorf("column %q: %s", col, reason)
	}
	return fmt.Errorf("%s", reason)
}

func (d *avroDecoder) check(s *schemaregistry.Schema) error {
	if p := d.compile(s); p.failReason != "" {
		return checkFailure(p.failCol, p.failReason)
	}
	return nil
}

func (d *protobufDecoder) check(s *schemaregistry.Schema) error {
	ps := d.schema(s)
	if ps.err != "" {
		return checkFailure("", ps.err)
	}
	if p := buildPBPlan(ps.file, &schemaregistry.Ref{MessageName: d.t.message}, &d.t); p.err != "" {
		return checkFailure(p.errCol, p.err)
	}
	return nil
}

func (d *jsonSchemaDecoder) check(s *schemaregistry.Schema) error {
	if c := compileJSONSchema(s); c.err != nil {
		return checkFailure("", c.err.Error())
	}
	return nil
}

// writerSchemaCache keeps what a decoder compiled for each writer schema
// (by pointer: the registry client hands out one *Schema per id, and ids of
// different kinds may share a number). It is bounded: past max entries it
// starts over, so a flood of distinct schemas cannot grow memory forever.
type writerSchemaCache[V any] struct {
	m   sync.Map // *schemaregistry.Schema → V
	n   atomic.Int64
	max int64
}

// get returns the entry of s, compiling it on first use.
func (c *writerSchemaCache[V]) get(s *schemaregistry.Schema, compile func(*schemaregistry.Schema) V) V {
	if v, ok := c.m.Load(s); ok {
		return v.(V)
	}
	v := compile(s)
	if c.n.Add(1) > c.max {
		c.m.Clear()
		c.n.Store(1)
	}
	actual, _ := c.m.LoadOrStore(s, v)
	return actual.(V)
}

// len is how many entries were added since the cache last started over.
func (c *writerSchemaCache[V]) len() int64 { return c.n.Load() }
