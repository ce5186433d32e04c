package fluss

// Table, schema and data type JSON, written exactly as Fluss's Jackson
// serializers write them (fluss-common/src/main/java/org/apache/fluss/utils/
// json/{TableDescriptorJsonSerde,SchemaJsonSerde,ColumnJsonSerde,
// DataTypeJsonSerde}.java, 0.9.1-incubating): same key order, "nullable"
// only when false, optional keys left out when unset, Jackson's string
// escaping. One deliberate difference: Java writes "properties" and
// "custom_properties" in HashMap order; we write them sorted by key (the
// server reads them into a map, so order carries no meaning).
//
// Encoding also applies what Fluss's Schema and TableDescriptor builders do
// before serializing, so that the bytes equal the Java client's:
//   - primary-key columns are written NOT NULL;
//   - column ids: kept when every column and nested ROW field id is
//     distinct and non-negative; otherwise (e.g. all zero, the Go zero
//     value) assigned as Schema.Builder.column does: 0..n-1 in column order,
//     each column's nested ROW fields numbered right after it, depth first;
//   - a primary-key table with no bucket key gets the primary key minus the
//     partition keys as bucket key.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// AppendTableJSON appends the TableDescriptor JSON that CREATE_TABLE sends.
func AppendTableJSON(dst []byte, d *TableDescriptor) ([]byte, error) {
	dst = append(dst, `{"version":1,"schema":`...)
	var err error
	if dst, err = AppendSchemaJSON(dst, &d.Schema); err != nil {
		return nil, err
	}
	if d.Comment != "" {
		dst = append(dst, `,"comment":`...)
		dst = appendJSONString(dst, d.Comment)
	}
	dst = append(dst, `,"partition_key":`...)
	dst = appendJSONStrings(dst, d.PartitionKeys)

	bucketKeys := d.BucketKeys
	if len(bucketKeys) == 0 && len(d.Schema.PrimaryKey) > 0 {
		for _, k := range d.Schema.PrimaryKey {
			if !slices.Contains(d.PartitionKeys, k) {
				bucketKeys = append(bucketKeys, k)
			}
		}
	}
	if len(bucketKeys) > 0 || d.BucketCount > 0 {
		dst = append(dst, `,"bucket_key":`...)
		dst = appendJSONStrings(dst, bucketKeys)
		if d.BucketCount > 0 {
			dst = append(dst, `,"bucket_count":`...)
			dst = strconv.AppendInt(dst, int64(d.BucketCount), 10)
		}
	}
	dst = append(dst, `,"properties":`...)
	dst = appendJSONMap(dst, d.Properties)
	dst = append(dst, `,"custom_properties":`...)
	dst = appendJSONMap(dst, d.CustomProperties)
	return append(dst, '}'), nil
}

// AppendSchemaJSON appends the Schema JSON.
func AppendSchemaJSON(dst []byte, s *Schema) ([]byte, error) {
	for _, k := range s.PrimaryKey {
		if s.ColumnIndex(k) < 0 {
			return nil, fmt.Errorf("schema: primary key column %q does not exist", k)
		}
	}
	cols := s.Columns
	if !columnIDsUsable(cols) {
		cols = assignColumnIDs(cols)
	}
	highest := int32(-1)
	dst = append(dst, `{"version":1,"columns":[`...)
	for i, c := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = appendJSONString(dst, c.Name)
		dst = append(dst, `,"data_type":`...)
		t := c.Type
		if slices.Contains(s.PrimaryKey, c.Name) {
			t.NotNull = true
		}
		var err error
		if dst, err = AppendDataTypeJSON(dst, t); err != nil {
			return nil, fmt.Errorf("schema: column %q: %w", c.Name, err)
		}
		if c.Comment != "" {
			dst = append(dst, `,"comment":`...)
			dst = appendJSONString(dst, c.Comment)
		}
		dst = append(dst, `,"id":`...)
		dst = strconv.AppendInt(dst, int64(c.ID), 10)
		dst = append(dst, '}')
		highest = max(highest, c.ID, highestFieldID(&c.Type))
	}
	dst = append(dst, ']')
	if len(s.PrimaryKey) > 0 {
		dst = append(dst, `,"primary_key":`...)
		dst = appendJSONStrings(dst, s.PrimaryKey)
	}
	dst = append(dst, `,"highest_field_id":`...)
	dst = strconv.AppendInt(dst, int64(highest), 10)
	return append(dst, '}'), nil
}

// AppendDataTypeJSON appends the data type JSON.
func AppendDataTypeJSON(dst []byte, t DataType) ([]byte, error) {
	name := t.Root.String()
	if _, err := ParseTypeRoot(name); err != nil {
		return nil, fmt.Errorf("data type: %w", err)
	}
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, name)
	if t.NotNull {
		dst = append(dst, `,"nullable":false`...)
	}
	var err error
	switch t.Root {
	case TypeChar, TypeBinary:
		dst = appendJSONIntField(dst, "length", t.Length)
	case TypeDecimal:
		dst = appendJSONIntField(dst, "precision", t.Precision)
		dst = appendJSONIntField(dst, "scale", t.Scale)
	case TypeTime, TypeTimestamp, TypeTimestampLTZ:
		dst = appendJSONIntField(dst, "precision", t.Precision)
	case TypeArray:
		if t.Elem == nil {
			return nil, errors.New("data type: ARRAY without element type")
		}
		dst = append(dst, `,"element_type":`...)
		if dst, err = AppendDataTypeJSON(dst, *t.Elem); err != nil {
			return nil, err
		}
	case TypeMap:
		if t.Key == nil || t.Value == nil {
			return nil, errors.New("data type: MAP without key or value type")
		}
		// Fluss's MapType makes its key type NOT NULL, whatever it is given.
		key := *t.Key
		key.NotNull = true
		dst = append(dst, `,"key_type":`...)
		if dst, err = AppendDataTypeJSON(dst, key); err != nil {
			return nil, err
		}
		dst = append(dst, `,"value_type":`...)
		if dst, err = AppendDataTypeJSON(dst, *t.Value); err != nil {
			return nil, err
		}
	case TypeRow:
		dst = append(dst, `,"fields":[`...)
		for i, f := range t.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = appendJSONString(dst, f.Name)
			dst = append(dst, `,"field_type":`...)
			if dst, err = AppendDataTypeJSON(dst, f.Type); err != nil {
				return nil, err
			}
			if f.Description != "" {
				dst = append(dst, `,"description":`...)
				dst = appendJSONString(dst, f.Description)
			}
			dst = append(dst, `,"field_id":`...)
			dst = strconv.AppendInt(dst, int64(f.ID), 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// ---------------------------------------------------------------- decoding

type jsonTable struct {
	Schema           json.RawMessage    `json:"schema"`
	Comment          *string            `json:"comment"`
	PartitionKey     *[]string          `json:"partition_key"`
	BucketKey        *[]string          `json:"bucket_key"`
	BucketCount      *int               `json:"bucket_count"`
	Properties       *map[string]string `json:"properties"`
	CustomProperties *map[string]string `json:"custom_properties"`
}

type jsonSchema struct {
	Columns    *[]jsonColumn `json:"columns"`
	PrimaryKey []string      `json:"primary_key"`
}

type jsonColumn struct {
	Name     *string       `json:"name"`
	DataType *jsonDataType `json:"data_type"`
	Comment  *string       `json:"comment"`
	ID       *int32        `json:"id"`
}

type jsonDataType struct {
	Type        string        `json:"type"`
	Nullable    *bool         `json:"nullable"`
	Length      *int          `json:"length"`
	Precision   *int          `json:"precision"`
	Scale       *int          `json:"scale"`
	ElementType *jsonDataType `json:"element_type"`
	KeyType     *jsonDataType `json:"key_type"`
	ValueType   *jsonDataType `json:"value_type"`
	Fields      []jsonField   `json:"fields"`
}

type jsonField struct {
	Name        string        `json:"name"`
	FieldType   *jsonDataType `json:"field_type"`
	Description *string       `json:"description"`
	FieldID     *int32        `json:"field_id"`
}

// ParseTableJSON parses TableDescriptor JSON. Like Fluss, it requires
// "schema", "partition_key", "properties" and "custom_properties".
func ParseTableJSON(data []byte) (TableDescriptor, error) {
	var jt jsonTable
	if err := json.Unmarshal(data, &jt); err != nil {
		return TableDescriptor{}, fmt.Errorf("table json: %w", err)
	}
	switch {
	case jt.Schema == nil:
		return TableDescriptor{}, errors.New(`table json: missing "schema"`)
	case jt.PartitionKey == nil:
		return TableDescriptor{}, errors.New(`table json: missing "partition_key"`)
	case jt.Properties == nil:
		return TableDescriptor{}, errors.New(`table json: missing "properties"`)
	case jt.CustomProperties == nil:
		return TableDescriptor{}, errors.New(`table json: missing "custom_properties"`)
	case jt.BucketCount != nil && jt.BucketKey == nil:
		return TableDescriptor{}, errors.New(`table json: "bucket_count" without "bucket_key"`)
	}
	s, err := ParseSchemaJSON(jt.Schema)
	if err != nil {
		return TableDescriptor{}, fmt.Errorf("table json: %w", err)
	}
	d := TableDescriptor{
		Schema:           s,
		PartitionKeys:    *jt.PartitionKey,
		Properties:       *jt.Properties,
		CustomProperties: *jt.CustomProperties,
	}
	if jt.Comment != nil {
		d.Comment = *jt.Comment
	}
	if jt.BucketKey != nil {
		d.BucketKeys = *jt.BucketKey
	}
	if jt.BucketCount != nil {
		d.BucketCount = *jt.BucketCount
	}
	return d, nil
}

// ParseSchemaJSON parses Schema JSON. Columns without ids get their
// position, as Fluss does for schemas written before ids existed.
func ParseSchemaJSON(data []byte) (Schema, error) {
	var js jsonSchema
	if err := json.Unmarshal(data, &js); err != nil {
		return Schema{}, fmt.Errorf("schema json: %w", err)
	}
	if js.Columns == nil {
		return Schema{}, errors.New(`schema json: missing "columns"`)
	}
	s := Schema{Columns: make([]Column, 0, len(*js.Columns)), PrimaryKey: js.PrimaryKey}
	for i, jc := range *js.Columns {
		if jc.Name == nil || jc.DataType == nil {
			return Schema{}, fmt.Errorf("schema json: column %d lacks name or data_type", i)
		}
		t, err := jc.DataType.toDataType()
		if err != nil {
			return Schema{}, fmt.Errorf("schema json: column %q: %w", *jc.Name, err)
		}
		c := Column{Name: *jc.Name, Type: t, ID: int32(i)}
		if jc.Comment != nil {
			c.Comment = *jc.Comment
		}
		if jc.ID != nil {
			c.ID = *jc.ID
		}
		s.Columns = append(s.Columns, c)
	}
	return s, nil
}

// ParseDataTypeJSON parses data type JSON.
func ParseDataTypeJSON(data []byte) (DataType, error) {
	var jt jsonDataType
	if err := json.Unmarshal(data, &jt); err != nil {
		return DataType{}, fmt.Errorf("data type json: %w", err)
	}
	return jt.toDataType()
}

func (jt *jsonDataType) toDataType() (DataType, error) {
	root, err := ParseTypeRoot(jt.Type)
	if err != nil {
		return DataType{}, err
	}
	t := DataType{Root: root, NotNull: jt.Nullable != nil && !*jt.Nullable}
	need := func(p *int, key string) (int, error) {
		if p == nil {
			return 0, fmt.Errorf("%s without %q", jt.Type, key)
		}
		return *p, nil
	}
	switch root {
	case TypeChar, TypeBinary:
		t.Length, err = need(jt.Length, "length")
	case TypeDecimal:
		if t.Precision, err = need(jt.Precision, "precision"); err == nil {
			t.Scale, err = need(jt.Scale, "scale")
		}
	case TypeTime, TypeTimestamp, TypeTimestampLTZ:
		t.Precision, err = need(jt.Precision, "precision")
	case TypeArray:
		t.Elem, err = nested(jt.ElementType, "element_type")
	case TypeMap:
		if t.Key, err = nested(jt.KeyType, "key_type"); err == nil {
			t.Key.NotNull = true // DataTypes.MAP: keys are never null
			t.Value, err = nested(jt.ValueType, "value_type")
		}
	case TypeRow:
		t.Fields = make([]Field, 0, len(jt.Fields))
		for _, jf := range jt.Fields {
			ft, ferr := nested(jf.FieldType, "field_type")
			if ferr != nil {
				return DataType{}, fmt.Errorf("ROW field %q: %w", jf.Name, ferr)
			}
			f := Field{Name: jf.Name, Type: *ft, ID: -1}
			if jf.Description != nil {
				f.Description = *jf.Description
			}
			if jf.FieldID != nil {
				f.ID = *jf.FieldID
			}
			t.Fields = append(t.Fields, f)
		}
	}
	if err != nil {
		return DataType{}, err
	}
	return t, nil
}

func nested(jt *jsonDataType, key string) (*DataType, error) {
	if jt == nil {
		return nil, fmt.Errorf("missing %q", key)
	}
	t, err := jt.toDataType()
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ---------------------------------------------------------------- ids

// columnIDsUsable reports whether the columns' ids (and nested field ids)
// are all distinct and non-negative.
func columnIDsUsable(cols []Column) bool {
	seen := make(map[int32]bool)
	ok := true
	add := func(id int32) {
		if id < 0 || seen[id] {
			ok = false
		}
		seen[id] = true
	}
	var walk func(t *DataType)
	walk = func(t *DataType) {
		switch t.Root {
		case TypeRow:
			for i := range t.Fields {
				add(t.Fields[i].ID)
				walk(&t.Fields[i].Type)
			}
		case TypeArray:
			if t.Elem != nil {
				walk(t.Elem)
			}
		case TypeMap:
			if t.Key != nil {
				walk(t.Key)
			}
			if t.Value != nil {
				walk(t.Value)
			}
		}
	}
	for i := range cols {
		add(cols[i].ID)
		walk(&cols[i].Type)
	}
	return ok
}

// assignColumnIDs returns a copy of cols numbered as Schema.Builder.column
// and ReassignFieldId number them.
func assignColumnIDs(cols []Column) []Column {
	next := int32(-1)
	var reassign func(t DataType) DataType
	reassign = func(t DataType) DataType {
		switch t.Root {
		case TypeRow:
			fields := make([]Field, len(t.Fields))
			for i, f := range t.Fields {
				next++
				f.ID = next
				f.Type = reassign(f.Type)
				fields[i] = f
			}
			t.Fields = fields
		case TypeArray:
			if t.Elem != nil {
				e := reassign(*t.Elem)
				t.Elem = &e
			}
		case TypeMap:
			if t.Key != nil {
				k := reassign(*t.Key)
				t.Key = &k
			}
			if t.Value != nil {
				v := reassign(*t.Value)
				t.Value = &v
			}
		}
		return t
	}
	out := make([]Column, len(cols))
	for i, c := range cols {
		next++
		c.ID = next
		c.Type = reassign(c.Type)
		out[i] = c
	}
	return out
}

// highestFieldID returns the largest nested field id in t, or -1.
func highestFieldID(t *DataType) int32 {
	h := int32(-1)
	switch t.Root {
	case TypeRow:
		for i := range t.Fields {
			h = max(h, t.Fields[i].ID, highestFieldID(&t.Fields[i].Type))
		}
	case TypeArray:
		if t.Elem != nil {
			h = highestFieldID(t.Elem)
		}
	case TypeMap:
		if t.Key != nil {
			h = highestFieldID(t.Key)
		}
		if t.Value != nil {
			h = max(h, highestFieldID(t.Value))
		}
	}
	return h
}

// ---------------------------------------------------------------- writer

func appendJSONIntField(dst []byte, key string, v int) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, int64(v), 10)
}

func appendJSONStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

func appendJSONMap(dst []byte, m map[string]string) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, m[k])
	}
	return append(dst, '}')
}

// appendJSONString quotes s as Jackson does by default: '"' and '\\'
// backslash-escaped, \b \t \n \f \r short forms, other control characters
// as \u00XX with upper-case hex, everything else (including non-ASCII and
// '/', '<', '>', '&') written as is. Invalid UTF-8 is written as is, too.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b == '\b':
			dst = append(dst, '\\', 'b')
		case b == '\t':
			dst = append(dst, '\\', 't')
		case b == '\n':
			dst = append(dst, '\\', 'n')
		case b == '\f':
			dst = append(dst, '\\', 'f')
		case b == '\r':
			dst = append(dst, '\\', 'r')
		case b < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '"')
}
