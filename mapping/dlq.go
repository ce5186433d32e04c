package mapping

import (
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss"
)

// Dead-letter table columns. A DLQ table is a log table (no primary key,
// not partitioned, no bucket key) with some of these columns; value and
// reason are required, the others optional, and any other column must be
// nullable (it is left null):
//
//	CREATE TABLE ops.dead_letters (
//	  kafka_topic      STRING,
//	  kafka_partition  INT,
//	  kafka_offset     BIGINT,
//	  kafka_timestamp  TIMESTAMP_LTZ(3),  -- or TIMESTAMP(3), or BIGINT epoch millis
//	  kafka_key        BYTES,             -- null when the record had no key
//	  kafka_value      BYTES,             -- null for a tombstone
//	  kafka_headers    STRING,            -- JSON object of string values
//	  route            STRING,
//	  reason           STRING
//	)
const (
	DLQColumnTopic     = "kafka_topic"
	DLQColumnPartition = "kafka_partition"
	DLQColumnOffset    = "kafka_offset"
	DLQColumnTimestamp = "kafka_timestamp"
	DLQColumnKey       = "kafka_key"
	DLQColumnValue     = "kafka_value"
	DLQColumnHeaders   = "kafka_headers"
	DLQColumnRoute     = "route"
	DLQColumnReason    = "reason"
)

// DLQ builds dead-letter rows for one dead-letter table. It is immutable
// and safe for concurrent use.
type DLQ struct {
	table                                                                   fluss.TablePath
	schema                                                                  *fluss.Schema
	numBuckets                                                              int
	topic, partition, offset, timestamp, key, value, headers, route, reason int
}

// NewDLQ checks a dead-letter table's schema (see the DLQColumn constants)
// and returns its row builder.
func NewDLQ(info *fluss.TableInfo) (*DLQ, error) {
	d := &info.Descriptor
	q := &DLQ{table: info.Path, schema: &d.Schema, numBuckets: d.BucketCount}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.HasPrimaryKey() {
		fail("a dead-letter table must be a log table, %s has a primary key", info.Path)
	}
	if d.IsPartitioned() {
		fail("partitioned dead-letter tables: %w", ErrNotImplemented)
	}
	if len(d.BucketKeys) > 0 {
		fail("dead-letter tables with a bucket key: %w", ErrNotImplemented)
	}
	if q.numBuckets <= 0 {
		fail("table info has no bucket count")
	}
	cols := []struct {
		name     string
		dst      *int
		required bool
		ok       []fluss.TypeRoot
	}{
		{DLQColumnTopic, &q.topic, false, []fluss.TypeRoot{fluss.TypeString}},
		{DLQColumnPartition, &q.partition, false, []fluss.TypeRoot{fluss.TypeInt, fluss.TypeBigInt}},
		{DLQColumnOffset, &q.offset, false, []fluss.TypeRoot{fluss.TypeBigInt}},
		{DLQColumnTimestamp, &q.timestamp, false, []fluss.TypeRoot{fluss.TypeTimestampLTZ, fluss.TypeTimestamp, fluss.TypeBigInt}},
		{DLQColumnKey, &q.key, false, []fluss.TypeRoot{fluss.TypeBytes}},
		{DLQColumnValue, &q.value, true, []fluss.TypeRoot{fluss.TypeBytes}},
		{DLQColumnHeaders, &q.headers, false, []fluss.TypeRoot{fluss.TypeString}},
		{DLQColumnRoute, &q.route, false, []fluss.TypeRoot{fluss.TypeString}},
		{DLQColumnReason, &q.reason, true, []fluss.TypeRoot{fluss.TypeString}},
	}
	known := make([]bool, len(d.Schema.Columns))
	for _, c := range cols {
		i := d.Schema.ColumnIndex(c.name)
		*c.dst = i
		if i < 0 {
			if c.required {
				fail("column %q is required", c.name)
			}
			continue
		}
		known[i] = true
		t := d.Schema.Columns[i].Type
		ok := false
		for _, r := range c.ok {
			ok = ok || t.Root == r
		}
		if !ok {
			fail("column %q has type %s, want one of %v", c.name, t, c.ok)
		}
		// Key and value are null for keyless records and tombstones.
		if t.NotNull && (i == q.key || i == q.value) {
			fail("column %q must be nullable", c.name)
		}
	}
	for i, col := range d.Schema.Columns {
		if !known[i] && col.Type.NotNull {
			fail("column %q is not a dead-letter column and is NOT NULL", col.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return q, nil
}

// Table returns the dead-letter table.
func (q *DLQ) Table() fluss.TablePath { return q.table }

// Schema returns the dead-letter table's schema.
func (q *DLQ) Schema() *fluss.Schema { return q.schema }

// Build fills out with the dead-letter row for rec, rejected by route for
// reason (use RecordError.Message). out.Op is fluss.WriteAppend, the bucket is the
// Kafka partition modulo the bucket count. The row aliases rec's key and
// value; see Converted.
func (q *DLQ) Build(rec *Record, route, reason string, out *Converted) {
	n := len(q.schema.Columns)
	out.reset(n)
	for i := range out.Row {
		out.Row[i] = fluss.Datum{Null: true}
	}
	out.Op = fluss.WriteAppend
	out.Partition = ""
	row := out.Row
	str := func(s string) fluss.Datum {
		b := out.arena.alloc(len(s))
		copy(b, s)
		return fluss.Datum{B: b}
	}
	if q.topic >= 0 {
		row[q.topic] = str(rec.Topic)
	}
	if q.partition >= 0 {
		row[q.partition] = fluss.Datum{I: int64(rec.Partition)}
	}
	if q.offset >= 0 {
		row[q.offset] = fluss.Datum{I: rec.Offset}
	}
	if q.timestamp >= 0 {
		t := &q.schema.Columns[q.timestamp].Type
		d := fluss.Datum{I: rec.Timestamp}
		if t.Root != fluss.TypeBigInt {
			d.I, d.N = truncTimestamp(rec.Timestamp, 0, t.Precision)
		}
		row[q.timestamp] = d
	}
	if q.key >= 0 {
		row[q.key] = fluss.Datum{B: rec.Key, Null: rec.Key == nil}
	}
	row[q.value] = fluss.Datum{B: rec.Value, Null: rec.Value == nil}
	if q.headers >= 0 {
		out.partBuf = appendHeadersJSON(out.partBuf[:0], rec.Headers)
		b := out.arena.alloc(len(out.partBuf))
		copy(b, out.partBuf)
		row[q.headers] = fluss.Datum{B: b}
	}
	if q.route >= 0 {
		row[q.route] = str(route)
	}
	row[q.reason] = str(reason)
	p := rec.Partition
	if p < 0 {
		p = 0
	}
	out.Bucket = p % int32(q.numBuckets)
}
