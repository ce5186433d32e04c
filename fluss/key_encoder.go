package fluss

import (
	"errors"
	"fmt"
)

// KeyEncoder turns the key columns of a row into the key bytes Fluss uses
// for primary keys and bucket keys. Without a data-lake format (and for
// Lance) that is fluss-common's CompactedKeyEncoder: the compacted field
// encoding of each key column, back to back, with no null bitset; a null key
// value is an error. Paimon and Iceberg tables use lake-specific key
// encoders (key_encoder_lake.go; NewTableKeying picks the encoder of each
// key of a table).
//
// A KeyEncoder is immutable and safe for concurrent use.
type KeyEncoder struct {
	index []int
	types []DataType
	names []string
	lake  lakeKeyFormat // key layout; key_encoder_lake.go
}

// ErrLakeKeyEncodingNotImplemented is returned by NewKeyEncoder for tables
// whose data-lake format needs a key encoding this package does not have
// (hudi, which Fluss 0.9.1 does not define).
var ErrLakeKeyEncodingNotImplemented = errors.New("fluss: key encoding for this data-lake format is not implemented")

// NewKeyEncoder returns the encoder for keyColumns (in the given order) of
// schema. lakeFormat is the table's table.datalake.format ("" for none):
// "paimon" and "iceberg" select their lake key encoders, "" and "lance" the
// CompactedKeyEncoder.
func NewKeyEncoder(schema *Schema, keyColumns []string, lakeFormat string) (*KeyEncoder, error) {
	lake, err := parseLakeKeyFormat(lakeFormat)
	if err != nil {
		return nil, err
	}
	if schema == nil || len(keyColumns) == 0 {
		return nil, errors.New("fluss: key encoder needs at least one key column")
	}
	e := &KeyEncoder{
		index: make([]int, len(keyColumns)),
		types: make([]DataType, len(keyColumns)),
		names: append([]string(nil), keyColumns...),
	}
	for i, name := range keyColumns {
		j := schema.ColumnIndex(name)
		if j < 0 {
			return nil, fmt.Errorf("fluss: key column %q not in schema", name)
		}
		t := schema.Columns[j].Type
		if err := checkScalarType(&t); err != nil {
			return nil, fmt.Errorf("key column %q: %w", name, err)
		}
		e.index[i] = j
		e.types[i] = t
	}
	e.lake = lake
	if err := e.checkLakeKeyTypes(); err != nil {
		return nil, err
	}
	return e, nil
}

// Types returns the key columns' types, in key order.
func (e *KeyEncoder) Types() []DataType { return append([]DataType(nil), e.types...) }

// Encode appends the key bytes of row (a full table row) to dst.
func (e *KeyEncoder) Encode(dst []byte, row Row) ([]byte, error) {
	if e.lake != lakeKeyCompacted {
		return e.encodeLake(dst, row)
	}
	start := len(dst)
	for i, j := range e.index {
		if j >= len(row) {
			return dst[:start], fmt.Errorf("fluss: row has %d values, key column %q is at %d", len(row), e.names[i], j)
		}
		d := &row[j]
		if d.Null {
			return dst[:start], fmt.Errorf("fluss: null value in key column %q", e.names[i])
		}
		dst = appendCompactedField(dst, &e.types[i], d)
	}
	return dst, nil
}

// KeyColumns returns, for a table, the columns its key encodings cover, as
// the Java client derives them: primaryKey is the physical primary key (the
// primary key minus the partition keys, TableInfo.generatePhysicalPrimaryKey;
// nil for log tables) and bucketKey the table's bucket keys, defaulting to
// the physical primary key for primary-key tables
// (TableDescriptor.defaultBucketKeyOfPrimaryKeyTable). A log table without
// bucket keys has none: any bucket may be used.
func KeyColumns(d *TableDescriptor) (primaryKey, bucketKey []string) {
	partition := make(map[string]bool, len(d.PartitionKeys))
	for _, p := range d.PartitionKeys {
		partition[p] = true
	}
	for _, c := range d.Schema.PrimaryKey {
		if !partition[c] {
			primaryKey = append(primaryKey, c)
		}
	}
	bucketKey = append([]string(nil), d.BucketKeys...)
	if len(bucketKey) == 0 && len(primaryKey) > 0 {
		bucketKey = append([]string(nil), primaryKey...)
	}
	return primaryKey, bucketKey
}
