package fluss

import (
	"fmt"
	"math"
	"strings"
)

// TypeRoot is the kind of a Fluss data type. The names follow Fluss's
// DataTypeRoot; String returns the name used in table JSON.
type TypeRoot uint8

const (
	TypeBoolean TypeRoot = iota + 1
	TypeTinyInt
	TypeSmallInt
	TypeInt
	TypeBigInt
	TypeFloat
	TypeDouble
	TypeDecimal
	TypeChar
	TypeString
	TypeBinary
	TypeBytes
	TypeDate
	TypeTime         // TIME_WITHOUT_TIME_ZONE
	TypeTimestamp    // TIMESTAMP_WITHOUT_TIME_ZONE
	TypeTimestampLTZ // TIMESTAMP_WITH_LOCAL_TIME_ZONE
	TypeArray
	TypeMap
	TypeRow
)

var typeRootNames = [...]string{
	TypeBoolean:      "BOOLEAN",
	TypeTinyInt:      "TINYINT",
	TypeSmallInt:     "SMALLINT",
	TypeInt:          "INTEGER",
	TypeBigInt:       "BIGINT",
	TypeFloat:        "FLOAT",
	TypeDouble:       "DOUBLE",
	TypeDecimal:      "DECIMAL",
	TypeChar:         "CHAR",
	TypeString:       "STRING",
	TypeBinary:       "BINARY",
	TypeBytes:        "BYTES",
	TypeDate:         "DATE",
	TypeTime:         "TIME_WITHOUT_TIME_ZONE",
	TypeTimestamp:    "TIMESTAMP_WITHOUT_TIME_ZONE",
	TypeTimestampLTZ: "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
	TypeArray:        "ARRAY",
	TypeMap:          "MAP",
	TypeRow:          "ROW",
}

// String returns the type root's name as Fluss writes it in table JSON.
func (r TypeRoot) String() string {
	if int(r) < len(typeRootNames) && typeRootNames[r] != "" {
		return typeRootNames[r]
	}
	return fmt.Sprintf("TypeRoot(%d)", uint8(r))
}

// ParseTypeRoot maps a table-JSON type name to its root.
func ParseTypeRoot(s string) (TypeRoot, error) {
	for i, n := range typeRootNames {
		if n != "" && n == s {
			return TypeRoot(i), nil
		}
	}
	return 0, fmt.Errorf("fluss: unknown data type %q", s)
}

// DataType is a Fluss column type. The zero value of NotNull means nullable,
// as in Fluss's JSON, where "nullable" is written only when false.
type DataType struct {
	Root    TypeRoot
	NotNull bool
	// Precision applies to DECIMAL, TIME, TIMESTAMP and TIMESTAMP_LTZ;
	// Scale to DECIMAL; Length to CHAR and BINARY.
	Precision int
	Scale     int
	Length    int
	// Elem is the element type of an ARRAY; Key and Value those of a MAP.
	Elem, Key, Value *DataType
	// Fields are the fields of a ROW.
	Fields []Field
}

// Field is one field of a ROW type.
type Field struct {
	Name        string
	Type        DataType
	Description string
	ID          int32
}

// Convenience constructors for the scalar types.
func Boolean() DataType  { return DataType{Root: TypeBoolean} }
func TinyInt() DataType  { return DataType{Root: TypeTinyInt} }
func SmallInt() DataType { return DataType{Root: TypeSmallInt} }
func Int() DataType      { return DataType{Root: TypeInt} }
func BigInt() DataType   { return DataType{Root: TypeBigInt} }
func Float() DataType    { return DataType{Root: TypeFloat} }
func Double() DataType   { return DataType{Root: TypeDouble} }
func String() DataType   { return DataType{Root: TypeString} }
func Bytes() DataType    { return DataType{Root: TypeBytes} }
func Date() DataType     { return DataType{Root: TypeDate} }
func Decimal(precision, scale int) DataType {
	return DataType{Root: TypeDecimal, Precision: precision, Scale: scale}
}
func Char(length int) DataType   { return DataType{Root: TypeChar, Length: length} }
func Binary(length int) DataType { return DataType{Root: TypeBinary, Length: length} }
func Time(precision int) DataType {
	return DataType{Root: TypeTime, Precision: precision}
}
func Timestamp(precision int) DataType {
	return DataType{Root: TypeTimestamp, Precision: precision}
}
func TimestampLTZ(precision int) DataType {
	return DataType{Root: TypeTimestampLTZ, Precision: precision}
}

// Array returns ARRAY<elem>.
func Array(elem DataType) DataType { return DataType{Root: TypeArray, Elem: &elem} }

// Map returns MAP<key, value>. The key type is made NOT NULL, as Fluss's
// MapType constructor does: map keys are never null.
func Map(key, value DataType) DataType {
	key.NotNull = true
	return DataType{Root: TypeMap, Key: &key, Value: &value}
}

// RowType returns ROW<fields...> (named RowType because Row is the type of
// a record's values). Field ids may be left zero: AppendSchemaJSON numbers
// them as Fluss's Schema.Builder does.
func RowType(fields ...Field) DataType { return DataType{Root: TypeRow, Fields: fields} }

// RowField returns a field of a ROW type.
func RowField(name string, t DataType) Field { return Field{Name: name, Type: t} }

// IsNested reports whether t is an ARRAY, MAP or ROW type.
func (t *DataType) IsNested() bool {
	return t.Root == TypeArray || t.Root == TypeMap || t.Root == TypeRow
}

// NonNull returns a copy of t that does not accept nulls.
func (t DataType) NonNull() DataType { t.NotNull = true; return t }

// String renders the type in SQL-like form, for error messages.
func (t DataType) String() string {
	var b strings.Builder
	switch t.Root {
	case TypeDecimal:
		fmt.Fprintf(&b, "DECIMAL(%d, %d)", t.Precision, t.Scale)
	case TypeChar, TypeBinary:
		fmt.Fprintf(&b, "%s(%d)", t.Root, t.Length)
	case TypeTime, TypeTimestamp, TypeTimestampLTZ:
		fmt.Fprintf(&b, "%s(%d)", t.Root, t.Precision)
	case TypeArray:
		fmt.Fprintf(&b, "ARRAY<%s>", t.Elem)
	case TypeMap:
		fmt.Fprintf(&b, "MAP<%s, %s>", t.Key, t.Value)
	case TypeRow:
		b.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s", f.Name, f.Type)
		}
		b.WriteString(">")
	default:
		b.WriteString(t.Root.String())
	}
	if t.NotNull {
		b.WriteString(" NOT NULL")
	}
	return b.String()
}

// Column is one top-level column of a table schema.
type Column struct {
	Name    string
	Type    DataType
	Comment string
	ID      int32
}

// Schema is a table's columns and its primary key (empty for log tables).
type Schema struct {
	Columns    []Column
	PrimaryKey []string
}

// ColumnIndex returns the position of the named column, or -1.
func (s *Schema) ColumnIndex(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// TablePath names a table inside a database.
type TablePath struct {
	Database string
	Table    string
}

func (p TablePath) String() string { return p.Database + "." + p.Table }

// Table properties that change what a writer sends.
const (
	PropLogFormat             = "table.log.format"
	PropArrowCompression      = "table.log.arrow.compression.type"
	PropArrowCompressionLevel = "table.log.arrow.compression.zstd.level"
	PropKvFormat              = "table.kv.format"
	PropKvFormatVersion       = "table.kv.format-version"
	PropDataLakeFormat        = "table.datalake.format"
	PropReplicationFactor     = "table.replication.factor"
)

// LogFormat is the record format of a table's log batches.
type LogFormat string

const (
	LogFormatArrow     LogFormat = "ARROW"
	LogFormatIndexed   LogFormat = "INDEXED"
	LogFormatCompacted LogFormat = "COMPACTED"
)

// KvFormat is the row format of a primary-key table's values.
type KvFormat string

const (
	KvFormatCompacted KvFormat = "COMPACTED"
	KvFormatIndexed   KvFormat = "INDEXED"
)

// ArrowCompression is the codec applied to Arrow body buffers.
type ArrowCompression string

const (
	ArrowCompressionNone ArrowCompression = "NONE"
	ArrowCompressionLZ4  ArrowCompression = "LZ4_FRAME"
	ArrowCompressionZstd ArrowCompression = "ZSTD"
)

// TableDescriptor describes a table to create, or one read back with
// GetTableInfo (after the server applied its defaults).
type TableDescriptor struct {
	Schema           Schema
	Comment          string
	PartitionKeys    []string
	BucketKeys       []string
	BucketCount      int // 0 = server default
	Properties       map[string]string
	CustomProperties map[string]string
}

// LogFormat returns the table's log format, ARROW when unset.
func (d *TableDescriptor) LogFormat() LogFormat {
	if v := d.Properties[PropLogFormat]; v != "" {
		return LogFormat(strings.ToUpper(v))
	}
	return LogFormatArrow
}

// KvFormat returns the table's KV value format, COMPACTED when unset.
func (d *TableDescriptor) KvFormat() KvFormat {
	if v := d.Properties[PropKvFormat]; v != "" {
		return KvFormat(strings.ToUpper(v))
	}
	return KvFormatCompacted
}

// ArrowCompression returns the Arrow body codec, ZSTD when unset.
func (d *TableDescriptor) ArrowCompression() ArrowCompression {
	if v := d.Properties[PropArrowCompression]; v != "" {
		return ArrowCompression(strings.ToUpper(v))
	}
	return ArrowCompressionZstd
}

// HasPrimaryKey reports whether the table is a primary-key (KV) table.
func (d *TableDescriptor) HasPrimaryKey() bool { return len(d.Schema.PrimaryKey) > 0 }

// IsPartitioned reports whether the table has partition keys.
func (d *TableDescriptor) IsPartitioned() bool { return len(d.PartitionKeys) > 0 }

// TableInfo is what GetTableInfo returns: the descriptor plus identity.
type TableInfo struct {
	Path         TablePath
	TableID      int64
	SchemaID     int32
	Descriptor   TableDescriptor
	CreatedTime  int64
	ModifiedTime int64
}

// Datum is one value of a row. Which fields are meaningful depends on the
// column's type; a scalar Datum never allocates on its own, so a row can point into
// the buffer it was decoded from.
//
//	BOOLEAN                      I (0 or 1)
//	TINYINT … BIGINT, DATE       I (DATE: days since epoch)
//	TIME                         I (milliseconds of day)
//	FLOAT, DOUBLE                F
//	DECIMAL, precision <= 18     I (unscaled value)
//	DECIMAL, precision > 18      B (unscaled, big-endian two's complement)
//	CHAR, STRING                 B (UTF-8)
//	BINARY, BYTES                B
//	TIMESTAMP, TIMESTAMP_LTZ     I (epoch milliseconds), N (nanos of milli)
//	ARRAY                        Nested.Elems (one Datum per element)
//	MAP                          Nested.Keys, Nested.Values (entry order kept)
//	ROW                          Nested.Fields (one Datum per field)
//
// Nested values are the only ones that point to other memory of their own
// (a *Nested); scalar datums leave Nested nil.
type Datum struct {
	I      int64
	F      float64
	B      []byte
	N      int32
	Null   bool
	Nested *Nested
}

// Nested is the value of an ARRAY, MAP or ROW datum. Only the slices of the
// datum's type are used: Elems for ARRAY; Keys and Values, of equal length,
// for MAP (keys must not be null; duplicates are written as given); Fields
// for ROW, one per field of the row type.
type Nested struct {
	Elems  []Datum
	Keys   []Datum
	Values []Datum
	Fields []Datum
}

// Row is one record's values, in column order.
type Row []Datum

// Constructors for Datums.
func NullDatum() Datum           { return Datum{Null: true} }
func BoolDatum(v bool) Datum     { return Datum{I: b2i(v)} }
func IntDatum(v int64) Datum     { return Datum{I: v} }
func FloatDatum(v float64) Datum { return Datum{F: v} }
func BytesDatum(v []byte) Datum  { return Datum{B: v} }
func StringDatum(v string) Datum { return Datum{B: []byte(v)} }
func TimestampDatum(millis int64, nanoOfMilli int32) Datum {
	return Datum{I: millis, N: nanoOfMilli}
}

// ArrayDatum returns an ARRAY value; no elements is the empty array.
func ArrayDatum(elems ...Datum) Datum { return Datum{Nested: &Nested{Elems: elems}} }

// MapDatum returns a MAP value of the entries keys[i] → values[i]. The
// slices must be of equal length (the encoders refuse them otherwise).
func MapDatum(keys, values []Datum) Datum {
	return Datum{Nested: &Nested{Keys: keys, Values: values}}
}

// RowDatum returns a ROW value with the given field values.
func RowDatum(fields ...Datum) Datum { return Datum{Nested: &Nested{Fields: fields}} }

// Float32 returns the value of a FLOAT datum.
func (d Datum) Float32() float32 { return float32(d.F) }

// Equal reports whether two datums hold the same value. Floats compare by
// bits, so NaN equals NaN.
func (d Datum) Equal(o Datum) bool {
	if d.Null || o.Null {
		return d.Null == o.Null
	}
	if d.Nested != nil || o.Nested != nil {
		return d.Nested != nil && o.Nested != nil && d.Nested.Equal(o.Nested)
	}
	return d.I == o.I && d.N == o.N && math.Float64bits(d.F) == math.Float64bits(o.F) &&
		string(d.B) == string(o.B)
}

// Equal reports whether two nested values hold equal elements, entries and
// fields (nil and empty slices are equal).
func (n *Nested) Equal(o *Nested) bool {
	return datumsEqual(n.Elems, o.Elems) && datumsEqual(n.Keys, o.Keys) &&
		datumsEqual(n.Values, o.Values) && datumsEqual(n.Fields, o.Fields)
}

func datumsEqual(a, b []Datum) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}
