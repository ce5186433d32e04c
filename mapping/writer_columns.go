package mapping

import (
	"fmt"
	"strconv"

	"github.com/hamba/avro/v2"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// WriterColumns derives, from a registry writer schema, the columns its
// top-level fields would fill: what a table created from the schema holds,
// and what a table that lacks some of them would add (docs/configuration.md,
// "Tables from writer schemas"). Each column is nullable (Fluss adds only
// nullable columns, and an absent field reads null). The type of each is
// the first the format's type table lists for the writer type.
func WriterColumns(format string, s *schemaregistry.Schema) ([]fluss.Column, error) {
	switch format {
	case string(ValueAvro):
		return avroWriterColumns(s)
	case string(ValueProtobuf):
		return protobufWriterColumns(s)
	case string(ValueJSONSchema):
		return jsonSchemaWriterColumns(s)
	}
	return nil, fmt.Errorf("value.format %s has no writer schema to derive columns from", format)
}

func avroWriterColumns(s *schemaregistry.Schema) ([]fluss.Column, error) {
	ws, err := parseAvroSchema(s)
	if err != nil {
		return nil, err
	}
	rs, ok := derefAvro(ws).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the writer schema is %s, not a record: it has no fields to make columns of", avroTypeName(ws))
	}
	cols := make([]fluss.Column, 0, len(rs.Fields()))
	for _, f := range rs.Fields() {
		t, err := avroColumnType(f.Type(), 0)
		if err != nil {
			return nil, fmt.Errorf("field %q (%s): %w", f.Name(), avroTypeName(f.Type()), err)
		}
		cols = append(cols, fluss.Column{Name: f.Name(), Type: t, Comment: f.Doc()})
	}
	return cols, nil
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
