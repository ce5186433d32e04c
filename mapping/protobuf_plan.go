package mapping

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Building a plan: a writer schema message against the route's field tree.

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
