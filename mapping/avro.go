package mapping

import (
	"strconv"

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

// avroPlan is a compiled writer schema.
type avroPlan struct {
	failCol, failReason string // every record of this schema fails so
	root                *avroRecordPlan
	whole               []avroColConv // a non-record schema filling one column
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
