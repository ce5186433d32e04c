package mapping

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Compiling a writer schema into the plan its records are read with.

// parseAvroSchema parses a registry schema, its references first.
func parseAvroSchema(s *schemaregistry.Schema) (avro.Schema, error) {
	if s.Type != "" && !strings.EqualFold(s.Type, "AVRO") {
		return nil, fmt.Errorf("the writer schema is a %s schema, not Avro", s.Type)
	}
	cache := &avro.SchemaCache{}
	// A reference may itself use others, and Deps is unordered: parse
	// what parses until nothing more does.
	pending := make([]string, 0, len(s.Deps))
	for name := range s.Deps {
		pending = append(pending, name)
	}
	slices.Sort(pending)
	for len(pending) > 0 {
		var failed []string
		var lastErr error
		for _, name := range pending {
			if _, err := avro.ParseWithCache(s.Deps[name], "", cache); err != nil {
				failed, lastErr = append(failed, name), err
			}
		}
		if len(failed) == len(pending) {
			return nil, fmt.Errorf("referenced schema %q does not parse: %w", failed[0], lastErr)
		}
		pending = failed
	}
	return avro.ParseWithCache(s.Text, "", cache)
}

// compile builds the plan of a writer schema; a schema that cannot fill
// the route gives a plan that fails every record.
func (d *avroDecoder) compile(s *schemaregistry.Schema) (plan *avroPlan) {
	defer func() {
		// A registry schema is outside input: whatever the parser does
		// with it must not take the gateway down.
		if v := recover(); v != nil {
			plan = &avroPlan{failReason: fmt.Sprintf("writer schema %s: cannot be compiled: %v", schemaLabel(s), v)}
		}
	}()
	schema, err := parseAvroSchema(s)
	if err != nil {
		return &avroPlan{failReason: "writer schema " + schemaLabel(s) + ": " + err.Error()}
	}
	cc := &avroCompiler{t: d.t, named: map[string]*avroType{}}
	schema = derefAvro(schema)
	if rs, ok := schema.(*avro.RecordSchema); ok {
		root, col, reason := cc.record(rs, d.t.tree, 0)
		if reason != "" {
			return &avroPlan{failCol: col, failReason: "writer schema " + schemaLabel(s) + ": " + reason}
		}
		return &avroPlan{root: root}
	}
	// A primitive (or other non-record) schema fills the one column.
	var only *jsonField
	if len(d.t.tree.fields) == 1 {
		for _, f := range d.t.tree.fields {
			only = f
		}
	}
	if only == nil || len(only.cols) == 0 || only.child != nil {
		return &avroPlan{failReason: "writer schema " + schemaLabel(s) + " is " + avroTypeName(schema) +
			", not a record (only a route filling a single column can read that)"}
	}
	p := &avroPlan{}
	for _, i := range only.cols {
		name := d.t.columns[i].Name
		conv, reason := cc.conv(schema, &d.t.columns[i].Type, false, 0)
		if reason != "" {
			return &avroPlan{failCol: name, failReason: "writer schema " + schemaLabel(s) + ": " + reason}
		}
		p.whole = append(p.whole, avroColConv{col: i, name: name, conv: conv})
	}
	return p
}

func schemaLabel(s *schemaregistry.Schema) string {
	if s.Subject != "" {
		return "id " + strconv.FormatInt(s.ID, 10) + " (" + s.Subject + " v" + strconv.Itoa(s.Version) + ")"
	}
	return "id " + strconv.FormatInt(s.ID, 10)
}

type avroCompiler struct {
	t     registryTarget
	named map[string]*avroType
}

func derefAvro(s avro.Schema) avro.Schema {
	if ref, ok := s.(*avro.RefSchema); ok {
		return ref.Schema()
	}
	return s
}

// record compiles a writer record against one level of the field tree.
func (cc *avroCompiler) record(rs *avro.RecordSchema, node *jsonNode, depth int) (*avroRecordPlan, string, string) {
	if depth > maxAvroDepth {
		return nil, "", "nested too deeply"
	}
	p := &avroRecordPlan{}
	for _, f := range rs.Fields() {
		fp := avroFieldPlan{name: f.Name(), skip: cc.typ(f.Type())}
		tf := node.fields[f.Name()]
		if tf == nil {
			if cc.t.rejectUnknown {
				return nil, "", "unknown field " + strconv.Quote(f.Name()) + " (unknown_fields: reject)"
			}
			p.fields = append(p.fields, fp)
			continue
		}
		for _, i := range tf.cols {
			col := &cc.t.columns[i]
			conv, reason := cc.conv(f.Type(), &col.Type, false, depth)
			if reason != "" {
				return nil, col.Name, "field " + strconv.Quote(f.Name()) + ": " + reason
			}
			fp.cols = append(fp.cols, avroColConv{col: i, name: col.Name, conv: conv})
		}
		if tf.child != nil {
			child, col, reason := cc.descend(f.Type(), tf.child, depth+1)
			if reason != "" {
				return nil, col, reason
			}
			fp.child = child
		}
		p.fields = append(p.fields, fp)
	}
	return p, "", ""
}

// descend compiles deeper paths through a field; nil when its type has no
// record to descend into (the paths' columns stay unset).
func (cc *avroCompiler) descend(ws avro.Schema, node *jsonNode, depth int) (*avroDescend, string, string) {
	ws = derefAvro(ws)
	switch s := ws.(type) {
	case *avro.RecordSchema:
		rec, col, reason := cc.record(s, node, depth)
		if reason != "" {
			return nil, col, reason
		}
		return &avroDescend{rec: rec}, "", ""
	case *avro.UnionSchema:
		d := &avroDescend{}
		found := false
		for _, b := range s.Types() {
			var plan *avroRecordPlan
			if rs, ok := derefAvro(b).(*avro.RecordSchema); ok {
				rec, col, reason := cc.record(rs, node, depth)
				if reason != "" {
					return nil, col, reason
				}
				plan, found = rec, true
			}
			d.branches = append(d.branches, plan)
			d.skips = append(d.skips, cc.typ(b))
		}
		if found {
			return d, "", ""
		}
	}
	return nil, "", ""
}

// typ compiles a writer type for skipping (named types once, so recursive
// schemas terminate).
func (cc *avroCompiler) typ(s avro.Schema) *avroType {
	s = derefAvro(s)
	if n, ok := s.(avro.NamedSchema); ok {
		if t := cc.named[n.FullName()]; t != nil {
			return t
		}
	}
	t := &avroType{}
	switch s := s.(type) {
	case *avro.NullSchema:
		t.kind, t.zeroWidth = akNull, true
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			t.kind, t.minSize = akBoolean, 1
		case avro.Int:
			t.kind, t.minSize = akInt, 1
		case avro.Long:
			t.kind, t.minSize = akLong, 1
		case avro.Float:
			t.kind, t.minSize = akFloat, 4
		case avro.Double:
			t.kind, t.minSize = akDouble, 8
		case avro.Bytes:
			t.kind, t.minSize = akBytes, 1
		case avro.String:
			t.kind, t.minSize = akString, 1
		default:
			t.kind, t.zeroWidth = akNull, true
		}
	case *avro.RecordSchema:
		t.kind = akRecord
		// Registered before its fields so that recursion ends here; while
		// in progress it counts as neither zero-width nor of any size.
		cc.named[s.FullName()] = t
		zero := true
		for _, f := range s.Fields() {
			ft := cc.typ(f.Type())
			t.fields = append(t.fields, ft)
			t.minSize += ft.minSize
			zero = zero && ft.zeroWidth
		}
		t.zeroWidth = zero
	case *avro.EnumSchema:
		t.kind, t.minSize = akEnum, 1
		cc.named[s.FullName()] = t
	case *avro.FixedSchema:
		t.kind, t.size, t.minSize, t.zeroWidth = akFixed, s.Size(), s.Size(), s.Size() == 0
		cc.named[s.FullName()] = t
	case *avro.ArraySchema:
		t.kind, t.minSize = akArray, 1
		t.items = cc.typ(s.Items())
	case *avro.MapSchema:
		t.kind, t.minSize = akMap, 1
		t.items = cc.typ(s.Values())
	case *avro.UnionSchema:
		t.kind = akUnion
		least := math.MaxInt
		for _, b := range s.Types() {
			bt := cc.typ(b)
			t.branches = append(t.branches, bt)
			least = min(least, bt.minSize)
		}
		if least == math.MaxInt {
			least = 0
		}
		t.minSize = 1 + least
	}
	return t
}

func avroTypeName(s avro.Schema) string {
	s = derefAvro(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return "null"
	case *avro.PrimitiveSchema:
		if lt := avroLogical(s); lt != "" {
			return string(s.Type()) + " (" + lt + ")"
		}
		return string(s.Type())
	case *avro.RecordSchema:
		return "record " + s.FullName()
	case *avro.EnumSchema:
		return "enum " + s.FullName()
	case *avro.FixedSchema:
		if l, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			return "fixed " + s.FullName() + " (decimal(" + strconv.Itoa(l.Precision()) + ", " + strconv.Itoa(l.Scale()) + "))"
		}
		return "fixed " + s.FullName() + "(" + strconv.Itoa(s.Size()) + ")"
	case *avro.ArraySchema:
		return "array<" + avroTypeName(s.Items()) + ">"
	case *avro.MapSchema:
		return "map<" + avroTypeName(s.Values()) + ">"
	case *avro.UnionSchema:
		names := make([]string, len(s.Types()))
		for i, b := range s.Types() {
			names[i] = avroTypeName(b)
		}
		return "union [" + strings.Join(names, ", ") + "]"
	}
	return string(s.Type())
}

// avroLogical is a primitive's logical type, also those hamba does not
// know (timestamp-nanos), which stay a "logicalType" property.
func avroLogical(s *avro.PrimitiveSchema) string {
	if l := s.Logical(); l != nil {
		if d, ok := l.(*avro.DecimalLogicalSchema); ok {
			return "decimal(" + strconv.Itoa(d.Precision()) + ", " + strconv.Itoa(d.Scale()) + ")"
		}
		return string(l.Type())
	}
	if lt, ok := s.Prop("logicalType").(string); ok {
		return lt
	}
	return ""
}

// conv compiles the conversion of writer type ws into column type t; it
// returns the reason when no value of ws can fill t.
func (cc *avroCompiler) conv(ws avro.Schema, t *fluss.DataType, nested bool, depth int) (*avroConv, string) {
	if depth > maxAvroDepth {
		return nil, "nested too deeply"
	}
	ws = derefAvro(ws)
	c := &avroConv{w: cc.typ(ws), target: t.Root}
	cannot := func() (*avroConv, string) {
		return nil, "Avro " + avroTypeName(ws) + " cannot fill " + t.String()
	}
	if nested && (t.Root == fluss.TypeChar || t.Root == fluss.TypeBinary) {
		c.maxLen, c.charLen = t.Length, t.Root == fluss.TypeChar
	}
	switch s := ws.(type) {
	case *avro.NullSchema:
		if t.NotNull {
			return nil, "null for a NOT NULL column"
		}
		c.op = opNull
		return c, ""
	case *avro.UnionSchema:
		c.op = opUnion
		first := ""
		ok := false
		for _, b := range s.Types() {
			bc, reason := cc.conv(b, t, nested, depth+1)
			c.branches = append(c.branches, bc)
			c.reasons = append(c.reasons, reason)
			if _, null := derefAvro(b).(*avro.NullSchema); !null {
				ok = ok || bc != nil
				if bc == nil && first == "" {
					first = reason
				}
			}
		}
		if !ok {
			if first == "" {
				return cannot()
			}
			return nil, first
		}
		return c, ""
	case *avro.PrimitiveSchema:
		if reason := primitiveConv(c, s, t); reason != "" {
			return nil, reason
		}
		return c, ""
	case *avro.EnumSchema:
		if t.Root != fluss.TypeString && t.Root != fluss.TypeChar {
			return cannot()
		}
		c.op = opEnum
		for _, sym := range s.Symbols() {
			c.symbols = append(c.symbols, []byte(sym))
		}
		return c, ""
	case *avro.FixedSchema:
		if l, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && t.Root == fluss.TypeDecimal {
			c.op, c.size = opDecimalFixed, s.Size()
			c.wScale, c.scale, c.precision = l.Scale(), t.Scale, t.Precision
			return c, ""
		}
		switch t.Root {
		case fluss.TypeBytes:
		case fluss.TypeBinary:
			if s.Size() > t.Length {
				return nil, "Avro " + avroTypeName(ws) + " is longer than " + t.String()
			}
		default:
			return cannot()
		}
		c.op, c.size = opFixed, s.Size()
		return c, ""
	case *avro.RecordSchema:
		if t.Root != fluss.TypeRow {
			return cannot()
		}
		c.op, c.nFields = opRow, len(t.Fields)
		found := make([]bool, len(t.Fields))
		for _, f := range s.Fields() {
			rf := avroRowField{name: f.Name(), idx: -1, skip: cc.typ(f.Type())}
			for j := range t.Fields {
				if t.Fields[j].Name == f.Name() {
					rf.idx = j
					break
				}
			}
			if rf.idx < 0 {
				if cc.t.rejectUnknown {
					return nil, "unknown field " + strconv.Quote(f.Name()) + " in record " + s.FullName() + " (unknown_fields: reject)"
				}
			} else {
				conv, reason := cc.conv(f.Type(), &t.Fields[rf.idx].Type, true, depth+1)
				if reason != "" {
					return nil, "ROW field " + strconv.Quote(f.Name()) + ": " + reason
				}
				rf.conv, found[rf.idx] = conv, true
			}
			c.fields = append(c.fields, rf)
		}
		for j, f := range t.Fields {
			if !found[j] && f.Type.NotNull {
				return nil, "ROW field " + strconv.Quote(f.Name) + " is NOT NULL but record " + s.FullName() + " has no such field"
			}
		}
		return c, ""
	case *avro.ArraySchema:
		if t.Root != fluss.TypeArray || t.Elem == nil {
			return cannot()
		}
		elem, reason := cc.conv(s.Items(), t.Elem, true, depth+1)
		if reason != "" {
			return nil, "array element: " + reason
		}
		c.op, c.elem = opArray, elem
		return c, ""
	case *avro.MapSchema:
		if t.Root != fluss.TypeMap || t.Key == nil || t.Value == nil {
			return cannot()
		}
		if t.Key.Root != fluss.TypeString && t.Key.Root != fluss.TypeChar {
			return nil, "Avro map keys are strings and cannot fill " + t.Key.String()
		}
		key := &avroConv{op: opString, w: &avroType{kind: akString, minSize: 1}}
		if t.Key.Root == fluss.TypeChar {
			key.maxLen, key.charLen = t.Key.Length, true
		}
		val, reason := cc.conv(s.Values(), t.Value, true, depth+1)
		if reason != "" {
			return nil, "map value: " + reason
		}
		c.op, c.key, c.elem = opMap, key, val
		return c, ""
	}
	return cannot()
}

// primitiveConv fills c for a primitive writer type (with its logical
// type) into t; a logical type falls back to its physical type's mapping.
func primitiveConv(c *avroConv, s *avro.PrimitiveSchema, t *fluss.DataType) string {
	lt := avroLogical(s)
	root := t.Root
	ts := root == fluss.TypeTimestamp || root == fluss.TypeTimestampLTZ
	c.prec = t.Precision
	switch s.Type() {
	case avro.Boolean:
		if root == fluss.TypeBoolean {
			c.op = opBool
			return ""
		}
	case avro.Int:
		switch {
		case lt == string(avro.Date) && root == fluss.TypeDate:
			c.op, c.lo, c.hi = opInt, math.MinInt32, math.MaxInt32
			return ""
		case lt == string(avro.TimeMillis) && root == fluss.TypeTime:
			c.op = opTimeMillis
			return ""
		}
		c.op, c.lo, c.hi = opInt, math.MinInt32, math.MaxInt32
		switch root {
		case fluss.TypeTinyInt:
			c.lo, c.hi = math.MinInt8, math.MaxInt8
			return ""
		case fluss.TypeSmallInt:
			c.lo, c.hi = math.MinInt16, math.MaxInt16
			return ""
		case fluss.TypeInt, fluss.TypeBigInt:
			return ""
		}
	case avro.Long:
		switch {
		case lt == string(avro.TimeMicros) && root == fluss.TypeTime:
			c.op = opTimeMicros
			return ""
		case lt == string(avro.TimestampMillis) && ts, lt == string(avro.LocalTimestampMillis) && root == fluss.TypeTimestamp:
			c.op = opTimestampMillis
			return ""
		case lt == string(avro.TimestampMicros) && ts, lt == string(avro.LocalTimestampMicros) && root == fluss.TypeTimestamp:
			c.op = opTimestampMicros
			return ""
		case lt == "timestamp-nanos" && ts, lt == "local-timestamp-nanos" && root == fluss.TypeTimestamp:
			c.op = opTimestampNanos
			return ""
		}
		if root == fluss.TypeBigInt {
			c.op = opLong
			return ""
		}
	case avro.Float:
		if root == fluss.TypeFloat || root == fluss.TypeDouble {
			c.op = opFloat
			return ""
		}
	case avro.Double:
		if root == fluss.TypeDouble {
			c.op = opDouble
			return ""
		}
	case avro.String:
		if root == fluss.TypeString || root == fluss.TypeChar {
			c.op = opString
			return ""
		}
	case avro.Bytes:
		if l, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && root == fluss.TypeDecimal {
			c.op = opDecimalBytes
			c.wScale, c.scale, c.precision = l.Scale(), t.Scale, t.Precision
			return ""
		}
		if root == fluss.TypeBytes || root == fluss.TypeBinary {
			c.op = opBytes
			return ""
		}
	}
	return "Avro " + avroTypeName(s) + " cannot fill " + t.String()
}
