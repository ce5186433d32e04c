package mapping

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/fluss-kafka/gateway/fluss"
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

func buildPBPlan(fd protoreflect.FileDescriptor, ref *schemaregistry.Ref, t *registryTarget) *pbPlan {
	p := &pbPlan{indexes: slices.Clone(ref.MessageIndexes), name: ref.MessageName}
	md, reason := pbSelectMessage(fd, ref)
	if reason != "" {
		p.err = reason
		return p
	}
	b := pbBuilder{cols: t.columns, reject: t.rejectUnknown, errCol: -1}
	p.msg = b.top(md, t.tree, "")
	if b.errCol >= 0 {
		p.errCol, p.err = t.columns[b.errCol].Name, b.err
	}
	return p
}

// pbSelectMessage finds the record's message: by message indexes, else by
// Apicurio's type name, else the file's first message.
func pbSelectMessage(fd protoreflect.FileDescriptor, ref *schemaregistry.Ref) (protoreflect.MessageDescriptor, string) {
	if len(ref.MessageIndexes) > 0 || ref.MessageName == "" {
		idx := ref.MessageIndexes
		if len(idx) == 0 {
			idx = []int{0}
		}
		msgs := fd.Messages()
		var md protoreflect.MessageDescriptor
		for _, i := range idx {
			if i < 0 || i >= msgs.Len() {
				return nil, fmt.Sprintf("message indexes %v name no message of writer schema %s", ref.MessageIndexes, fd.Path())
			}
			md = msgs.Get(i)
			msgs = md.Messages()
		}
		return md, ""
	}
	name := ref.MessageName
	var found protoreflect.MessageDescriptor
	var walk func(msgs protoreflect.MessageDescriptors)
	walk = func(msgs protoreflect.MessageDescriptors) {
		for i := 0; i < msgs.Len() && found == nil; i++ {
			if m := msgs.Get(i); string(m.Name()) == name || string(m.FullName()) == name {
				found = m
			}
		}
		for i := 0; i < msgs.Len() && found == nil; i++ {
			walk(msgs.Get(i).Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		return nil, fmt.Sprintf("message %q is not in writer schema %s", name, fd.Path())
	}
	return found, ""
}

// ---- Compiling writer schemas ----

type pbCompiled struct {
	file protoreflect.FileDescriptor
	err  string
}

var pbFiles struct {
	mu sync.Mutex
	m  map[string]*pbCompiled
}

// pbCompile compiles a writer schema, once per text (and dependencies).
func pbCompile(s *schemaregistry.Schema) *pbCompiled {
	var kb strings.Builder
	kb.WriteString(s.Text)
	deps := make([]string, 0, len(s.Deps))
	for k := range s.Deps {
		deps = append(deps, k)
	}
	sort.Strings(deps)
	for _, k := range deps {
		kb.WriteString("\x00")
		kb.WriteString(k)
		kb.WriteString("\x00")
		kb.WriteString(s.Deps[k])
	}
	key := kb.String()
	pbFiles.mu.Lock()
	c := pbFiles.m[key]
	pbFiles.mu.Unlock()
	if c != nil {
		return c
	}
	c = &pbCompiled{}
	fd, err := pbCompileFile(s.Text, s.Deps)
	if err != nil {
		c.err = err.Error()
	} else {
		c.file = fd
	}
	pbFiles.mu.Lock()
	if pbFiles.m == nil || len(pbFiles.m) >= pbMaxFiles {
		pbFiles.m = map[string]*pbCompiled{}
	}
	pbFiles.m[key] = c
	pbFiles.mu.Unlock()
	return c
}

const pbMainFile = "fluss-gateway/writer-schema.proto"

func pbCompileFile(text string, deps map[string]string) (protoreflect.FileDescriptor, error) {
	name := pbMainFile
	fdp := pbParseDescriptor(text)
	if fdp != nil && fdp.GetName() != "" {
		name = fdp.GetName()
	}
	source := func(path, text string) protocompile.SearchResult {
		if fdp := pbParseDescriptor(text); fdp != nil {
			fdp.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fdp}
		}
		return protocompile.SearchResult{Source: strings.NewReader(text)}
	}
	resolver := protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		switch {
		case path == name:
			return source(path, text), nil
		case deps[path] != "":
			return source(path, deps[path]), nil
		case pbBuiltinFiles[path] != "":
			return protocompile.SearchResult{Source: strings.NewReader(pbBuiltinFiles[path])}, nil
		}
		return protocompile.SearchResult{}, fmt.Errorf("import %q: not among the schema's references", path)
	}))
	comp := protocompile.Compiler{Resolver: resolver, MaxParallelism: 1}
	files, err := comp.Compile(context.Background(), name)
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, errors.New("no file compiled")
	}
	return files[0], nil
}

// pbParseDescriptor reads text as a base64 FileDescriptorProto, or
// returns nil when it is not one (.proto text never is valid base64).
func pbParseDescriptor(text string) *descriptorpb.FileDescriptorProto {
	t := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, text)
	if t == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(t); err != nil {
			return nil
		}
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(raw, fdp) != nil {
		return nil
	}
	return fdp
}

// pbBuiltinFiles are the imports Confluent's serializers never register as
// references (they treat confluent/* and google/type/* as built in).
var pbBuiltinFiles = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
	"google/type/date.proto": `syntax = "proto3";
package google.type;
message Date {
  int32 year = 1;
  int32 month = 2;
  int32 day = 3;
}
`,
	"google/type/timeofday.proto": `syntax = "proto3";
package google.type;
message TimeOfDay {
  int32 hours = 1;
  int32 minutes = 2;
  int32 seconds = 3;
  int32 nanos = 4;
}
`,
	"google/type/dayofweek.proto": `syntax = "proto3";
package google.type;
enum DayOfWeek {
  DAY_OF_WEEK_UNSPECIFIED = 0;
  MONDAY = 1;
  TUESDAY = 2;
  WEDNESDAY = 3;
  THURSDAY = 4;
  FRIDAY = 5;
  SATURDAY = 6;
  SUNDAY = 7;
}
`,
	"google/type/month.proto": `syntax = "proto3";
package google.type;
enum Month {
  MONTH_UNSPECIFIED = 0;
  JANUARY = 1;
  FEBRUARY = 2;
  MARCH = 3;
  APRIL = 4;
  MAY = 5;
  JUNE = 6;
  JULY = 7;
  AUGUST = 8;
  SEPTEMBER = 9;
  OCTOBER = 10;
  NOVEMBER = 11;
  DECEMBER = 12;
}
`,
	"google/type/money.proto": `syntax = "proto3";
package google.type;
message Money {
  string currency_code = 1;
  int64 units = 2;
  int32 nanos = 3;
}
`,
	"google/type/latlng.proto": `syntax = "proto3";
package google.type;
message LatLng {
  double latitude = 1;
  double longitude = 2;
}
`,
}

// ---- Plans ----

type pbOp uint8

const (
	pbBool            pbOp = iota + 1 // bool → BOOLEAN
	pbBoolText                        // bool → STRING
	pbInt                             // integer, enum number → TINYINT … BIGINT
	pbIntFloat                        // integer → FLOAT, DOUBLE
	pbIntText                         // integer → STRING
	pbIntDecimal                      // integer → DECIMAL
	pbIntTime                         // integer → DATE, TIME, TIMESTAMP(_LTZ)
	pbFloat                           // float, double → FLOAT, DOUBLE
	pbFloatText                       // float, double → STRING
	pbFloatDecimal                    // float, double → DECIMAL
	pbString                          // string → STRING
	pbStringBytes                     // string → BYTES
	pbStringParse                     // string → other scalars, parsed as JSON strings are
	pbBytes                           // bytes → BYTES
	pbEnumName                        // enum → STRING (value name)
	pbRow                             // message → ROW
	pbArray                           // repeated → ARRAY
	pbMap                             // map → MAP
	pbTimestamp                       // google.protobuf.Timestamp → TIMESTAMP(_LTZ)
	pbTimestampMillis                 // google.protobuf.Timestamp → BIGINT
	pbDuration                        // google.protobuf.Duration → BIGINT ms
	pbWrapper                         // google.protobuf.*Value → the wrapped value
	pbDate                            // google.type.Date → DATE
	pbTimeOfDay                       // google.type.TimeOfDay → TIME
	pbDecimalMsg                      // confluent.type.Decimal → DECIMAL
)

// pbConv converts one protobuf value of one kind to one Fluss type.
type pbConv struct {
	op     pbOp
	kind   protoreflect.Kind
	wire   protowire.Type // wire type of one value
	t      *fluss.DataType
	lo, hi int64 // pbInt range
	maxLen int   // CHAR(n)/BINARY(n)
	enum   *pbEnumNames
	row    *pbMessage // pbRow
	elem   *pbConv    // pbArray element; pbWrapper value
	key    *pbConv    // pbMap
	val    *pbConv    // pbMap
}

type pbEnumNames struct {
	dense  [][]byte
	sparse map[int32][]byte
}

func (e *pbEnumNames) name(n int32) []byte {
	if n >= 0 && int(n) < len(e.dense) {
		return e.dense[n]
	}
	return e.sparse[n]
}

// pbMessage is the plan of one message: which fields fill which slots
// (columns at the top level and along paths, fields of a ROW otherwise).
type pbMessage struct {
	desc   protoreflect.MessageDescriptor
	path   string // field path from the record's message, for errors
	fields []pbField
	dense  []int32 // field number → fields index + 1; -1 known, read by nothing; 0 unknown
	sparse map[protowire.Number]int32
	nRep   int  // repeated and map fields (rep 0 … nRep-1)
	reject bool // unknown_fields: reject

	defaults []pbSlotValue // columns: defaults of implicit-presence fields

	initial   []fluss.Datum // ROW: field values before decoding (null or default)
	slotNames []string      // ROW: field names
	notNull   []int         // ROW: NOT NULL fields
}

type pbSlotValue struct {
	slot int
	d    fluss.Datum
}

type pbField struct {
	num      protowire.Number
	name     string
	kind     protoreflect.Kind
	wire     protowire.Type
	rep      int // ≥ 0: repeated or map field
	isMap    bool
	packable bool
	errSlot  int
	targets  []pbTarget
	child    *pbMessage // deeper value.columns paths
}

type pbTarget struct {
	slot int
	conv *pbConv
}

func (m *pbMessage) lookup(num protowire.Number) int32 {
	if int(num) < len(m.dense) {
		return m.dense[num]
	}
	return m.sparse[num]
}

func newPBMessage(md protoreflect.MessageDescriptor, reject bool, path string) *pbMessage {
	m := &pbMessage{desc: md, reject: reject, path: path}
	fds := md.Fields()
	maxNum := 0
	for i := 0; i < fds.Len(); i++ {
		if n := int(fds.Get(i).Number()); n < pbDenseFieldNumber {
			maxNum = max(maxNum, n)
		}
	}
	m.dense = make([]int32, maxNum+1)
	for i := 0; i < fds.Len(); i++ {
		m.set(fds.Get(i).Number(), -1)
	}
	return m
}

func (m *pbMessage) set(num protowire.Number, v int32) {
	if int(num) < len(m.dense) {
		m.dense[num] = v
		return
	}
	if m.sparse == nil {
		m.sparse = map[protowire.Number]int32{}
	}
	m.sparse[num] = v
}

// fieldIndex returns the index of fd's entry in m.fields, adding it.
func (m *pbMessage) fieldIndex(fd protoreflect.FieldDescriptor) int {
	if v := m.lookup(fd.Number()); v > 0 {
		return int(v) - 1
	}
	f := pbField{num: fd.Number(), name: string(fd.Name()), kind: fd.Kind(), rep: -1, errSlot: -1}
	switch {
	case fd.IsMap():
		f.isMap, f.wire = true, protowire.BytesType
	default:
		f.wire = pbWireOf(fd.Kind())
		if fd.IsList() {
			f.packable = f.wire != protowire.BytesType && f.wire != protowire.StartGroupType
		}
	}
	if fd.IsList() || fd.IsMap() {
		f.rep = m.nRep
		m.nRep++
	}
	m.fields = append(m.fields, f)
	m.set(fd.Number(), int32(len(m.fields)))
	return len(m.fields) - 1
}

func (m *pbMessage) addTarget(fi, slot int, c *pbConv) {
	f := &m.fields[fi]
	f.targets = append(f.targets, pbTarget{slot: slot, conv: c})
	if f.errSlot < 0 {
		f.errSlot = slot
	}
}

func pbWireOf(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

func pbFieldByName(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	fds := md.Fields()
	if fd := fds.ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	return fds.ByJSONName(name)
}

type pbBuilder struct {
	cols   []fluss.Column
	reject bool // unknown_fields: reject
	errCol int
	err    string
}

func (b *pbBuilder) fail(col int, reason string) {
	if b.errCol < 0 || col < b.errCol {
		b.errCol, b.err = col, reason
	}
}

// top plans a message whose fields fill columns (the record's message and
// those along value.columns / key.columns paths).
func (b *pbBuilder) top(md protoreflect.MessageDescriptor, node *jsonNode, path string) *pbMessage {
	m := newPBMessage(md, b.reject, path)
	if node == nil {
		return m
	}
	names := make([]string, 0, len(node.fields))
	for name := range node.fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		jf := node.fields[name]
		fd := pbFieldByName(md, name)
		if fd == nil {
			continue // not in this writer schema: its columns get no value
		}
		fpath := path + string(fd.Name())
		fi := -1
		for _, col := range jf.cols {
			conv, reason := b.conv(fd, &b.cols[col].Type)
			if reason != "" {
				b.fail(col, "field "+strconv.Quote(fpath)+": "+reason)
				continue
			}
			if fi < 0 {
				fi = m.fieldIndex(fd)
			}
			m.addTarget(fi, col, conv)
			if d, ok := pbImplicitDefault(fd, conv); ok {
				m.defaults = append(m.defaults, pbSlotValue{slot: col, d: d})
			}
		}
		if jf.child != nil {
			if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
				for _, col := range treeCols(jf.child) {
					b.fail(col, "path goes through field "+strconv.Quote(fpath)+", which is not a single message")
				}
				continue
			}
			if fi < 0 {
				fi = m.fieldIndex(fd)
			}
			m.fields[fi].child = b.top(fd.Message(), jf.child, fpath+".")
		}
	}
	return m
}

func treeCols(n *jsonNode) []int {
	var cols []int
	for _, f := range n.fields {
		cols = append(cols, f.cols...)
		if f.child != nil {
			cols = append(cols, treeCols(f.child)...)
		}
	}
	return cols
}

// conv plans the conversion of field fd (its whole value: list, map or
// single) to type t.
func (b *pbBuilder) conv(fd protoreflect.FieldDescriptor, t *fluss.DataType) (*pbConv, string) {
	switch {
	case fd.IsMap():
		if t.Root != fluss.TypeMap {
			return nil, "a map field cannot fill " + t.String()
		}
		k, reason := b.single(fd.MapKey(), t.Key)
		if reason != "" {
			return nil, "map key: " + reason
		}
		v, reason := b.single(fd.MapValue(), t.Value)
		if reason != "" {
			return nil, "map value: " + reason
		}
		return &pbConv{op: pbMap, t: t, key: k, val: v, wire: protowire.BytesType}, ""
	case fd.IsList():
		if t.Root != fluss.TypeArray {
			return nil, "a repeated field cannot fill " + t.String()
		}
		e, reason := b.single(fd, t.Elem)
		if reason != "" {
			return nil, "element: " + reason
		}
		return &pbConv{op: pbArray, t: t, elem: e, wire: e.wire}, ""
	}
	return b.single(fd, t)
}

// single plans one value of fd's kind (an element, for a repeated field).
func (b *pbBuilder) single(fd protoreflect.FieldDescriptor, t *fluss.DataType) (*pbConv, string) {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return b.message(fd.Message(), t)
	case protoreflect.GroupKind:
		return nil, "group fields are not supported"
	}
	return pbScalar(fd.Kind(), fd.Enum(), t)
}

var pbWrappers = map[protoreflect.FullName]bool{
	"google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true,
	"google.protobuf.Int64Value": true, "google.protobuf.UInt64Value": true,
	"google.protobuf.Int32Value": true, "google.protobuf.UInt32Value": true,
	"google.protobuf.BoolValue": true, "google.protobuf.StringValue": true,
	"google.protobuf.BytesValue": true,
}

func (b *pbBuilder) message(md protoreflect.MessageDescriptor, t *fluss.DataType) (*pbConv, string) {
	c := &pbConv{t: t, kind: protoreflect.MessageKind, wire: protowire.BytesType}
	name := md.FullName()
	switch {
	case name == "google.protobuf.Timestamp" && (t.Root == fluss.TypeTimestamp || t.Root == fluss.TypeTimestampLTZ):
		c.op = pbTimestamp
	case name == "google.protobuf.Timestamp" && t.Root == fluss.TypeBigInt:
		c.op = pbTimestampMillis
	case name == "google.protobuf.Duration" && t.Root == fluss.TypeBigInt:
		c.op = pbDuration
	case name == "google.type.Date" && t.Root == fluss.TypeDate:
		c.op = pbDate
	case name == "google.type.TimeOfDay" && t.Root == fluss.TypeTime:
		c.op = pbTimeOfDay
	case name == "confluent.type.Decimal" && t.Root == fluss.TypeDecimal:
		c.op = pbDecimalMsg
	case pbWrappers[name] && t.Root != fluss.TypeRow:
		vf := md.Fields().ByNumber(1)
		if vf == nil {
			return nil, "wrapper " + string(name) + " has no field 1"
		}
		e, reason := pbScalar(vf.Kind(), nil, t)
		if reason != "" {
			return nil, string(name) + ": " + reason
		}
		c.op, c.elem = pbWrapper, e
	case t.Root == fluss.TypeRow:
		m, reason := b.row(md, t)
		if reason != "" {
			return nil, reason
		}
		c.op, c.row = pbRow, m
	default:
		return nil, "message " + string(name) + " cannot fill " + t.String()
	}
	return c, ""
}

// row plans a message read into a ROW: its fields by name.
func (b *pbBuilder) row(md protoreflect.MessageDescriptor, t *fluss.DataType) (*pbMessage, string) {
	m := newPBMessage(md, b.reject, "")
	n := len(t.Fields)
	m.initial = make([]fluss.Datum, n)
	m.slotNames = make([]string, n)
	for i := range t.Fields {
		f := &t.Fields[i]
		m.initial[i] = fluss.Datum{Null: true}
		m.slotNames[i] = f.Name
		if f.Type.NotNull {
			m.notNull = append(m.notNull, i)
		}
		fd := pbFieldByName(md, f.Name)
		if fd == nil {
			continue
		}
		conv, reason := b.conv(fd, &f.Type)
		if reason != "" {
			return nil, "field " + strconv.Quote(f.Name) + ": " + reason
		}
		m.addTarget(m.fieldIndex(fd), i, conv)
		if d, ok := pbImplicitDefault(fd, conv); ok {
			m.initial[i] = d
		}
	}
	return m, ""
}

func pbRange(root fluss.TypeRoot) (int64, int64) {
	switch root {
	case fluss.TypeTinyInt:
		return math.MinInt8, math.MaxInt8
	case fluss.TypeSmallInt:
		return math.MinInt16, math.MaxInt16
	case fluss.TypeInt:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// pbScalar plans a scalar or enum value of kind k.
func pbScalar(k protoreflect.Kind, ed protoreflect.EnumDescriptor, t *fluss.DataType) (*pbConv, string) {
	c := &pbConv{kind: k, wire: pbWireOf(k), t: t}
	if t.Root == fluss.TypeChar || t.Root == fluss.TypeBinary {
		c.maxLen = t.Length
	}
	root := t.Root
	isInt := root == fluss.TypeTinyInt || root == fluss.TypeSmallInt || root == fluss.TypeInt || root == fluss.TypeBigInt
	isText := root == fluss.TypeString || root == fluss.TypeChar
	isFloat := root == fluss.TypeFloat || root == fluss.TypeDouble
	isBin := root == fluss.TypeBytes || root == fluss.TypeBinary
	switch k {
	case protoreflect.BoolKind:
		switch {
		case root == fluss.TypeBoolean:
			c.op = pbBool
		case isText:
			c.op = pbBoolText
		}
	case protoreflect.EnumKind:
		switch {
		case isText:
			c.op = pbEnumName
			c.enum = &pbEnumNames{}
			if ed != nil {
				vals := ed.Values()
				for i := 0; i < vals.Len(); i++ {
					v := vals.Get(i)
					n := int32(v.Number())
					if c.enum.name(n) != nil {
						continue // an alias: the first name wins
					}
					if n >= 0 && n < 256 {
						for len(c.enum.dense) <= int(n) {
							c.enum.dense = append(c.enum.dense, nil)
						}
						c.enum.dense[n] = []byte(v.Name())
					} else {
						if c.enum.sparse == nil {
							c.enum.sparse = map[int32][]byte{}
						}
						c.enum.sparse[n] = []byte(v.Name())
					}
				}
			}
		case isInt:
			c.op = pbInt
			c.lo, c.hi = pbRange(root)
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		switch {
		case isFloat:
			c.op = pbFloat
		case isText:
			c.op = pbFloatText
		case root == fluss.TypeDecimal:
			c.op = pbFloatDecimal
		}
	case protoreflect.StringKind:
		switch {
		case isText:
			c.op = pbString
		case isBin:
			c.op = pbStringBytes
		case t.IsNested():
		default:
			c.op = pbStringParse
		}
	case protoreflect.BytesKind:
		if isBin {
			c.op = pbBytes
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
	default: // the integer kinds
		switch {
		case isInt:
			c.op = pbInt
			c.lo, c.hi = pbRange(root)
		case isFloat:
			c.op = pbIntFloat
		case isText:
			c.op = pbIntText
		case root == fluss.TypeDecimal:
			c.op = pbIntDecimal
		case root == fluss.TypeDate || root == fluss.TypeTime || root == fluss.TypeTimestamp || root == fluss.TypeTimestampLTZ:
			c.op = pbIntTime
		}
	}
	if c.op == 0 {
		return nil, "protobuf " + k.String() + " cannot fill " + t.String()
	}
	return c, ""
}

var pbEmpty = []byte{}

// pbImplicitDefault is the value of an absent field without explicit
// presence (proto3 read-default-values); ok is false when the field has
// presence, or when its default does not convert (then it stays null).
func pbImplicitDefault(fd protoreflect.FieldDescriptor, c *pbConv) (fluss.Datum, bool) {
	if fd.HasPresence() {
		return fluss.Datum{}, false
	}
	switch c.op {
	case pbArray:
		return fluss.Datum{Nested: &fluss.Nested{Elems: []fluss.Datum{}}}, true
	case pbMap:
		return fluss.Datum{Nested: &fluss.Nested{Keys: []fluss.Datum{}, Values: []fluss.Datum{}}}, true
	}
	raw := pbRaw{b: pbEmpty}
	if fd.Kind() == protoreflect.EnumKind {
		raw.u = uint64(int64(fd.Default().Enum()))
	}
	r := pbRun{out: &Converted{}}
	var d fluss.Datum
	reason := r.value(c, raw, &d, false)
	return d, reason == ""
}

// ---- Decoding ----

type pbRaw struct {
	u uint64
	b []byte
}

type pbRun struct {
	out *Converted
}

// defaults gives the columns of m's implicit-presence fields that the
// message did not carry their defaults.
func (r *pbRun) defaults(m *pbMessage, dst []fluss.Datum, seen []bool) {
	for _, p := range m.defaults {
		if !seen[p.slot] {
			dst[p.slot], seen[p.slot] = p.d, true
		}
	}
}

func pbWireError(what string, off, n int) string {
	return "malformed protobuf " + what + " at byte " + strconv.Itoa(off) + ": " + protowire.ParseError(n).Error()
}

func pbWireTypeError(path, name string, got, want protowire.Type) string {
	return "field " + strconv.Quote(path+name) + " has wire type " + strconv.Itoa(int(got)) + ", want " + strconv.Itoa(int(want))
}

// message decodes one message of plan m into dst (columns when seen is
// non-nil, ROW fields otherwise). On failure it returns the slot
// concerned (or -1) and the reason.
func (r *pbRun) message(b []byte, m *pbMessage, dst []fluss.Datum, seen []bool) (int, string) {
	var done uint64
	var doneMore []uint64
	if m.nRep > 64 {
		doneMore = make([]uint64, (m.nRep+63)/64)
	}
	for i := 0; i < len(b); {
		start := i
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return -1, pbWireError("tag", i, n)
		}
		i += n
		fi := m.lookup(num)
		if fi <= 0 {
			if m.reject {
				if fi < 0 {
					what := " is read by no column"
					if m.initial != nil {
						what = " is not a field of the ROW type"
					}
					return -1, "field " + strconv.Quote(m.path+string(m.desc.Fields().ByNumber(num).Name())) + what + " (unknown_fields: reject)"
				}
				return -1, "unknown field number " + strconv.Itoa(int(num)) + " in " + string(m.desc.FullName()) + " (unknown_fields: reject)"
			}
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return -1, pbWireError("field "+strconv.Itoa(int(num)), i, n)
			}
			i += n
			continue
		}
		f := &m.fields[fi-1]
		if f.rep >= 0 {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return f.errSlot, pbWireError("field "+strconv.Quote(m.path+f.name), i, n)
			}
			i += n
			if doneMore != nil {
				w, bit := f.rep/64, uint64(1)<<(f.rep%64)
				if doneMore[w]&bit != 0 {
					continue
				}
				doneMore[w] |= bit
			} else {
				bit := uint64(1) << f.rep
				if done&bit != 0 {
					continue
				}
				done |= bit
			}
			// First occurrence: read every value of the field from here on.
			for _, tg := range f.targets {
				d, reason, other := r.collect(b[start:], m.path, f, tg.conv)
				if reason != "" {
					if other {
						return -1, reason
					}
					return tg.slot, reason
				}
				dst[tg.slot] = d
				if seen != nil {
					seen[tg.slot] = true
				}
			}
			continue
		}
		if typ != f.wire {
			return f.errSlot, pbWireTypeError(m.path, f.name, typ, f.wire)
		}
		raw, n := pbConsume(b[i:], typ)
		if n < 0 {
			return f.errSlot, pbWireError("field "+strconv.Quote(m.path+f.name), i, n)
		}
		i += n
		for _, tg := range f.targets {
			merge := seen == nil || seen[tg.slot]
			if reason := r.value(tg.conv, raw, &dst[tg.slot], merge); reason != "" {
				return tg.slot, reason
			}
			if seen != nil {
				seen[tg.slot] = true
			}
		}
		if f.child != nil {
			if slot, reason := r.message(raw.b, f.child, dst, seen); reason != "" {
				return slot, reason
			}
			r.defaults(f.child, dst, seen)
		}
	}
	return -1, ""
}

func pbConsume(b []byte, typ protowire.Type) (pbRaw, int) {
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		return pbRaw{u: v}, n
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(b)
		return pbRaw{u: uint64(v)}, n
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(b)
		return pbRaw{u: v}, n
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		return pbRaw{b: v}, n
	}
	return pbRaw{}, -1
}

// pbCount counts the values of repeated field f in b (which starts at its
// first tag), checking the wire format; other is set when the problem is
// in another field.
func pbCount(b []byte, path string, f *pbField) (count int, reason string, other bool) {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return 0, pbWireError("tag", i, n), true
		}
		i += n
		if num != f.num {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return 0, pbWireError("field "+strconv.Itoa(int(num)), i, n), true
			}
			i += n
			continue
		}
		switch {
		case typ == protowire.BytesType && f.packable:
			p, n := protowire.ConsumeBytes(b[i:])
			if n < 0 {
				return 0, pbWireError("field "+strconv.Quote(path+f.name), i, n), false
			}
			i += n
			switch f.wire {
			case protowire.VarintType:
				for _, c := range p {
					if c < 0x80 {
						count++
					}
				}
				if len(p) > 0 && p[len(p)-1] >= 0x80 {
					return 0, "malformed protobuf: packed field " + strconv.Quote(path+f.name) + " ends inside a varint", false
				}
			case protowire.Fixed32Type, protowire.Fixed64Type:
				size := 4
				if f.wire == protowire.Fixed64Type {
					size = 8
				}
				if len(p)%size != 0 {
					return 0, "malformed protobuf: packed field " + strconv.Quote(path+f.name) + " is not a whole number of values", false
				}
				count += len(p) / size
			}
		case typ == f.wire:
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return 0, pbWireError("field "+strconv.Quote(path+f.name), i, n), false
			}
			i += n
			count++
		default:
			return 0, pbWireTypeError(path, f.name, typ, f.wire), false
		}
	}
	return count, "", false
}

// collect reads every value of repeated or map field f in b (from its
// first tag on) into an ARRAY or MAP datum.
func (r *pbRun) collect(b []byte, path string, f *pbField, c *pbConv) (fluss.Datum, string, bool) {
	count, reason, other := pbCount(b, path, f)
	if reason != "" {
		return fluss.Datum{}, reason, other
	}
	d, reason := r.fill(b, path, f, c, count)
	return d, reason, false
}

// fill converts the count values of f in b (checked by pbCount).
func (r *pbRun) fill(b []byte, path string, f *pbField, c *pbConv, count int) (fluss.Datum, string) {
	a := &r.out.nested
	nd := a.newNested()
	var elems, keys, vals []fluss.Datum
	if f.isMap {
		keys, vals = a.datumSlice(count), a.datumSlice(count)
		nd.Keys, nd.Values = keys, vals
	} else {
		elems = a.datumSlice(count)
		nd.Elems = elems
	}
	k := 0
	put := func(raw pbRaw) string {
		if k >= count {
			return "malformed protobuf: field " + strconv.Quote(path+f.name) + " changed while read"
		}
		if f.isMap {
			var reason string
			keys[k], vals[k], reason = r.mapEntry(raw.b, c)
			if reason != "" {
				return reason
			}
		} else {
			if reason := r.value(c.elem, raw, &elems[k], false); reason != "" {
				return "element " + strconv.Itoa(k) + ": " + reason
			}
		}
		k++
		return ""
	}
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fluss.Datum{}, pbWireError("tag", i, n)
		}
		i += n
		if num != f.num {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return fluss.Datum{}, pbWireError("field "+strconv.Itoa(int(num)), i, n)
			}
			i += n
			continue
		}
		if typ == protowire.BytesType && f.packable {
			p, n := protowire.ConsumeBytes(b[i:])
			if n < 0 {
				return fluss.Datum{}, pbWireError("field "+strconv.Quote(path+f.name), i, n)
			}
			i += n
			for len(p) > 0 {
				raw, n := pbConsume(p, f.wire)
				if n < 0 {
					return fluss.Datum{}, pbWireError("packed field "+strconv.Quote(path+f.name), i, n)
				}
				p = p[n:]
				if reason := put(raw); reason != "" {
					return fluss.Datum{}, reason
				}
			}
			continue
		}
		raw, n := pbConsume(b[i:], typ)
		if n < 0 {
			return fluss.Datum{}, pbWireError("field "+strconv.Quote(path+f.name), i, n)
		}
		i += n
		if reason := put(raw); reason != "" {
			return fluss.Datum{}, reason
		}
	}
	if k != count {
		return fluss.Datum{}, "malformed protobuf: field " + strconv.Quote(path+f.name) + " changed while read"
	}
	return fluss.Datum{Nested: nd}, ""
}

// mapEntry reads one map entry (key = 1, value = 2; absent = default).
func (r *pbRun) mapEntry(b []byte, c *pbConv) (fluss.Datum, fluss.Datum, string) {
	kraw, vraw := pbRaw{b: pbEmpty}, pbRaw{b: pbEmpty}
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fluss.Datum{}, fluss.Datum{}, pbWireError("map entry tag", i, n)
		}
		i += n
		var dst *pbRaw
		var want protowire.Type
		switch num {
		case 1:
			dst, want = &kraw, c.key.wire
		case 2:
			dst, want = &vraw, c.val.wire
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return fluss.Datum{}, fluss.Datum{}, pbWireError("map entry field", i, n)
			}
			i += n
			continue
		}
		if typ != want {
			return fluss.Datum{}, fluss.Datum{}, "map entry field " + strconv.Itoa(int(num)) + " has wire type " + strconv.Itoa(int(typ)) + ", want " + strconv.Itoa(int(want))
		}
		raw, n := pbConsume(b[i:], typ)
		if n < 0 {
			return fluss.Datum{}, fluss.Datum{}, pbWireError("map entry field", i, n)
		}
		i += n
		*dst = raw
	}
	var kd, vd fluss.Datum
	if reason := r.value(c.key, kraw, &kd, false); reason != "" {
		return fluss.Datum{}, fluss.Datum{}, "map key: " + reason
	}
	if reason := r.value(c.val, vraw, &vd, false); reason != "" {
		return fluss.Datum{}, fluss.Datum{}, "map value: " + reason
	}
	return kd, vd, ""
}

// pbInteger is the integer an integer or enum kind's raw value holds; ok
// is false for a uint64/fixed64 above MaxInt64.
func pbInteger(k protoreflect.Kind, u uint64) (int64, bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind, protoreflect.EnumKind:
		return int64(int32(u)), true
	case protoreflect.Sint32Kind:
		return int64(int32(protowire.DecodeZigZag(u & math.MaxUint32))), true
	case protoreflect.Sint64Kind:
		return protowire.DecodeZigZag(u), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return int64(uint32(u)), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return int64(u), u <= math.MaxInt64
	}
	return int64(u), true
}

func pbFloatValue(k protoreflect.Kind, u uint64) float64 {
	if k == protoreflect.FloatKind {
		return float64(math.Float32frombits(uint32(u)))
	}
	return math.Float64frombits(u)
}

func pbIntString(k protoreflect.Kind, u uint64) string {
	if v, ok := pbInteger(k, u); ok {
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatUint(u, 10)
}

// appendInteger writes the integer's decimal text.
func appendInteger(dst []byte, k protoreflect.Kind, u uint64) []byte {
	if v, ok := pbInteger(k, u); ok {
		return strconv.AppendInt(dst, v, 10)
	}
	return strconv.AppendUint(dst, u, 10)
}

// value converts one raw value with c into *dst, and returns the reason
// it cannot. *dst holds the slot's current value: a message that occurs
// twice merges into it when merge is set.
func (r *pbRun) value(c *pbConv, raw pbRaw, dst *fluss.Datum, merge bool) string {
	a := &r.out.arena
	switch c.op {
	case pbBool:
		*dst = fluss.Datum{I: int64(min(raw.u, 1))}
		return ""
	case pbBoolText:
		if raw.u != 0 {
			*dst = fluss.Datum{B: pbTrue}
			return ""
		}
		*dst = fluss.Datum{B: pbFalse}
		return ""
	case pbInt:
		v, ok := pbInteger(c.kind, raw.u)
		if !ok || v < c.lo || v > c.hi {
			return "integer " + pbIntString(c.kind, raw.u) + " is out of range for " + c.t.Root.String()
		}
		*dst = fluss.Datum{I: v}
		return ""
	case pbIntFloat:
		v, ok := pbInteger(c.kind, raw.u)
		f := float64(v)
		if !ok {
			f = float64(raw.u)
		}
		if c.t.Root == fluss.TypeFloat {
			f = float64(float32(f))
		}
		*dst = fluss.Datum{F: f}
		return ""
	case pbIntText:
		buf := a.alloc(20)
		*dst = fluss.Datum{B: a.shrink(buf, len(appendInteger(buf[:0], c.kind, raw.u)))}
		return ""
	case pbIntDecimal:
		buf := a.alloc(20)
		text := appendInteger(buf[:0], c.kind, raw.u)
		d, reason := decimalDatum(text, c.t.Precision, c.t.Scale)
		a.shrink(buf, 0)
		*dst = d
		return reason
	case pbIntTime:
		v, ok := pbInteger(c.kind, raw.u)
		if !ok {
			return "integer " + pbIntString(c.kind, raw.u) + " is out of range for " + c.t.Root.String()
		}
		var reason string
		*dst, reason = pbIntTimeDatum(c.t, v)
		return reason
	case pbFloat:
		f := pbFloatValue(c.kind, raw.u)
		if c.t.Root == fluss.TypeFloat && c.kind == protoreflect.DoubleKind {
			if !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
				return "number " + strconv.FormatFloat(f, 'g', -1, 64) + " is out of range for FLOAT"
			}
			f = float64(float32(f))
		}
		*dst = fluss.Datum{F: f}
		return ""
	case pbFloatText:
		bits := 64
		if c.kind == protoreflect.FloatKind {
			bits = 32
		}
		buf := a.alloc(32)
		*dst = fluss.Datum{B: a.shrink(buf, len(strconv.AppendFloat(buf[:0], pbFloatValue(c.kind, raw.u), 'g', -1, bits)))}
		return ""
	case pbFloatDecimal:
		bits := 64
		if c.kind == protoreflect.FloatKind {
			bits = 32
		}
		buf := a.alloc(32)
		text := strconv.AppendFloat(buf[:0], pbFloatValue(c.kind, raw.u), 'g', -1, bits)
		d, reason := decimalDatum(text, c.t.Precision, c.t.Scale)
		a.shrink(buf, 0)
		*dst = d
		return reason
	case pbString:
		if !utf8.Valid(raw.b) {
			return "string is not valid UTF-8"
		}
		if c.maxLen > 0 {
			if n := utf8.RuneCount(raw.b); n > c.maxLen {
				return "value of length " + strconv.Itoa(n) + " is longer than " + c.t.String()
			}
		}
		*dst = fluss.Datum{B: raw.b}
		return ""
	case pbStringBytes, pbBytes:
		if c.maxLen > 0 && len(raw.b) > c.maxLen {
			return "value of length " + strconv.Itoa(len(raw.b)) + " is longer than " + c.t.String()
		}
		*dst = fluss.Datum{B: raw.b}
		return ""
	case pbStringParse:
		if !utf8.Valid(raw.b) {
			return "string is not valid UTF-8"
		}
		var reason string
		*dst, reason = textDatum(c.t, raw.b, a)
		return reason
	case pbEnumName:
		n := int32(raw.u)
		name := c.enum.name(n)
		if name == nil {
			buf := a.alloc(11)
			name = a.shrink(buf, len(strconv.AppendInt(buf[:0], int64(n), 10)))
		}
		if c.maxLen > 0 && utf8.RuneCount(name) > c.maxLen {
			return "value " + strconv.Quote(string(name)) + " is longer than " + c.t.String()
		}
		*dst = fluss.Datum{B: name}
		return ""
	case pbRow:
		nd := dst.Nested
		if !merge || nd == nil {
			nd = r.out.nested.newNested()
			nd.Fields = r.out.nested.datumSlice(len(c.row.initial))
			copy(nd.Fields, c.row.initial)
		}
		if slot, reason := r.message(raw.b, c.row, nd.Fields, nil); reason != "" {
			if slot >= 0 {
				if prefix := "field " + strconv.Quote(c.row.slotNames[slot]); !strings.HasPrefix(reason, prefix) {
					return prefix + ": " + reason
				}
			}
			return reason
		}
		for _, i := range c.row.notNull {
			if nd.Fields[i].Null {
				return "field " + strconv.Quote(c.row.slotNames[i]) + ": no value for a NOT NULL field"
			}
		}
		*dst = fluss.Datum{Nested: nd}
		return ""
	case pbTimestamp, pbTimestampMillis, pbDuration:
		var v [2]uint64
		if reason := pbVarintFields(raw.b, v[:]); reason != "" {
			return reason
		}
		sec, nanos := int64(v[0]), int64(int32(v[1]))
		if c.op == pbDuration {
			if sec < -315_576_000_000 || sec > 315_576_000_000 || nanos <= -1e9 || nanos >= 1e9 {
				return "google.protobuf.Duration out of range"
			}
			*dst = fluss.Datum{I: sec*1000 + nanos/1e6}
			return ""
		}
		if sec < -62_135_596_800 || sec > 253_402_300_799 || nanos < 0 || nanos >= 1e9 {
			return "google.protobuf.Timestamp out of range (0001-01-01 to 9999-12-31, nanos 0 to 999999999)"
		}
		millis, nano := sec*1000+nanos/1e6, int32(nanos%1e6)
		if c.op == pbTimestampMillis {
			*dst = fluss.Datum{I: millis}
			return ""
		}
		millis, nano = truncTimestamp(millis, nano, c.t.Precision)
		*dst = fluss.Datum{I: millis, N: nano}
		return ""
	case pbDate:
		var v [3]uint64
		if reason := pbVarintFields(raw.b, v[:]); reason != "" {
			return reason
		}
		y, m, d := int64(int32(v[0])), int64(int32(v[1])), int64(int32(v[2]))
		if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
			return fmt.Sprintf("google.type.Date %d-%d-%d is not a full date", y, m, d)
		}
		*dst = fluss.Datum{I: daysFromCivil(y, m, d)}
		return ""
	case pbTimeOfDay:
		var v [4]uint64
		if reason := pbVarintFields(raw.b, v[:]); reason != "" {
			return reason
		}
		h, m, s, ns := int64(int32(v[0])), int64(int32(v[1])), int64(int32(v[2])), int64(int32(v[3]))
		if h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 59 || ns < 0 || ns >= 1e9 {
			return fmt.Sprintf("google.type.TimeOfDay %02d:%02d:%02d.%09d is out of range", h, m, s, ns)
		}
		*dst = fluss.Datum{I: truncMillis(((h*60+m)*60+s)*1000+ns/1e6, c.t.Precision)}
		return ""
	case pbDecimalMsg:
		var reason string
		*dst, reason = pbDecimalMessage(raw.b, c.t)
		return reason
	case pbWrapper:
		v := pbRaw{b: pbEmpty}
		b := raw.b
		for i := 0; i < len(b); {
			num, typ, n := protowire.ConsumeTag(b[i:])
			if n < 0 {
				return pbWireError("tag", i, n)
			}
			i += n
			if num != 1 {
				if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
					return pbWireError("field", i, n)
				}
				i += n
				continue
			}
			if typ != c.elem.wire {
				return "wrapper value has wire type " + strconv.Itoa(int(typ)) + ", want " + strconv.Itoa(int(c.elem.wire))
			}
			if v, n = pbConsume(b[i:], typ); n < 0 {
				return pbWireError("wrapper value", i, n)
			}
			i += n
		}
		*dst = fluss.Datum{}
		return r.value(c.elem, v, dst, false)
	}
	return "no conversion"
}

var (
	pbTrue  = []byte("true")
	pbFalse = []byte("false")
)

// pbIntTimeDatum reads an integer as DATE days, TIME milliseconds of the
// day or TIMESTAMP epoch milliseconds, as JSON numbers are.
func pbIntTimeDatum(t *fluss.DataType, n int64) (fluss.Datum, string) {
	switch t.Root {
	case fluss.TypeDate:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return fluss.Datum{}, "day number " + strconv.FormatInt(n, 10) + " is out of range for DATE"
		}
		return fluss.Datum{I: n}, ""
	case fluss.TypeTime:
		if n < 0 || n >= 86_400_000 {
			return fluss.Datum{}, "milliseconds of day " + strconv.FormatInt(n, 10) + " is out of range for TIME"
		}
		return fluss.Datum{I: truncMillis(n, t.Precision)}, ""
	}
	millis, nano := truncTimestamp(n, 0, t.Precision)
	return fluss.Datum{I: millis, N: nano}, ""
}

// pbVarintFields reads fields 1 … len(v) of a message whose fields are all
// varints (Timestamp, Duration, Date, TimeOfDay); absent fields stay 0.
func pbVarintFields(b []byte, v []uint64) string {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return pbWireError("tag", i, n)
		}
		i += n
		if num < 1 || int(num) > len(v) {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return pbWireError("field", i, n)
			}
			i += n
			continue
		}
		if typ != protowire.VarintType {
			return "field " + strconv.Itoa(int(num)) + " has wire type " + strconv.Itoa(int(typ)) + ", want 0"
		}
		x, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return pbWireError("field", i, n)
		}
		i += n
		v[num-1] = x
	}
	return ""
}

// pbDecimalMessage converts a confluent.type.Decimal (value = unscaled
// big-endian two's complement, scale) to DECIMAL(p, s), rescaling with
// rounding half-up.
func pbDecimalMessage(b []byte, t *fluss.DataType) (fluss.Datum, string) {
	var unscaled []byte
	var scale int64
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fluss.Datum{}, pbWireError("tag", i, n)
		}
		i += n
		switch {
		case num == 1 && typ == protowire.BytesType:
			unscaled, n = protowire.ConsumeBytes(b[i:])
		case num == 3 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b[i:])
			scale = int64(int32(x))
		case num == 1 || num == 3:
			return fluss.Datum{}, "confluent.type.Decimal field " + strconv.Itoa(int(num)) + " has wire type " + strconv.Itoa(int(typ))
		default:
			n = protowire.ConsumeFieldValue(num, typ, b[i:])
		}
		if n < 0 {
			return fluss.Datum{}, pbWireError("field", i, n)
		}
		i += n
	}
	p, s := t.Precision, int64(t.Scale)
	overflow := func() (fluss.Datum, string) {
		return fluss.Datum{}, "confluent.type.Decimal does not fit " + t.String()
	}
	if len(unscaled) > pbMaxDecimalBytes {
		return fluss.Datum{}, "confluent.type.Decimal value of " + strconv.Itoa(len(unscaled)) + " bytes is too long"
	}
	if scale == s && len(unscaled) <= 8 && p <= 18 {
		var v int64
		if len(unscaled) > 0 && unscaled[0]&0x80 != 0 {
			v = -1
		}
		for _, c := range unscaled {
			v = v<<8 | int64(c)
		}
		lim := int64(pow10u(p))
		if v >= lim || v <= -lim {
			return overflow()
		}
		return fluss.Datum{I: v}, ""
	}
	n := new(big.Int).SetBytes(unscaled)
	if len(unscaled) > 0 && unscaled[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(unscaled))))
	}
	switch diff := s - scale; {
	case n.Sign() == 0:
	case diff > int64(p):
		return overflow()
	case diff > 0:
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(diff), nil))
	case diff < -3*pbMaxDecimalBytes:
		n.SetInt64(0)
	case diff < 0:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(-diff), nil)
		q, rem := new(big.Int).QuoRem(n, div, new(big.Int))
		rem.Abs(rem).Lsh(rem, 1)
		if rem.Cmp(div) >= 0 {
			q.Add(q, big.NewInt(int64(n.Sign())))
		}
		n = q
	}
	lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	if new(big.Int).Abs(n).Cmp(lim) >= 0 {
		return overflow()
	}
	if p <= 18 {
		return fluss.Datum{I: n.Int64()}, ""
	}
	return fluss.Datum{B: twosComplement(n)}, ""
}
