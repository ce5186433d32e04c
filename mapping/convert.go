package mapping

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fluss-kafka/gateway/fluss"
)

// Converter turns records of one route into rows of its table. It is
// immutable after construction (but for its pool of Rows) and safe for
// concurrent use; each goroutine passes its own *Converted.
type Converter struct {
	route  string
	table  fluss.TablePath
	schema *fluss.Schema
	pk     bool

	source    []colSource
	fromValue []bool // column is read from the JSON value
	isKeyCol  []bool // primary-key or partition column: set in deletes
	maxLen    []int  // CHAR(n)/BINARY(n) length limit, 0 = none

	valueFormat   ValueFormat
	valueCol      int
	valueTree     *jsonNode
	valueFraming  Framing
	valueDec      registryDecoder // registry formats
	rejectUnknown bool
	rejectMissing bool
	rejectEmpty   bool // value.empty_rows: reject
	valueCols     int  // how many columns are read from the value

	keyFormat  KeyFormat
	keyCol     int
	keyTree    *jsonNode
	keyFraming Framing
	keyDec     registryDecoder // registry formats

	meta      metaCols
	timeParts []timePart

	tombstoneDelete bool

	pkCols     []int
	physicalPK []string
	partCols   []int
	bucketKeys []string
	numBuckets int
	pkEnc      KeyEncoder
	bucketEnc  KeyEncoder
	bucketIsPK bool
	bucketFn   func([]byte, int) int32

	rows *rowsPool // conversion state between batches (GetRows, PutRows); shared by the converters of one Bind
}

type metaCols struct {
	key, headers, timestamp, partition, offset, topic int
}

type timePart struct {
	col    int
	format timeFormat
	loc    *time.Location
}

// Table returns the converter's table.
func (c *Converter) Table() fluss.TablePath { return c.table }

// Schema returns the table schema the rows follow. It must not be
// modified.
func (c *Converter) Schema() *fluss.Schema { return c.schema }

// HasPrimaryKey reports whether rows go to a primary-key (KV) table.
func (c *Converter) HasPrimaryKey() bool { return c.pk }

// Partitioned reports whether rows carry a partition name.
func (c *Converter) Partitioned() bool { return len(c.partCols) > 0 }

// NumBuckets is the table's bucket count (per partition).
func (c *Converter) NumBuckets() int { return c.numBuckets }

// Convert converts one record into out: the operation, the row, the
// encoded primary key (primary-key tables), the partition name and the
// bucket. A record that cannot be converted yields a *RecordError (it
// matches ErrInvalidRecord); out is then unspecified. See Converted for how
// long the row's bytes stay valid. Bucket choice: tables with a bucket key
// (every primary-key table) hash the row's bucket key as Fluss does; other
// log tables keep the Kafka partition, modulo the bucket count.
func (c *Converter) Convert(rec *Record, out *Converted) error {
	n := len(c.schema.Columns)
	out.reset(n)
	row, seen := out.Row, out.seen

	tombstone := rec.Value == nil
	if !tombstone && c.valueFormat == ValueConnectJSON {
		s := jsonScanner{data: rec.Value}
		null, col, reason := c.walkEnvelope(&s, out)
		if reason != "" {
			return c.recordError(rec, col, "value: "+reason)
		}
		tombstone = null
	}
	if tombstone {
		if !c.tombstoneDelete {
			if c.pk {
				return c.recordError(rec, "", "null value (tombstone) rejected by the route's tombstone policy")
			}
			return c.recordError(rec, "", "null value (tombstone) cannot be written to a log table")
		}
		out.Op = fluss.WriteDelete
	} else {
		out.Op = fluss.WriteAppend
		if c.pk {
			out.Op = fluss.WriteUpsert
		}
		switch c.valueFormat {
		case ValueRaw:
			row[c.valueCol] = fluss.Datum{B: rec.Value}
			seen[c.valueCol] = true
		case ValueString:
			if !utf8.Valid(rec.Value) {
				return c.recordError(rec, c.colName(c.valueCol), "value is not valid UTF-8")
			}
			row[c.valueCol] = fluss.Datum{B: rec.Value}
			seen[c.valueCol] = true
		case ValueJSON:
			s := jsonScanner{data: rec.Value}
			if col, reason := c.walkDocument(&s, c.valueTree, c.rejectUnknown, out); reason != "" {
				return c.recordError(rec, col, "value: "+reason)
			}
		case ValueAvro, ValueProtobuf, ValueJSONSchema:
			if col, reason := c.decodeSerialized(c.valueDec, &rec.SerializedValue, out); reason != "" {
				return c.recordError(rec, col, "value: "+reason)
			}
		}
	}

	switch c.keyFormat {
	case KeyRaw, KeyString:
		if rec.Key != nil {
			d := fluss.Datum{B: rec.Key}
			if c.keyFormat == KeyString {
				var reason string
				if d, reason = textDatum(&c.schema.Columns[c.keyCol].Type, rec.Key, &out.arena); reason != "" {
					return c.recordError(rec, c.colName(c.keyCol), "key: "+reason)
				}
			}
			row[c.keyCol] = d
			seen[c.keyCol] = true
		}
	case KeyJSON:
		if rec.Key == nil {
			return c.recordError(rec, "", "record has no key, but the route reads the key as JSON")
		}
		s := jsonScanner{data: rec.Key}
		if col, reason := c.walkDocument(&s, c.keyTree, false, out); reason != "" {
			return c.recordError(rec, col, "key: "+reason)
		}
	case KeyAvro, KeyProtobuf, KeyJSONSchema:
		if rec.Key == nil {
			return c.recordError(rec, "", "record has no key, but the route reads the key as "+string(c.keyFormat))
		}
		if col, reason := c.decodeSerialized(c.keyDec, &rec.SerializedKey, out); reason != "" {
			return c.recordError(rec, col, "key: "+reason)
		}
	}

	// Checked after the key, whose errors say more.
	if !tombstone && c.rejectEmpty && c.valueCols > 0 && !c.filledFromValue(out) {
		return c.recordError(rec, "", c.emptyValueReason(rec))
	}
	if reason := c.fillMetadata(rec, out); reason != "" {
		return c.recordError(rec, "", reason)
	}
	for _, tp := range c.timeParts {
		buf := tp.format.appendTime(out.partBuf[:0], rec.Timestamp, tp.loc)
		out.partBuf = buf
		b := out.arena.alloc(len(buf))
		copy(b, buf)
		row[tp.col] = fluss.Datum{B: b}
		seen[tp.col] = true
	}

	// Columns nobody filled, and length limits.
	for i := range row {
		if seen[i] {
			if row[i].Null {
				if c.isKeyCol[i] {
					return c.recordError(rec, c.colName(i), "primary key or partition column is null")
				}
				continue
			}
			if c.maxLen[i] > 0 {
				if reason := c.checkLength(i, row[i].B); reason != "" {
					return c.recordError(rec, c.colName(i), reason)
				}
			}
			continue
		}
		row[i] = fluss.Datum{Null: true}
		switch {
		case out.Op == fluss.WriteDelete && c.isKeyCol[i]:
			return c.recordError(rec, c.colName(i), "tombstone: primary key or partition column has no value (the key does not fill it)")
		case out.Op == fluss.WriteDelete:
		case c.isKeyCol[i]:
			return c.recordError(rec, c.colName(i), "primary key or partition column has no value")
		case c.fromValue[i] && c.rejectMissing:
			return c.recordError(rec, c.colName(i), "field missing from the value (missing_fields: reject)")
		case c.schema.Columns[i].Type.NotNull:
			return c.recordError(rec, c.colName(i), "no value for a NOT NULL column")
		}
	}

	if len(c.partCols) > 0 {
		if col, reason := c.partitionName(out); reason != "" {
			return c.recordError(rec, col, reason)
		}
	} else {
		out.Partition = ""
	}

	var err error
	if c.pk {
		if out.Key, err = c.pkEnc.Encode(out.Key[:0], row); err != nil {
			return c.recordError(rec, "", "encode primary key: "+err.Error())
		}
	}
	switch {
	case c.bucketIsPK:
		out.Bucket = c.bucketFn(out.Key, c.numBuckets)
	case c.bucketEnc != nil:
		if out.bucketKey, err = c.bucketEnc.Encode(out.bucketKey[:0], row); err != nil {
			return c.recordError(rec, "", "encode bucket key: "+err.Error())
		}
		out.Bucket = c.bucketFn(out.bucketKey, c.numBuckets)
	default:
		if rec.Partition < 0 {
			return c.recordError(rec, "", "negative Kafka partition")
		}
		out.Bucket = rec.Partition % int32(c.numBuckets)
	}
	return nil
}

// Rebucket chooses out's bucket again for a partition of n buckets (Fluss
// 1.0: a partition keeps the bucket count its table had when the partition
// was created, so it may differ from NumBuckets). The rule is Convert's:
// the bucket key (or primary key) decides; without one the Kafka partition
// modulo n.
func (c *Converter) Rebucket(out *Converted, kafkaPartition int32, n int) {
	if n <= 0 {
		return
	}
	switch {
	case c.bucketIsPK:
		out.Bucket = c.bucketFn(out.Key, n)
	case c.bucketEnc != nil:
		out.Bucket = c.bucketFn(out.bucketKey, n)
	default:
		out.Bucket = kafkaPartition % int32(n)
	}
}

// reset prepares out for a row of n columns.
func (out *Converted) reset(n int) {
	if cap(out.Row) < n {
		out.Row = make(fluss.Row, n)
		out.seen = make([]bool, n)
	}
	out.Row = out.Row[:n]
	out.seen = out.seen[:n]
	clear(out.Row)
	clear(out.seen)
	out.Key = out.Key[:0]
	out.arena.reset()
	out.nested.reset()
	out.Bucket = 0
}

func (c *Converter) colName(i int) string { return c.schema.Columns[i].Name }

// checkLength enforces CHAR(n) (characters) and BINARY(n) (bytes).
func (c *Converter) checkLength(i int, b []byte) string {
	t := &c.schema.Columns[i].Type
	n := len(b)
	if t.Root == fluss.TypeChar {
		n = utf8.RuneCount(b)
	}
	if n > c.maxLen[i] {
		return "value of length " + strconv.Itoa(n) + " is longer than " + t.String()
	}
	return ""
}

func (c *Converter) recordError(rec *Record, column, reason string) error {
	return &RecordError{Route: c.route, Index: rec.Index, Column: column, Reason: reason}
}

// walkDocument reads a JSON document that must be one object, filling the
// columns of tree. It returns the column concerned and a reason on failure.
func (c *Converter) walkDocument(s *jsonScanner, tree *jsonNode, rejectUnknown bool, out *Converted) (string, string) {
	if s.peek() != '{' {
		if s.pos >= len(s.data) {
			return "", "empty, not a JSON object"
		}
		// Tell bad JSON apart from JSON that is not an object.
		if _, reason := s.value(0); reason != "" {
			return "", reason
		}
		return "", "not a JSON object"
	}
	if col, reason := c.walkObject(s, tree, 0, rejectUnknown, out); reason != "" {
		return col, reason
	}
	if s.peek() != 0 {
		return "", s.syntaxError("data after the JSON object")
	}
	return "", ""
}

func (c *Converter) walkObject(s *jsonScanner, node *jsonNode, depth int, rejectUnknown bool, out *Converted) (string, string) {
	if depth >= maxJSONDepth {
		return "", s.syntaxError("nested too deeply")
	}
	s.pos++ // '{'
	if s.peek() == '}' {
		s.pos++
		return "", ""
	}
	for {
		if s.peek() != '"' {
			return "", s.syntaxError("expected a field name")
		}
		name, escaped, reason := s.str()
		if reason != "" {
			return "", reason
		}
		if escaped {
			buf := out.arena.alloc(len(name))
			name = out.arena.shrink(buf, len(unescape(buf, name)))
		}
		if s.peek() != ':' {
			return "", s.syntaxError("expected ':'")
		}
		s.pos++
		f := node.fields[string(name)]
		switch {
		case f == nil:
			if rejectUnknown {
				return "", "unknown field " + quoteShort(name) + " (unknown_fields: reject)"
			}
			if _, reason := s.value(depth + 1); reason != "" {
				return "", reason
			}
		case f.child != nil && s.peek() == '{':
			start := s.pos
			if col, reason := c.walkObject(s, f.child, depth+1, rejectUnknown, out); reason != "" {
				return col, reason
			}
			if len(f.cols) > 0 {
				v := jsonValue{kind: jsonObject, raw: s.data[start:s.pos]}
				if col, reason := c.assign(f.cols, v, rejectUnknown, out); reason != "" {
					return col, reason
				}
			}
		default:
			v, reason := s.value(depth + 1)
			if reason != "" {
				return "", reason
			}
			if col, reason := c.assign(f.cols, v, rejectUnknown, out); reason != "" {
				return col, reason
			}
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return "", ""
		default:
			return "", s.syntaxError("expected ',' or '}'")
		}
	}
}

func (c *Converter) assign(cols []int, v jsonValue, rejectUnknown bool, out *Converted) (string, string) {
	for _, i := range cols {
		t := &c.schema.Columns[i].Type
		var d fluss.Datum
		var reason string
		if t.IsNested() {
			d, reason = jsonNestedDatum(t, v, out, 1, rejectUnknown)
		} else {
			d, reason = jsonDatum(t, v, &out.arena)
		}
		if reason != "" {
			return c.colName(i), reason
		}
		if d.Null && t.NotNull {
			return c.colName(i), "null for a NOT NULL column"
		}
		out.Row[i] = d
		out.seen[i] = true
	}
	return "", ""
}

// fillMetadata sets the metadata columns from the record.
func (c *Converter) fillMetadata(rec *Record, out *Converted) string {
	row, seen := out.Row, out.seen
	m := c.meta
	if m.key >= 0 {
		d := fluss.Datum{B: rec.Key, Null: rec.Key == nil}
		if !d.Null {
			if r := c.schema.Columns[m.key].Type.Root; (r == fluss.TypeString || r == fluss.TypeChar) && !utf8.Valid(rec.Key) {
				return "key is not valid UTF-8 but metadata.key column " + quoteShort([]byte(c.colName(m.key))) + " is a string"
			}
		}
		row[m.key], seen[m.key] = d, !d.Null
	}
	if m.headers >= 0 {
		out.partBuf = appendHeadersJSON(out.partBuf[:0], rec.Headers)
		b := out.arena.alloc(len(out.partBuf))
		copy(b, out.partBuf)
		row[m.headers], seen[m.headers] = fluss.Datum{B: b}, true
	}
	if m.timestamp >= 0 {
		t := &c.schema.Columns[m.timestamp].Type
		d := fluss.Datum{I: rec.Timestamp}
		if t.Root != fluss.TypeBigInt {
			d.I, d.N = truncTimestamp(rec.Timestamp, 0, t.Precision)
		}
		row[m.timestamp], seen[m.timestamp] = d, true
	}
	if m.partition >= 0 {
		row[m.partition], seen[m.partition] = fluss.Datum{I: int64(rec.Partition)}, true
	}
	if m.offset >= 0 {
		row[m.offset], seen[m.offset] = fluss.Datum{I: rec.Offset}, true
	}
	if m.topic >= 0 {
		b := out.arena.alloc(len(rec.Topic))
		copy(b, rec.Topic)
		row[m.topic], seen[m.topic] = fluss.Datum{B: b}, true
	}
	return ""
}

// partitionName renders the partition columns into out.Partition, reusing
// the previous string when the name did not change.
func (c *Converter) partitionName(out *Converted) (string, string) {
	buf := out.partBuf[:0]
	for k, i := range c.partCols {
		d := out.Row[i]
		if d.Null {
			return c.colName(i), "partition column is null"
		}
		if k > 0 {
			buf = append(buf, '$')
		}
		start := len(buf)
		buf = appendPartitionValue(buf, d, c.schema.Columns[i].Type.Root)
		if !validPartitionValue(buf[start:]) {
			out.partBuf = buf
			return c.colName(i), "partition value " + quoteShort(buf[start:]) + " is not 1 to 200 characters of letters, digits, '_' and '-' (not starting with \"__\")"
		}
	}
	out.partBuf = buf
	if string(buf) != out.Partition {
		out.Partition = string(buf)
	}
	return "", ""
}

// appendHeadersJSON renders headers as a JSON object of strings; a null
// header value is JSON null, invalid UTF-8 becomes U+FFFD. Repeated header
// keys are kept, in order.
func appendHeadersJSON(dst []byte, hs []Header) []byte {
	dst = append(dst, '{')
	for i, h := range hs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, []byte(h.Key))
		dst = append(dst, ':')
		if h.Value == nil {
			dst = append(dst, "null"...)
		} else {
			dst = appendJSONString(dst, h.Value)
		}
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
