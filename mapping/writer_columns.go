package mapping

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// WriterColumns derives, from a registry writer schema, the columns its
// top-level fields would fill: what a table created from the schema holds,
// and what a table that lacks some of them would add (docs/configuration.md,
// "Tables from writer schemas"). Each column is nullable (Fluss adds only
// nullable columns, and an absent field reads null). The type of each is
// the first the format's type table lists for the writer type. A field no
// column type holds is returned in notAdded, with why: it is then like any
// field the table lacks (ignored, or refused under unknown_fields: reject).
//
// message selects a Protobuf schema's message (a full name, or Apicurio's
// simple name; ProtobufMessage names the one a record is). "" means the
// file's only top-level message; a file of several is refused, naming them.
func WriterColumns(format string, s *schemaregistry.Schema, message string) (cols []fluss.Column, notAdded []FieldNotAdded, err error) {
	switch format {
	case string(ValueAvro):
		return avroWriterColumns(s)
	case string(ValueProtobuf):
		return protobufWriterColumns(s, message)
	case string(ValueJSONSchema):
		return jsonSchemaWriterColumns(s)
	}
	return nil, nil, fmt.Errorf("value.format %s has no writer schema to derive columns from", format)
}

// FieldNotAdded is a writer schema's field that no column is made for: a
// top-level field of a type no column holds, or (NewFields) a field new
// inside a ROW column, which Fluss cannot add.
type FieldNotAdded struct {
	Field  string // the path: "note", or "addr.zip" inside a ROW column
	Type   string // the writer's type, where it says why
	Reason string
}

func (f FieldNotAdded) String() string {
	if f.Type == "" {
		return "field " + strconv.Quote(f.Field) + ": " + f.Reason
	}
	return "field " + strconv.Quote(f.Field) + " (" + f.Type + "): " + f.Reason
}

// errNoColumns: a schema whose every field was left out makes no table.
func errNoColumns(notAdded []FieldNotAdded) error {
	parts := make([]string, len(notAdded))
	for i, f := range notAdded {
		parts[i] = f.String()
	}
	return fmt.Errorf("no field of the writer schema has a column type: %s", strings.Join(parts, "; "))
}

func avroWriterColumns(s *schemaregistry.Schema) ([]fluss.Column, []FieldNotAdded, error) {
	ws, err := parseAvroSchema(s)
	if err != nil {
		return nil, nil, err
	}
	rs, ok := derefAvro(ws).(*avro.RecordSchema)
	if !ok {
		return nil, nil, fmt.Errorf("the writer schema is %s, not a record: it has no fields to make columns of", avroTypeName(ws))
	}
	cols := make([]fluss.Column, 0, len(rs.Fields()))
	var notAdded []FieldNotAdded
	for _, f := range rs.Fields() {
		t, err := avroColumnType(f.Type(), 0)
		if err != nil {
			notAdded = append(notAdded, FieldNotAdded{Field: f.Name(), Type: avroTypeName(f.Type()), Reason: err.Error()})
			continue
		}
		cols = append(cols, fluss.Column{Name: f.Name(), Type: t, Comment: f.Doc()})
	}
	if len(cols) == 0 && len(notAdded) > 0 {
		return nil, notAdded, errNoColumns(notAdded)
	}
	return cols, notAdded, nil
}

// avroColumnType is the column type an Avro writer type fills by default.
func avroColumnType(ws avro.Schema, depth int) (fluss.DataType, error) {
	if depth > maxAvroDepth {
		return fluss.DataType{}, fmt.Errorf("nested too deeply (a recursive type cannot be a column)")
	}
	switch s := derefAvro(ws).(type) {
	case *avro.PrimitiveSchema:
		return avroPrimitiveColumn(s)
	case *avro.EnumSchema:
		return fluss.String(), nil
	case *avro.FixedSchema:
		if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			return decimalColumn(d.Precision(), d.Scale())
		}
		return fluss.Binary(s.Size()), nil
	case *avro.RecordSchema:
		fields := make([]fluss.Field, 0, len(s.Fields()))
		for _, f := range s.Fields() {
			t, err := avroColumnType(f.Type(), depth+1)
			if err != nil {
				return fluss.DataType{}, fmt.Errorf("field %q: %w", f.Name(), err)
			}
			fields = append(fields, fluss.Field{Name: f.Name(), Type: t, Description: f.Doc()})
		}
		return fluss.RowType(fields...), nil
	case *avro.ArraySchema:
		elem, err := avroColumnType(s.Items(), depth+1)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("array items: %w", err)
		}
		return fluss.Array(elem), nil
	case *avro.MapSchema:
		v, err := avroColumnType(s.Values(), depth+1)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("map values: %w", err)
		}
		return fluss.Map(fluss.String(), v), nil
	case *avro.UnionSchema:
		var branch avro.Schema
		for _, b := range s.Types() {
			if _, null := derefAvro(b).(*avro.NullSchema); null {
				continue
			}
			if branch != nil {
				return fluss.DataType{}, fmt.Errorf("a union of several types has no one column type: create the column yourself")
			}
			branch = b
		}
		if branch == nil {
			return fluss.DataType{}, fmt.Errorf("a union of null only")
		}
		return avroColumnType(branch, depth)
	case *avro.NullSchema:
		return fluss.DataType{}, fmt.Errorf("a null field has no column type")
	}
	return fluss.DataType{}, fmt.Errorf("no column type for %s", avroTypeName(ws))
}

func avroPrimitiveColumn(s *avro.PrimitiveSchema) (fluss.DataType, error) {
	switch lt := avroLogical(s); {
	case lt == "date":
		return fluss.Date(), nil
	case lt == "time-millis", lt == "time-micros":
		return fluss.Time(3), nil // Fluss keeps milliseconds of a TIME
	case lt == "timestamp-millis":
		return fluss.TimestampLTZ(3), nil
	case lt == "timestamp-micros":
		return fluss.TimestampLTZ(6), nil
	case lt == "timestamp-nanos":
		return fluss.TimestampLTZ(9), nil
	case lt == "local-timestamp-millis":
		return fluss.Timestamp(3), nil
	case lt == "local-timestamp-micros":
		return fluss.Timestamp(6), nil
	case lt == "local-timestamp-nanos":
		return fluss.Timestamp(9), nil
	}
	if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
		return decimalColumn(d.Precision(), d.Scale())
	}
	switch s.Type() {
	case avro.Boolean:
		return fluss.Boolean(), nil
	case avro.Int:
		return fluss.Int(), nil
	case avro.Long:
		return fluss.BigInt(), nil
	case avro.Float:
		return fluss.Float(), nil
	case avro.Double:
		return fluss.Double(), nil
	case avro.String:
		return fluss.String(), nil
	case avro.Bytes:
		return fluss.Bytes(), nil
	}
	return fluss.DataType{}, fmt.Errorf("no column type for %s", avroTypeName(s))
}

// decimalColumn is DECIMAL(p, s) when Fluss can hold it (p ≤ 38).
func decimalColumn(p, s int) (fluss.DataType, error) {
	if p < 1 || p > 38 || s < 0 || s > p {
		return fluss.DataType{}, fmt.Errorf("decimal(%s, %s) does not fit a DECIMAL column (precision 1 to 38)", strconv.Itoa(p), strconv.Itoa(s))
	}
	return fluss.Decimal(p, s), nil
}

// ColumnsToAdd compares the columns a writer schema fills (WriterColumns)
// with a table's: add are the top-level ones the table lacks, which Fluss
// adds as nullable columns at the end; notAdded the fields new inside a
// ROW column the table has (also a ROW in an ARRAY or MAP), which Fluss
// cannot add: their values are then left out, like any field the table
// lacks. Type differences are not compared: the converter refuses a field
// whose type does not fit its column, naming both types.
func ColumnsToAdd(have, want []fluss.Column) (add []fluss.Column, notAdded []FieldNotAdded) {
	for _, c := range want {
		i := slices.IndexFunc(have, func(h fluss.Column) bool { return h.Name == c.Name })
		if i < 0 {
			add = append(add, c)
			continue
		}
		notAdded = newNestedFields(notAdded, c.Name, &have[i].Type, &c.Type)
	}
	return add, notAdded
}

// newNestedFields appends to out the fields of want that have lacks, inside
// ROW types (through ARRAY elements and MAP values) at path.
func newNestedFields(out []FieldNotAdded, path string, have, want *fluss.DataType) []FieldNotAdded {
	switch {
	case have.Root == fluss.TypeRow && want.Root == fluss.TypeRow:
		for _, wf := range want.Fields {
			j := slices.IndexFunc(have.Fields, func(h fluss.Field) bool { return h.Name == wf.Name })
			if j < 0 {
				out = append(out, FieldNotAdded{Field: path + "." + wf.Name, Type: wf.Type.String(),
					Reason: "new inside ROW column " + strings.SplitN(path, ".", 2)[0] + ", and Fluss cannot add a field inside a ROW column"})
				continue
			}
			out = newNestedFields(out, path+"."+wf.Name, &have.Fields[j].Type, &wf.Type)
		}
	case have.Root == fluss.TypeArray && want.Root == fluss.TypeArray && have.Elem != nil && want.Elem != nil:
		out = newNestedFields(out, path+"[]", have.Elem, want.Elem)
	case have.Root == fluss.TypeMap && want.Root == fluss.TypeMap && have.Value != nil && want.Value != nil:
		out = newNestedFields(out, path+"{}", have.Value, want.Value)
	}
	return out
}
