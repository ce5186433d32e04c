package mapping

import (
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/fluss"
)

// Building a route's conversion plan: which column each source fills.
// buildPlan runs the stages in order; each stage sees the columns the
// earlier ones claimed, so the order is part of the behaviour (and of the
// order in which problems are reported).

// jsonNode is one object level of the JSON paths a converter reads.
type jsonNode struct {
	fields map[string]*jsonField
}

type jsonField struct {
	cols  []int     // columns that take this field's value
	child *jsonNode // deeper paths through this field
}

func (n *jsonNode) add(path []string, col int) {
	for i, name := range path {
		f := n.fields[name]
		if f == nil {
			f = &jsonField{}
			n.fields[name] = f
		}
		if i == len(path)-1 {
			f.cols = append(f.cols, col)
			return
		}
		if f.child == nil {
			f.child = &jsonNode{fields: map[string]*jsonField{}}
		}
		n = f.child
	}
}

// planner accumulates problems while a plan is built.
type planner struct {
	c    *Converter
	r    *Route
	info *fluss.TableInfo
	errs []error
}

func (p *planner) fail(column, format string, args ...any) {
	p.errs = append(p.errs, &RouteError{Route: p.r.spec.Name, Table: p.info.Path, Column: column, Problem: fmt.Sprintf(format, args...)})
}

func (p *planner) failErr(column, problem string, err error) {
	p.errs = append(p.errs, &RouteError{Route: p.r.spec.Name, Table: p.info.Path, Column: column, Problem: problem, Err: err})
}

// column returns the index of a column the route names in what, or -1
// after recording a problem.
func (p *planner) column(name, what string) int {
	i := p.c.schema.ColumnIndex(name)
	if i < 0 {
		p.fail(name, "named by %s, does not exist in the table", what)
	}
	return i
}

// claim makes src the filler of column i; a column has one filler.
func (p *planner) claim(i int, src colSource) bool {
	if p.c.source[i] != srcNone {
		p.fail(p.c.schema.Columns[i].Name, "filled by both %s and %s", p.c.source[i], src)
		return false
	}
	p.c.source[i] = src
	return true
}

func (p *planner) checkType(i int, what string, ok ...fluss.TypeRoot) bool {
	t := p.c.schema.Columns[i].Type
	if slices.Contains(ok, t.Root) {
		return true
	}
	p.fail(p.c.schema.Columns[i].Name, "has type %s, which %s cannot fill (want %v)", t, what, ok)
	return false
}

// checkScalar accepts the types JSON and text conversion can produce.
func (p *planner) checkScalar(i int, what string) bool {
	switch p.c.schema.Columns[i].Type.Root {
	case fluss.TypeArray, fluss.TypeMap, fluss.TypeRow:
		p.failErr(p.c.schema.Columns[i].Name, fmt.Sprintf("has type %s, which %s cannot fill", p.c.schema.Columns[i].Type, what), ErrNotImplemented)
		return false
	}
	return true
}

// buildPlan checks r against info and builds its converter, without key
// encoders (newConverter adds those). It returns every problem found; the
// converter is only usable when there are none.
func buildPlan(r *Route, info *fluss.TableInfo) (*Converter, []error) {
	p, ok := newPlanner(r, info)
	if !ok {
		return nil, p.errs
	}
	p.metadataColumns()
	isPartKey := p.timePartitions()
	p.keyColumns()
	p.valueColumns()
	p.tombstones()
	p.primaryKey(isPartKey)
	p.partitionKeys()
	p.notNullColumns()
	p.bucketKeys()
	p.fixedLengths()
	p.keyColumnSet()
	return p.c, p.errs
}

// newPlanner starts a plan with no column filled; false means the table
// has no columns and there is nothing to plan.
func newPlanner(r *Route, info *fluss.TableInfo) (*planner, bool) {
	d := &info.Descriptor
	c := &Converter{
		route:      r.spec.Name,
		table:      info.Path,
		schema:     &d.Schema,
		pk:         d.HasPrimaryKey(),
		numBuckets: d.BucketCount,
		valueCol:   -1,
		keyCol:     -1,
		meta:       metaCols{-1, -1, -1, -1, -1, -1},
		rows:       &rowsPool{},
	}
	p := &planner{c: c, r: r, info: info}
	n := len(d.Schema.Columns)
	if n == 0 {
		p.fail("", "table has no columns")
		return p, false
	}
	c.source = make([]colSource, n)
	c.fromValue = make([]bool, n)
	if c.numBuckets <= 0 {
		p.fail("", "table info has no bucket count")
	}
	return p, true
}

// metadataColumns claims the columns filled from the Kafka record's metadata.
func (p *planner) metadataColumns() {
	c, m := p.c, &p.r.spec.Metadata
	metas := []struct {
		name string
		src  colSource
		dst  *int
		ok   []fluss.TypeRoot
	}{
		{m.Key, srcMetaKey, &c.meta.key, []fluss.TypeRoot{fluss.TypeBytes, fluss.TypeBinary, fluss.TypeString, fluss.TypeChar}},
		{m.Headers, srcMetaHeaders, &c.meta.headers, []fluss.TypeRoot{fluss.TypeString, fluss.TypeChar}},
		{m.Timestamp, srcMetaTimestamp, &c.meta.timestamp, []fluss.TypeRoot{fluss.TypeTimestampLTZ, fluss.TypeTimestamp, fluss.TypeBigInt}},
		{m.Partition, srcMetaPartition, &c.meta.partition, []fluss.TypeRoot{fluss.TypeInt, fluss.TypeBigInt}},
		{m.Offset, srcMetaOffset, &c.meta.offset, []fluss.TypeRoot{fluss.TypeBigInt}},
		{m.Topic, srcMetaTopic, &c.meta.topic, []fluss.TypeRoot{fluss.TypeString, fluss.TypeChar}},
	}
	for _, mc := range metas {
		if mc.name == "" {
			continue
		}
		if mc.src == srcMetaHeaders && m.HeadersFormat == HeadersMap {
			p.failErr(mc.name, "headers as a MAP column", ErrNotImplemented)
			continue
		}
		i := p.column(mc.name, mc.src.String())
		if i >= 0 && p.claim(i, mc.src) && p.checkType(i, mc.src.String(), mc.ok...) {
			*mc.dst = i
		}
	}
}

// timePartitions claims the partition columns filled from the record
// timestamp and returns which columns are partition keys of the table.
func (p *planner) timePartitions() []bool {
	c, d := p.c, &p.info.Descriptor
	isPartKey := make([]bool, len(d.Schema.Columns))
	for _, name := range d.PartitionKeys {
		if i := d.Schema.ColumnIndex(name); i >= 0 {
			isPartKey[i] = true
		} else {
			p.fail(name, "partition key does not exist in the table")
		}
	}
	for _, ps := range p.r.spec.Partition {
		i := p.column(ps.Column, "partition")
		if i < 0 {
			continue
		}
		if !isPartKey[i] {
			p.fail(ps.Column, "is listed under partition but is not a partition key of the table (partition keys: %v)", d.PartitionKeys)
			continue
		}
		if ps.From != PartitionFromTimestamp {
			continue
		}
		if p.claim(i, srcTimePartition) && p.checkType(i, "a formatted timestamp", fluss.TypeString, fluss.TypeChar) {
			for _, tp := range p.r.parts {
				if tp.column == ps.Column {
					c.timeParts = append(c.timeParts, timePart{col: i, format: tp.format, loc: tp.loc})
				}
			}
		}
	}
	return isPartKey
}

// keyColumns claims the columns filled from the Kafka record's key.
func (p *planner) keyColumns() {
	c, k := p.c, &p.r.spec.Key
	c.keyFormat = k.Format
	switch k.Format {
	case KeyRaw, KeyString:
		if i := p.column(k.Column, "key.column"); i >= 0 && p.claim(i, srcKey) {
			if k.Format == KeyRaw {
				p.checkType(i, "a raw key", fluss.TypeBytes, fluss.TypeBinary)
			} else {
				p.checkScalar(i, "a string key")
			}
			c.keyCol = i
		}
	case KeyJSON, KeyAvro, KeyProtobuf, KeyJSONSchema:
		p.keyPaths()
		if k.Format != KeyJSON {
			p.keyDecoder()
		}
	}
}

// keyPaths builds the key's path tree; without key.columns a structured
// key fills the primary key columns nothing has claimed, by name.
func (p *planner) keyPaths() {
	c, k, d := p.c, &p.r.spec.Key, &p.info.Descriptor
	c.keyTree = &jsonNode{fields: map[string]*jsonField{}}
	paths := k.Paths
	if len(paths) == 0 {
		if !c.pk {
			p.fail("", "key.format %s on a log table needs key.columns (there is no primary key to default to)", k.Format)
		}
		paths = map[string]string{}
		for _, name := range d.Schema.PrimaryKey {
			if i := d.Schema.ColumnIndex(name); i >= 0 && c.source[i] == srcNone {
				paths[name] = name
			}
		}
	}
	for _, name := range sortedKeys(paths) {
		i := p.column(name, "key.columns")
		if i < 0 || !p.claim(i, srcKey) || !p.checkScalar(i, "a JSON key") {
			continue
		}
		path, _ := splitPath(paths[name])
		c.keyTree.add(path, i)
	}
}

// keyDecoder compiles the schema-registry decoder for the key's tree.
func (p *planner) keyDecoder() {
	c, k, d := p.c, &p.r.spec.Key, &p.info.Descriptor
	c.keyFraming = k.Framing
	tree := c.keyTree
	dec, err := newRegistryDecoder(string(k.Format), registryTarget{
		columns: d.Schema.Columns, tree: tree, message: k.Message,
		walkJSON: func(data []byte, out *Converted) (string, string) {
			js := jsonScanner{data: data}
			return c.walkDocument(&js, tree, false, out)
		},
	})
	if err != nil {
		p.failErr("", "key.format "+string(k.Format), err)
	}
	c.keyDec = dec
}

// valueColumns fills the columns the Kafka record's value fills.
func (p *planner) valueColumns() {
	c, v := p.c, &p.r.spec.Value
	c.valueFormat = v.Format
	c.rejectUnknown = v.UnknownFields == FieldReject
	c.rejectMissing = v.MissingFields == FieldReject
	c.rejectEmpty = v.EmptyRows == FieldReject
	switch v.Format {
	case ValueRaw, ValueString:
		if i := p.column(v.Column, "value.column"); i >= 0 && p.claim(i, srcValue) {
			if v.Format == ValueRaw {
				p.checkType(i, "a raw value", fluss.TypeBytes, fluss.TypeBinary)
			} else {
				p.checkType(i, "a string value", fluss.TypeString, fluss.TypeChar)
			}
			c.valueCol = i
		}
	case ValueJSON, ValueConnectJSON, ValueAvro, ValueProtobuf, ValueJSONSchema:
		p.valuePaths()
		if v.Format != ValueJSON && v.Format != ValueConnectJSON {
			p.valueDecoder()
		}
	}
}

// valuePaths builds the value's path tree: a structured value fills every
// column nothing but the key fills, by name unless value.columns says.
func (p *planner) valuePaths() {
	c, v, d := p.c, &p.r.spec.Value, &p.info.Descriptor
	c.valueTree = &jsonNode{fields: map[string]*jsonField{}}
	for _, name := range sortedKeys(v.Paths) {
		i := p.column(name, "value.columns")
		if i >= 0 && c.source[i] != srcNone && c.source[i] != srcKey {
			p.fail(name, "has a value path but is filled by %s", c.source[i])
		}
	}
	for i, col := range d.Schema.Columns {
		if c.source[i] != srcNone && c.source[i] != srcKey {
			continue
		}
		// Registry decoders check each column against the writer
		// schema's field when they compile it (nested columns too).
		// JSON values fill nested columns too (jsonNestedDatum).
		path := []string{col.Name}
		if ps, ok := v.Paths[col.Name]; ok {
			path, _ = splitPath(ps)
		}
		c.valueTree.add(path, i)
		c.fromValue[i] = true
		c.valueCols++
		if c.source[i] == srcNone {
			c.source[i] = srcValue
		}
	}
}

// valueDecoder compiles the schema-registry decoder for the value's tree.
func (p *planner) valueDecoder() {
	c, v, d := p.c, &p.r.spec.Value, &p.info.Descriptor
	c.valueFraming = v.Framing
	tree, reject := c.valueTree, c.rejectUnknown
	dec, err := newRegistryDecoder(string(v.Format), registryTarget{
		columns: d.Schema.Columns, tree: tree, rejectUnknown: reject, message: v.Message,
		walkJSON: func(data []byte, out *Converted) (string, string) {
			js := jsonScanner{data: data}
			return c.walkDocument(&js, tree, reject, out)
		},
	})
	if err != nil {
		p.failErr("", "value.format "+string(v.Format), err)
	}
	c.valueDec = dec
}

// tombstones decides whether a null value deletes the row.
func (p *planner) tombstones() {
	c := p.c
	switch p.r.spec.Tombstone {
	case TombstoneDelete:
		if !c.pk {
			p.fail("", "tombstone: delete, but log tables cannot take deletes (the table has no primary key)")
		}
		c.tombstoneDelete = true
	case TombstoneAuto:
		c.tombstoneDelete = c.pk
	}
}

// primaryKey checks that every primary key column is known for a
// tombstone, i.e. comes from the record's key or metadata, never only from
// the value, and collects the physical key (the columns outside the
// partition keys).
func (p *planner) primaryKey(isPartKey []bool) {
	c, d := p.c, &p.info.Descriptor
	if !c.pk {
		return
	}
	for _, name := range d.Schema.PrimaryKey {
		i := d.Schema.ColumnIndex(name)
		if i < 0 {
			p.fail(name, "primary key column does not exist in the table")
			continue
		}
		c.pkCols = append(c.pkCols, i)
		if src := c.source[i]; src == srcValue || src == srcNone {
			p.fail(name, "is a primary key column but is filled by %s; map it from the Kafka key (key.format string/raw with key.column, or json) so that upserts and deletes find the row", src)
		}
		if !isPartKey[i] {
			c.physicalPK = append(c.physicalPK, name)
		}
	}
	if len(c.physicalPK) == 0 {
		p.fail("", "primary key has no column outside the partition keys")
	}
}

// partitionKeys checks that partition keys are filled and renderable.
func (p *planner) partitionKeys() {
	c, d := p.c, &p.info.Descriptor
	for _, name := range d.PartitionKeys {
		i := d.Schema.ColumnIndex(name)
		if i < 0 {
			continue
		}
		c.partCols = append(c.partCols, i)
		if err := partitionNameType(d.Schema.Columns[i].Type.Root); err != nil {
			p.failErr(name, "partition key", err)
		}
		if c.source[i] == srcNone {
			p.fail(name, "is a partition key but nothing fills it (use value JSON, the key, or partition: from timestamp)")
		}
	}
}

// notNullColumns checks that NOT NULL columns have a source.
func (p *planner) notNullColumns() {
	for i, col := range p.c.schema.Columns {
		if col.Type.NotNull && p.c.source[i] == srcNone {
			p.fail(col.Name, "is NOT NULL but nothing fills it (value format %s)", p.r.spec.Value.Format)
		}
	}
}

// bucketKeys picks the bucket key (the physical primary key by default)
// and checks that its columns are filled.
func (p *planner) bucketKeys() {
	c, d := p.c, &p.info.Descriptor
	c.bucketKeys = d.BucketKeys
	if len(c.bucketKeys) == 0 && c.pk {
		c.bucketKeys = c.physicalPK
	}
	for _, name := range c.bucketKeys {
		i := d.Schema.ColumnIndex(name)
		if i < 0 {
			p.fail(name, "bucket key column does not exist in the table")
			continue
		}
		if c.source[i] == srcNone {
			p.fail(name, "is a bucket key column but nothing fills it")
		}
	}
}

// fixedLengths records the CHAR(n)/BINARY(n) length limit of each column.
func (p *planner) fixedLengths() {
	c := p.c
	c.maxLen = make([]int, len(c.schema.Columns))
	for i, col := range c.schema.Columns {
		if col.Type.Root == fluss.TypeChar || col.Type.Root == fluss.TypeBinary {
			c.maxLen[i] = col.Type.Length
		}
	}
}

// keyColumnSet marks the primary-key and partition columns, which a delete sets.
func (p *planner) keyColumnSet() {
	c := p.c
	c.isKeyCol = make([]bool, len(c.schema.Columns))
	for _, i := range c.pkCols {
		c.isKeyCol[i] = true
	}
	for _, i := range c.partCols {
		c.isKeyCol[i] = true
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
