package fluss

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// ArrowSchema returns the arrow-go schema Fluss readers use for an ARROW log
// batch of schema (fluss-common utils/ArrowUtils.toArrowSchema): the same
// field order and types ArrowLogBuilder writes, nullability from the Fluss
// type, timestamps without a time zone. Nested types get the children of
// ArrowUtils.toArrowField: ARRAY a List of "element"; MAP a Map (keysSorted
// false) of a non-null "entries" struct of "key" (non-null) and "value";
// ROW a Struct of the row's fields. Use it to read ARROW batches with
// arrow-go's IPC reader (prepend a schema message).
func ArrowSchema(schema *Schema) (*arrow.Schema, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, len(schema.Columns))
	for i, c := range schema.Columns {
		t, err := arrowDataType(&c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: !c.Type.NotNull}
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowDataType(t *DataType) (arrow.DataType, error) {
	unit := func(p int) arrow.TimeUnit {
		switch {
		case p == 0:
			return arrow.Second
		case p <= 3:
			return arrow.Millisecond
		case p <= 6:
			return arrow.Microsecond
		}
		return arrow.Nanosecond
	}
	switch t.Root {
	case TypeBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case TypeTinyInt:
		return arrow.PrimitiveTypes.Int8, nil
	case TypeSmallInt:
		return arrow.PrimitiveTypes.Int16, nil
	case TypeInt:
		return arrow.PrimitiveTypes.Int32, nil
	case TypeBigInt:
		return arrow.PrimitiveTypes.Int64, nil
	case TypeFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case TypeDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case TypeChar, TypeString:
		return arrow.BinaryTypes.String, nil
	case TypeBytes:
		return arrow.BinaryTypes.Binary, nil
	case TypeBinary:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}, nil
	case TypeDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case TypeDate:
		return arrow.FixedWidthTypes.Date32, nil
	case TypeTime:
		switch unit(t.Precision) {
		case arrow.Second:
			return arrow.FixedWidthTypes.Time32s, nil
		case arrow.Millisecond:
			return arrow.FixedWidthTypes.Time32ms, nil
		case arrow.Microsecond:
			return arrow.FixedWidthTypes.Time64us, nil
		}
		return arrow.FixedWidthTypes.Time64ns, nil
	case TypeTimestamp, TypeTimestampLTZ:
		return &arrow.TimestampType{Unit: unit(t.Precision)}, nil
	case TypeArray:
		et, err := arrowDataType(t.Elem)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: et, Nullable: !t.Elem.NotNull}), nil
	case TypeMap:
		kt, err := arrowDataType(t.Key)
		if err != nil {
			return nil, err
		}
		vt, err := arrowDataType(t.Value)
		if err != nil {
			return nil, err
		}
		return arrow.MapOfFields(arrow.Field{Name: "key", Type: kt}, arrow.Field{Name: "value", Type: vt, Nullable: !t.Value.NotNull}), nil
	case TypeRow:
		fields := make([]arrow.Field, len(t.Fields))
		for i := range t.Fields {
			ft, err := arrowDataType(&t.Fields[i].Type)
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: t.Fields[i].Name, Type: ft, Nullable: !t.Fields[i].Type.NotNull}
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("fluss: no arrow type for %s", t)
}
