package fluss

import (
	"errors"
	"fmt"
)

// A stored KV value, as Lookup returns it, is the int16 LE schema id the row
// was written with followed by the row bytes in the table's kv format
// (fluss-common row/encode/ValueEncoder.encodeValue). KvRecords on the write
// path carry the row bytes only, without this prefix.

const valueSchemaIDSize = 2

// AppendValueRow appends schemaID (int16 LE) and row in the given kv format,
// the form Fluss stores and returns from lookups.
func AppendValueRow(dst []byte, schema *Schema, schemaID int16, format KvFormat, row Row) ([]byte, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return dst, err
	}
	types := columnTypes(schema)
	start := len(dst)
	dst = leAppendU16(dst, uint16(schemaID))
	var err error
	switch format {
	case KvFormatCompacted, "":
		dst, err = appendCompactedRow(dst, types, row)
	case KvFormatIndexed:
		dst, err = appendIndexedRow(dst, types, indexedVarCount(types), row)
	default:
		return dst[:start], fmt.Errorf("fluss: unknown kv format %q", format)
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// DecodeValueRow decodes a stored KV value (schema id prefix + row) written
// in format for schema. Byte-string datums point into value.
func DecodeValueRow(value []byte, schema *Schema, format KvFormat) (schemaID int16, row Row, err error) {
	if len(value) < valueSchemaIDSize {
		return 0, nil, errors.New("fluss: value shorter than its schema id")
	}
	schemaID = int16(leU16(value, 0))
	row, err = DecodeRow(value[valueSchemaIDSize:], schema, format)
	return schemaID, row, err
}

// DecodeRow decodes bare row bytes (no schema id) in the given format.
func DecodeRow(b []byte, schema *Schema, format KvFormat) (Row, error) {
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	types := columnTypes(schema)
	row := make(Row, len(types))
	var err error
	switch format {
	case KvFormatCompacted, "":
		err = decodeCompactedRow(b, types, row)
	case KvFormatIndexed:
		err = decodeIndexedRow(b, types, indexedVarCount(types), row)
	default:
		return nil, fmt.Errorf("fluss: unknown kv format %q", format)
	}
	if err != nil {
		return nil, err
	}
	return row, nil
}
