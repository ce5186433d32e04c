package mapping

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fluss-kafka/gateway/fluss"
)

// Checking a route against its table, and building the conversion plan.

// Column sources. A column is filled from exactly one place, except that a
// JSON key may fill columns the JSON value also fills (the key wins).
type colSource uint8

const (
	srcNone colSource = iota
	srcValue
	srcKey
	srcMetaKey
	srcMetaHeaders
	srcMetaTimestamp
	srcMetaPartition
	srcMetaOffset
	srcMetaTopic
	srcTimePartition
)

func (s colSource) String() string {
	return [...]string{"nothing", "the value", "the key", "metadata.key", "metadata.headers",
		"metadata.timestamp", "metadata.partition", "metadata.offset", "metadata.topic",
		"the record timestamp (partition)"}[s]
}

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

// Validate checks a compiled route against its table as GetTableInfo
// returned it: every referenced column exists and has a type the source
// can fill, a primary-key table's key is filled from the Kafka record's key
// or metadata (so tombstones can delete), a log table takes no deletes, and
// partition columns are filled. It returns every problem found, joined;
// each is a *RouteError naming the route, the column and the problem. It
// is pure: no I/O.
func Validate(r *Route, info *fluss.TableInfo) error {
	_, errs := buildPlan(r, info)
	return errors.Join(errs...)
}

// NewConverter validates the route against the table and returns its
// converter. Routes.Bind calls it for every route.
func NewConverter(r *Route, info *fluss.TableInfo, opts ...Option) (*Converter, error) {
	return newConverter(r, info, newOptions(opts))
}

func newConverter(r *Route, info *fluss.TableInfo, o options) (*Converter, error) {
	c, errs := buildPlan(r, info)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	problem := func(what string, err error) error {
		return &RouteError{Route: r.spec.Name, Table: info.Path, Problem: what, Err: err}
	}
	// A data-lake table encodes and buckets its keys the lake's way; which
	// encoding its primary key takes also depends on the kv format version
	// (fluss.NewTableKeying holds the rule, as the Java client applies it).
	lake := strings.ToLower(info.Descriptor.Properties[fluss.PropDataLakeFormat])
	pkLake, bucketFn := lake, o.keying.BucketForKey
	if lake != "" {
		tk, err := fluss.NewTableKeying(&info.Descriptor)
		if err != nil {
			return nil, problem("key encoding of data-lake format "+lake, err)
		}
		if tk.PrimaryKey != nil {
			pkLake = tk.PrimaryKey.LakeFormat()
		}
		bucketFn = func(key []byte, n int) int32 {
			b, err := tk.Bucket(key, n)
			if err != nil {
				return -1 // an empty key: the accumulator refuses bucket -1
			}
			return b
		}
	}
	if c.pk {
		enc, err := o.keying.NewKeyEncoder(c.schema, c.physicalPK, pkLake)
		if err != nil {
			return nil, problem("primary key encoder", err)
		}
		c.pkEnc = enc
	}
	if len(c.bucketKeys) > 0 {
		c.bucketFn = bucketFn
		if c.pk && slices.Equal(c.bucketKeys, c.physicalPK) {
			c.bucketIsPK = true
		} else {
			enc, err := o.keying.NewKeyEncoder(c.schema, c.bucketKeys, lake)
			if err != nil {
				return nil, problem("bucket key encoder", err)
			}
			c.bucketEnc = enc
		}
	}
	return c, nil
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

func buildPlan(r *Route, info *fluss.TableInfo) (*Converter, []error) {
	s := &r.spec
	d := &info.Descriptor
	c := &Converter{
		route:      s.Name,
		table:      info.Path,
		schema:     &d.Schema,
		pk:         d.HasPrimaryKey(),
		numBuckets: d.BucketCount,
		valueCol:   -1,
		keyCol:     -1,
		meta:       metaCols{-1, -1, -1, -1, -1, -1},
	}
	p := &planner{c: c, r: r, info: info}
	n := len(d.Schema.Columns)
	if n == 0 {
		p.fail("", "table has no columns")
		return nil, p.errs
	}
	c.source = make([]colSource, n)
	c.fromValue = make([]bool, n)
	if c.numBuckets <= 0 {
		p.fail("", "table info has no bucket count")
	}

	// Metadata columns.
	m := s.Metadata
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
		if mc.src == srcMetaHeaders && s.Metadata.HeadersFormat == HeadersMap {
			p.failErr(mc.name, "headers as a MAP column", ErrNotImplemented)
			continue
		}
		i := p.column(mc.name, mc.src.String())
		if i >= 0 && p.claim(i, mc.src) && p.checkType(i, mc.src.String(), mc.ok...) {
			*mc.dst = i
		}
	}

	// Partition columns from the record timestamp.
	isPartKey := make([]bool, n)
	for _, name := range d.PartitionKeys {
		if i := d.Schema.ColumnIndex(name); i >= 0 {
			isPartKey[i] = true
		} else {
			p.fail(name, "partition key does not exist in the table")
		}
	}
	for _, ps := range s.Partition {
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
			for _, tp := range r.parts {
				if tp.column == ps.Column {
					c.timeParts = append(c.timeParts, timePart{col: i, format: tp.format, loc: tp.loc})
				}
			}
		}
	}

	// Key.
	c.keyFormat = s.Key.Format
	switch s.Key.Format {
	case KeyRaw, KeyString:
		if i := p.column(s.Key.Column, "key.column"); i >= 0 && p.claim(i, srcKey) {
			if s.Key.Format == KeyRaw {
				p.checkType(i, "a raw key", fluss.TypeBytes, fluss.TypeBinary)
			} else {
				p.checkScalar(i, "a string key")
			}
			c.keyCol = i
		}
	case KeyJSON, KeyAvro, KeyProtobuf, KeyJSONSchema:
		c.keyTree = &jsonNode{fields: map[string]*jsonField{}}
		paths := s.Key.Paths
		if len(paths) == 0 {
			if !c.pk {
				p.fail("", "key.format %s on a log table needs key.columns (there is no primary key to default to)", s.Key.Format)
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
		if s.Key.Format != KeyJSON {
			c.keyFraming = s.Key.Framing
			tree := c.keyTree
			dec, err := newRegistryDecoder(string(s.Key.Format), registryTarget{
				columns: d.Schema.Columns, tree: tree, message: s.Key.Message,
				walkJSON: func(data []byte, out *Converted) (string, string) {
					js := jsonScanner{data: data}
					return c.walkDocument(&js, tree, false, out)
				},
			})
			if err != nil {
				p.failErr("", "key.format "+string(s.Key.Format), err)
			}
			c.keyDec = dec
		}
	}

	// Value.
	c.valueFormat = s.Value.Format
	c.rejectUnknown = s.Value.UnknownFields == FieldReject
	c.rejectMissing = s.Value.MissingFields == FieldReject
	c.rejectEmpty = s.Value.EmptyRows == FieldReject
	switch s.Value.Format {
	case ValueRaw, ValueString:
		if i := p.column(s.Value.Column, "value.column"); i >= 0 && p.claim(i, srcValue) {
			if s.Value.Format == ValueRaw {
				p.checkType(i, "a raw value", fluss.TypeBytes, fluss.TypeBinary)
			} else {
				p.checkType(i, "a string value", fluss.TypeString, fluss.TypeChar)
			}
			c.valueCol = i
		}
	case ValueJSON, ValueConnectJSON, ValueAvro, ValueProtobuf, ValueJSONSchema:
		registry := s.Value.Format != ValueJSON && s.Value.Format != ValueConnectJSON
		c.valueTree = &jsonNode{fields: map[string]*jsonField{}}
		for _, name := range sortedKeys(s.Value.Paths) {
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
			if ps, ok := s.Value.Paths[col.Name]; ok {
				path, _ = splitPath(ps)
			}
			c.valueTree.add(path, i)
			c.fromValue[i] = true
			c.valueCols++
			if c.source[i] == srcNone {
				c.source[i] = srcValue
			}
		}
		if registry {
			c.valueFraming = s.Value.Framing
			tree, reject := c.valueTree, c.rejectUnknown
			dec, err := newRegistryDecoder(string(s.Value.Format), registryTarget{
				columns: d.Schema.Columns, tree: tree, rejectUnknown: reject, message: s.Value.Message,
				walkJSON: func(data []byte, out *Converted) (string, string) {
					js := jsonScanner{data: data}
					return c.walkDocument(&js, tree, reject, out)
				},
			})
			if err != nil {
				p.failErr("", "value.format "+string(s.Value.Format), err)
			}
			c.valueDec = dec
		}
	}

	// Tombstones.
	switch s.Tombstone {
	case TombstoneDelete:
		if !c.pk {
			p.fail("", "tombstone: delete, but log tables cannot take deletes (the table has no primary key)")
		}
		c.tombstoneDelete = true
	case TombstoneAuto:
		c.tombstoneDelete = c.pk
	}

	// Primary key: every column must be known for a tombstone, i.e. come
	// from the record's key or metadata, never only from the value.
	if c.pk {
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

	// Partition keys must be filled and renderable.
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

	// NOT NULL columns need a source.
	for i, col := range d.Schema.Columns {
		if col.Type.NotNull && c.source[i] == srcNone {
			p.fail(col.Name, "is NOT NULL but nothing fills it (value format %s)", s.Value.Format)
		}
	}

	// Bucket key.
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
	c.maxLen = make([]int, n)
	for i, col := range d.Schema.Columns {
		if col.Type.Root == fluss.TypeChar || col.Type.Root == fluss.TypeBinary {
			c.maxLen[i] = col.Type.Length
		}
	}
	c.isKeyCol = make([]bool, n)
	for _, i := range c.pkCols {
		c.isKeyCol[i] = true
	}
	for _, i := range c.partCols {
		c.isKeyCol[i] = true
	}
	return c, p.errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
