package mapping

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hamba/avro/v2"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Avro values and keys (value.format / key.format avro).
//
// hamba/avro parses the writer schema (its named-type references resolved
// from Schema.Deps); the decoder then compiles, once per writer schema, a
// plan that says for each writer field which columns it fills and how
// (type-checked against the column types), which nested records to descend
// into for value.columns paths, and how to skip everything else. Records
// are decoded by a hand-written walker over the binary datum driven by
// that plan; it allocates nothing: strings and bytes alias the payload,
// nested values come from the Converted's arenas. Fields match columns by
// name, so records of every version of a schema land in the same table;
// columns the writer schema lacks stay unset (null, missing_fields reject
// or a NOT NULL refusal, as Convert decides).
//
// Column type ← Avro writer type:
//
//	BOOLEAN                boolean
//	TINYINT, SMALLINT      int (range-checked)
//	INT                    int, date, time-millis (their numbers)
//	BIGINT                 int, long (also with a timestamp or time logical type)
//	FLOAT                  float
//	DOUBLE                 float, double
//	STRING, CHAR           string (UTF-8 checked; uuid too), enum (the symbol)
//	BYTES, BINARY          bytes, fixed (BINARY(n): fixed sizes up to n)
//	DECIMAL(p,s)           decimal on bytes or fixed; another scale is rescaled
//	                       when that is exact, else the record is refused
//	DATE                   int date
//	TIME(p)                int time-millis, long time-micros (truncated)
//	TIMESTAMP_LTZ(p)       long timestamp-millis / -micros / -nanos
//	TIMESTAMP(p)           the same, and local-timestamp-millis / -micros / -nanos
//	ROW                    record, fields by name (others skipped)
//	ARRAY                  array
//	MAP<STRING, V>         map
//	(the column's type)    ["null", X] or [X, "null"]: X, null → null; any
//	                       other union: the branch written must convert
//
// A writer schema that is not a record can fill a route whose field tree
// has exactly one column (a primitive key schema, say).

const (
	// maxAvroDepth bounds nesting (recursive schemas could otherwise
	// recurse once per payload byte).
	maxAvroDepth = 100
	// maxAvroPlans bounds the compiled writer schemas kept per decoder;
	// past it the cache starts over.
	maxAvroPlans = 1024
	// minAvroZeroWidthItems is the least bound on the decoded array items
	// that take no bytes (nulls, empty records), whose counts the payload
	// size does not limit: a datum may hold this many plus its length.
	minAvroZeroWidthItems = 1024
	// maxAvroDecimalBytes bounds a decimal's unscaled bytes (38 digits
	// take 16).
	maxAvroDecimalBytes = 64
)

type avroDecoder struct {
	t     registryTarget
	plans writerSchemaCache[*avroPlan]
}

func newAvroDecoder(t registryTarget) (registryDecoder, error) {
	d := &avroDecoder{t: t}
	d.plans.max = maxAvroPlans
	return d, nil
}

func (d *avroDecoder) decode(s *Serialized, out *Converted) (string, string) {
	p := d.plan(s.Schema)
	if p.failReason != "" {
		return p.failCol, p.failReason
	}
	r := avroReader{buf: s.Payload, zeroLeft: minAvroZeroWidthItems + len(s.Payload)}
	col := p.run(&r, out)
	if r.err != "" {
		if r.path != "" {
			return col, "Avro field " + r.path + ": " + r.err
		}
		return col, "Avro datum: " + r.err
	}
	if r.pos != len(r.buf) {
		return "", strconv.Itoa(len(r.buf)-r.pos) + " bytes after the Avro datum (is the writer schema right?)"
	}
	return "", ""
}

// plan returns the compiled plan of a writer schema, compiling it once.
func (d *avroDecoder) plan(s *schemaregistry.Schema) *avroPlan {
	return d.plans.get(s, d.compile)
}

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

// avroPlan is a compiled writer schema.
type avroPlan struct {
	failCol, failReason string // every record of this schema fails so
	root                *avroRecordPlan
	whole               []avroColConv // a non-record schema filling one column
}

func (p *avroPlan) run(r *avroReader, out *Converted) string {
	if p.root != nil {
		return p.root.run(r, out, 0)
	}
	start := r.pos
	for _, c := range p.whole {
		r.pos = start
		out.Row[c.col] = r.value(c.conv, out, 0)
		out.seen[c.col] = true
		if r.err != "" {
			return c.name
		}
	}
	return ""
}

// avroRecordPlan is one writer record read against a level of the field
// tree.
type avroRecordPlan struct {
	fields []avroFieldPlan
}

type avroFieldPlan struct {
	name  string
	skip  *avroType     // the writer type
	cols  []avroColConv // columns it fills
	child *avroDescend  // deeper value.columns paths
}

type avroColConv struct {
	col  int
	name string // column name
	conv *avroConv
}

// avroDescend reads a nested record for deeper paths: the field's type is
// a record, or a union with record branches (nil plans skip their branch).
type avroDescend struct {
	rec      *avroRecordPlan
	branches []*avroRecordPlan
	skips    []*avroType
}

func (p *avroRecordPlan) run(r *avroReader, out *Converted, depth int) string {
	for i := range p.fields {
		f := &p.fields[i]
		if f.child == nil {
			switch len(f.cols) {
			case 0:
				r.skip(f.skip, depth+1)
				if r.err != "" {
					r.at(f.name)
					return ""
				}
				continue
			case 1:
				c := &f.cols[0]
				out.Row[c.col] = r.value(c.conv, out, depth+1)
				out.seen[c.col] = true
				if r.err != "" {
					r.at(f.name)
					return c.name
				}
				continue
			}
		}
		start := r.pos
		for j := range f.cols {
			c := &f.cols[j]
			r.pos = start
			out.Row[c.col] = r.value(c.conv, out, depth+1)
			out.seen[c.col] = true
			if r.err != "" {
				r.at(f.name)
				return c.name
			}
		}
		if f.child != nil {
			r.pos = start
			if col := f.child.run(r, out, depth+1); r.err != "" {
				r.at(f.name)
				return col
			}
		}
	}
	return ""
}

func (d *avroDescend) run(r *avroReader, out *Converted, depth int) string {
	if depth > maxAvroDepth {
		r.fail("nested too deeply")
		return ""
	}
	if d.rec != nil {
		return d.rec.run(r, out, depth)
	}
	b := r.branch(len(d.branches))
	if r.err != "" {
		return ""
	}
	if p := d.branches[b]; p != nil {
		return p.run(r, out, depth)
	}
	r.skip(d.skips[b], depth+1)
	return ""
}

// Writer types, compiled for skipping.

type avroKind uint8

const (
	akNull avroKind = iota
	akBoolean
	akInt
	akLong
	akFloat
	akDouble
	akBytes
	akString
	akRecord
	akEnum
	akArray
	akMap
	akUnion
	akFixed
)

// avroType is a compiled writer type.
type avroType struct {
	kind      avroKind
	size      int  // fixed size
	minSize   int  // a lower bound of its encoded size
	zeroWidth bool // always encoded in zero bytes (null, empty records)
	fields    []*avroType
	items     *avroType // array items, map values
	branches  []*avroType
}

// Decode conversions.

type avroOp uint8

const (
	opNull avroOp = iota
	opBool
	opInt // int → TINYINT … BIGINT, DATE (days), TIME (time-millis, truncated)
	opLong
	opFloat
	opDouble
	opString
	opBytes
	opFixed
	opEnum
	opDecimalBytes
	opDecimalFixed
	opTimeMillis
	opTimeMicros
	opTimestampMillis
	opTimestampMicros
	opTimestampNanos
	opUnion
	opRow
	opArray
	opMap
)

// avroConv reads one writer type into a datum of one Fluss type.
type avroConv struct {
	op      avroOp
	w       *avroType
	target  fluss.TypeRoot
	lo, hi  int64 // opInt range
	prec    int   // TIME, TIMESTAMP precision
	maxLen  int   // CHAR(n)/BINARY(n) inside a nested value (top-level columns: Convert checks)
	charLen bool  // maxLen counts characters
	size    int   // fixed size
	symbols [][]byte
	// decimal
	wScale, scale, precision int
	// union
	branches []*avroConv
	reasons  []string
	// row
	fields  []avroRowField
	nFields int
	// array elements, map values
	elem *avroConv
	// map keys
	key *avroConv
}

type avroRowField struct {
	name string
	idx  int       // ROW field index, -1: skipped
	conv *avroConv // nil: skipped
	skip *avroType
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

// The walker.

// avroReader reads a binary Avro datum. Errors are sticky: the first one
// is kept, and reads after it return zero values.
type avroReader struct {
	buf  []byte
	pos  int
	err  string
	path string // the field path of err, innermost last
	// zeroLeft is how many more array items that take no bytes may be
	// decoded.
	zeroLeft int
}

const errAvroTruncated = "truncated"

func (r *avroReader) fail(reason string) {
	if r.err == "" {
		r.err = reason
	}
}

// at records that the error happened inside field name.
func (r *avroReader) at(name string) {
	if r.path == "" {
		r.path = name
	} else {
		r.path = name + "." + r.path
	}
}

func (r *avroReader) long() int64 {
	if r.pos < len(r.buf) {
		if b := r.buf[r.pos]; b < 0x80 {
			r.pos++
			return int64(b>>1) ^ -int64(b&1)
		}
	}
	return r.longSlow()
}

func (r *avroReader) longSlow() int64 {
	var v uint64
	for i := range 10 {
		if r.pos >= len(r.buf) {
			r.fail(errAvroTruncated)
			return 0
		}
		b := r.buf[r.pos]
		r.pos++
		if i == 9 && b > 1 {
			r.fail("varint overflows a long")
			return 0
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(v>>1) ^ -int64(v&1)
		}
	}
	r.fail("varint overflows a long")
	return 0
}

func (r *avroReader) int() int64 {
	v := r.long()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("int " + strconv.FormatInt(v, 10) + " out of range")
		return 0
	}
	return v
}

// bytes reads a length-prefixed bytes or string value, aliasing the buffer.
func (r *avroReader) bytes() []byte {
	n := r.long()
	if r.err != "" {
		return nil
	}
	if n < 0 {
		r.fail("negative length " + strconv.FormatInt(n, 10))
		return nil
	}
	if n > int64(len(r.buf)-r.pos) {
		r.fail("length " + strconv.FormatInt(n, 10) + " runs past the end of the datum")
		return nil
	}
	b := r.buf[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return b
}

func (r *avroReader) fixed(n int) []byte {
	if n > len(r.buf)-r.pos {
		r.fail(errAvroTruncated)
		r.pos = len(r.buf)
		return nil
	}
	b := r.buf[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b
}

// branch reads a union branch index below n.
func (r *avroReader) branch(n int) int {
	b := r.long()
	if r.err != "" {
		return 0
	}
	if b < 0 || b >= int64(n) {
		r.fail("union branch " + strconv.FormatInt(b, 10) + " out of range (the union has " + strconv.Itoa(n) + ")")
		return 0
	}
	return int(b)
}

// blockCount reads an array or map block header: the item count (0 at the
// end) and, for a negative count, the block's byte size (else -1). Items
// of type item follow, perItem bytes more each (map keys). Counts are
// capped by the bytes left, or, for items that take no bytes, by zeroLeft.
func (r *avroReader) blockCount(item *avroType, perItem, zeroLeft int) (int, int64) {
	n := r.long()
	if r.err != "" || n == 0 {
		return 0, -1
	}
	size := int64(-1)
	if n < 0 {
		if n == math.MinInt64 {
			r.fail("bad block count")
			return 0, -1
		}
		n = -n
		size = r.long()
		if r.err != "" {
			return 0, -1
		}
		if size < 0 || size > int64(len(r.buf)-r.pos) {
			r.fail("block size " + strconv.FormatInt(size, 10) + " does not fit the datum")
			return 0, -1
		}
	}
	if item.zeroWidth && perItem == 0 {
		if n > int64(zeroLeft) {
			r.fail("block count " + strconv.FormatInt(n, 10) + " too large")
			return 0, -1
		}
	} else if n > int64(len(r.buf)-r.pos)/int64(max(item.minSize+perItem, 1)) {
		r.fail("block count " + strconv.FormatInt(n, 10) + " exceeds the bytes left")
		return 0, -1
	}
	return int(n), size
}

// items reserves room for n more items in a slice that holds have,
// growing geometrically so that many small blocks cost linear space.
func (r *avroReader) items(out *Converted, s []fluss.Datum, have, n int) []fluss.Datum {
	if have+n <= cap(s) {
		return s[:have+n]
	}
	grown := out.nested.datumSlice(max(have+n, 2*cap(s)))
	copy(grown, s[:have])
	return grown[:have+n]
}

// countZero counts decoded items that take no bytes: their number is not
// limited by the payload size, so it is by zeroLeft.
func (r *avroReader) countZero(item *avroType, perItem, n int) {
	if item.zeroWidth && perItem == 0 {
		r.zeroLeft -= n
	}
}

// skip reads past one value of type t.
func (r *avroReader) skip(t *avroType, depth int) {
	if r.err != "" {
		return
	}
	switch t.kind {
	case akNull:
	case akBoolean:
		r.fixed(1)
	case akInt, akLong, akEnum:
		r.long()
	case akFloat:
		r.fixed(4)
	case akDouble:
		r.fixed(8)
	case akBytes, akString:
		r.bytes()
	case akFixed:
		r.fixed(t.size)
	case akRecord:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return
		}
		for _, f := range t.fields {
			r.skip(f, depth+1)
			if r.err != "" {
				return
			}
		}
	case akUnion:
		b := r.branch(len(t.branches))
		if r.err != "" {
			return
		}
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return
		}
		r.skip(t.branches[b], depth+1)
	case akArray, akMap:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return
		}
		perItem := 0
		if t.kind == akMap {
			perItem = 1
		}
		for {
			n, size := r.blockCount(t.items, perItem, math.MaxInt)
			if r.err != "" || n == 0 {
				return
			}
			if size >= 0 {
				r.pos += int(size)
				continue
			}
			if t.items.zeroWidth && perItem == 0 {
				continue
			}
			for range n {
				if perItem > 0 {
					r.bytes()
				}
				r.skip(t.items, depth+1)
				if r.err != "" {
					return
				}
			}
		}
	}
}

var nullDatum = fluss.Datum{Null: true}

// value reads one value with conversion c.
func (r *avroReader) value(c *avroConv, out *Converted, depth int) fluss.Datum {
	switch c.op {
	case opNull:
		return nullDatum
	case opBool:
		b := r.fixed(1)
		if len(b) == 0 {
			return fluss.Datum{}
		}
		if b[0] > 1 {
			r.fail("invalid boolean byte " + strconv.Itoa(int(b[0])))
		}
		return fluss.Datum{I: int64(b[0])}
	case opInt:
		v := r.int()
		if v < c.lo || v > c.hi {
			r.fail("int " + strconv.FormatInt(v, 10) + " is out of range for " + c.target.String())
		}
		return fluss.Datum{I: v}
	case opLong:
		return fluss.Datum{I: r.long()}
	case opFloat:
		b := r.fixed(4)
		if len(b) == 0 {
			return fluss.Datum{}
		}
		return fluss.Datum{F: float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))}
	case opDouble:
		b := r.fixed(8)
		if len(b) == 0 {
			return fluss.Datum{}
		}
		return fluss.Datum{F: math.Float64frombits(binary.LittleEndian.Uint64(b))}
	case opString:
		b := r.bytes()
		if !utf8.Valid(b) {
			r.fail("string is not valid UTF-8")
		}
		if c.maxLen > 0 {
			r.checkLen(c, b)
		}
		return fluss.Datum{B: b}
	case opBytes:
		b := r.bytes()
		if c.maxLen > 0 {
			r.checkLen(c, b)
		}
		return fluss.Datum{B: b}
	case opFixed:
		return fluss.Datum{B: r.fixed(c.size)}
	case opEnum:
		i := r.int()
		if r.err != "" {
			return fluss.Datum{}
		}
		if i < 0 || i >= int64(len(c.symbols)) {
			r.fail("enum index " + strconv.FormatInt(i, 10) + " out of range")
			return fluss.Datum{}
		}
		b := c.symbols[i]
		if c.maxLen > 0 {
			r.checkLen(c, b)
		}
		return fluss.Datum{B: b}
	case opDecimalBytes, opDecimalFixed:
		var raw []byte
		if c.op == opDecimalBytes {
			raw = r.bytes()
		} else {
			raw = r.fixed(c.size)
		}
		if r.err != "" {
			return fluss.Datum{}
		}
		d, reason := avroDecimal(raw, c, &out.arena)
		if reason != "" {
			r.fail(reason)
		}
		return d
	case opTimeMillis:
		v := r.int()
		if v < 0 || v >= 86_400_000 {
			r.fail("time-millis " + strconv.FormatInt(v, 10) + " is not a time of day")
		}
		return fluss.Datum{I: truncMillis(v, c.prec)}
	case opTimeMicros:
		v := r.long()
		if v < 0 || v >= 86_400_000_000 {
			r.fail("time-micros " + strconv.FormatInt(v, 10) + " is not a time of day")
		}
		return fluss.Datum{I: truncMillis(v/1000, c.prec)}
	case opTimestampMillis:
		ms, n := truncTimestamp(r.long(), 0, c.prec)
		return fluss.Datum{I: ms, N: n}
	case opTimestampMicros:
		v := r.long()
		ms, n := truncTimestamp(floorDiv(v, 1000), int32(floorMod(v, 1000)*1000), c.prec)
		return fluss.Datum{I: ms, N: n}
	case opTimestampNanos:
		v := r.long()
		ms, n := truncTimestamp(floorDiv(v, 1_000_000), int32(floorMod(v, 1_000_000)), c.prec)
		return fluss.Datum{I: ms, N: n}
	case opUnion:
		b := r.branch(len(c.branches))
		if r.err != "" {
			return fluss.Datum{}
		}
		bc := c.branches[b]
		if bc == nil {
			r.fail(c.reasons[b])
			return fluss.Datum{}
		}
		return r.value(bc, out, depth)
	case opRow:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return fluss.Datum{}
		}
		fields := out.nested.datumSlice(c.nFields)
		for i := range fields {
			fields[i].Null = true
		}
		for i := range c.fields {
			f := &c.fields[i]
			if f.conv == nil {
				r.skip(f.skip, depth+1)
			} else {
				fields[f.idx] = r.value(f.conv, out, depth+1)
			}
			if r.err != "" {
				r.at(f.name)
				return fluss.Datum{}
			}
		}
		n := out.nested.newNested()
		n.Fields = fields
		return fluss.Datum{Nested: n}
	case opArray:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return fluss.Datum{}
		}
		var elems []fluss.Datum
		have := 0
		for {
			n, _ := r.blockCount(c.elem.w, 0, r.zeroLeft)
			if r.err != "" {
				return fluss.Datum{}
			}
			if n == 0 {
				break
			}
			r.countZero(c.elem.w, 0, n)
			elems = r.items(out, elems, have, n)
			for ; have < len(elems); have++ {
				elems[have] = r.value(c.elem, out, depth+1)
				if r.err != "" {
					return fluss.Datum{}
				}
			}
		}
		n := out.nested.newNested()
		n.Elems = elems
		return fluss.Datum{Nested: n}
	case opMap:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return fluss.Datum{}
		}
		var keys, vals []fluss.Datum
		have := 0
		for {
			n, _ := r.blockCount(c.elem.w, 1, 0)
			if r.err != "" {
				return fluss.Datum{}
			}
			if n == 0 {
				break
			}
			keys, vals = r.items(out, keys, have, n), r.items(out, vals, have, n)
			for ; have < len(keys); have++ {
				keys[have] = r.value(c.key, out, depth+1)
				vals[have] = r.value(c.elem, out, depth+1)
				if r.err != "" {
					return fluss.Datum{}
				}
			}
		}
		n := out.nested.newNested()
		n.Keys, n.Values = keys, vals
		return fluss.Datum{Nested: n}
	}
	r.fail("unsupported conversion")
	return fluss.Datum{}
}

// checkLen enforces CHAR(n)/BINARY(n) inside nested values.
func (r *avroReader) checkLen(c *avroConv, b []byte) {
	n := len(b)
	if c.charLen {
		n = utf8.RuneCount(b)
	}
	if n > c.maxLen {
		r.fail("value of length " + strconv.Itoa(n) + " is longer than " + strconv.Itoa(c.maxLen))
	}
}

var pow10i = [...]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// avroDecimal converts an Avro decimal (big-endian two's complement
// unscaled value at the writer's scale) into a DECIMAL(p, s) datum: I for
// p <= 18, else the minimal two's complement bytes. A scale change must be
// exact.
func avroDecimal(raw []byte, c *avroConv, a *arena) (fluss.Datum, string) {
	if len(raw) <= 8 {
		var v int64
		if len(raw) > 0 {
			v = int64(int8(raw[0]))
			for _, b := range raw[1:] {
				v = v<<8 | int64(b)
			}
		}
		if u, exact, ok := rescaleInt64(v, c.wScale, c.scale); ok {
			if !exact {
				return fluss.Datum{}, decimalInexact(big.NewInt(v), c)
			}
			mag := uint64(u)
			if u < 0 {
				mag = uint64(-u)
			}
			if c.precision <= 18 {
				if mag >= uint64(pow10i[c.precision]) {
					return fluss.Datum{}, decimalOverflow(big.NewInt(v), c)
				}
				return fluss.Datum{I: u}, ""
			}
			if c.wScale == c.scale && len(raw) > 0 {
				return fluss.Datum{B: minimalTwos(raw)}, ""
			}
			var buf [8]byte
			binary.BigEndian.PutUint64(buf[:], uint64(u))
			m := minimalTwos(buf[:])
			b := a.alloc(len(m))
			copy(b, m)
			return fluss.Datum{B: b}, ""
		}
	}
	if len(raw) > maxAvroDecimalBytes {
		return fluss.Datum{}, "decimal of " + strconv.Itoa(len(raw)) + " bytes is too large"
	}
	var n big.Int
	n.SetBytes(raw)
	if raw[0]&0x80 != 0 {
		n.Sub(&n, new(big.Int).Lsh(big.NewInt(1), uint(len(raw))*8))
	}
	orig := new(big.Int).Set(&n)
	switch {
	case c.scale > c.wScale:
		n.Mul(&n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.scale-c.wScale)), nil))
	case c.scale < c.wScale:
		var m big.Int
		n.QuoRem(&n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.wScale-c.scale)), nil), &m)
		if m.Sign() != 0 {
			return fluss.Datum{}, decimalInexact(orig, c)
		}
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.precision)), nil)
	if n.CmpAbs(limit) >= 0 {
		return fluss.Datum{}, decimalOverflow(orig, c)
	}
	if c.precision <= 18 {
		return fluss.Datum{I: n.Int64()}, ""
	}
	return fluss.Datum{B: twosComplement(&n)}, ""
}

// rescaleInt64 moves v from scale ws to s: ok false when int64 is too
// small for it, exact false when digits would be lost.
func rescaleInt64(v int64, ws, s int) (u int64, exact, ok bool) {
	switch {
	case s == ws:
		return v, true, true
	case s > ws:
		d := s - ws
		if d >= len(pow10i) {
			return 0, true, v == 0
		}
		m := pow10i[d]
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return 0, true, false
		}
		return v * m, true, true
	default:
		d := ws - s
		if d >= len(pow10i) {
			return 0, v == 0, true
		}
		m := pow10i[d]
		if v%m != 0 {
			return 0, false, true
		}
		return v / m, true, true
	}
}

// minimalTwos drops redundant sign bytes, as Java's BigInteger.toByteArray.
func minimalTwos(b []byte) []byte {
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	return b
}

func decimalText(unscaled *big.Int, scale int) string {
	s := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if unscaled.Sign() < 0 {
		s = "-" + s
	}
	return s
}

func decimalOverflow(unscaled *big.Int, c *avroConv) string {
	return "decimal " + decimalText(unscaled, c.wScale) + " does not fit DECIMAL(" + strconv.Itoa(c.precision) + ", " + strconv.Itoa(c.scale) + ")"
}

func decimalInexact(unscaled *big.Int, c *avroConv) string {
	return "decimal " + decimalText(unscaled, c.wScale) + " has more than " + strconv.Itoa(c.scale) + " fraction digits (DECIMAL(" +
		strconv.Itoa(c.precision) + ", " + strconv.Itoa(c.scale) + "))"
}
