package mapping

import "github.com/fluss-kafka/gateway/fluss"

// Record is one Kafka record as the gateway hands it to the mapping. The
// gateway converts its decoded Kafka records into this type, so the mapping
// does not depend on the Kafka front's types.
//
// Key, Value and header values may alias the request buffer; the mapping
// never keeps them beyond the Convert call except through the row it fills
// (see Converted).
type Record struct {
	Topic     string
	Partition int32
	// Offset is the record's offset as the producer sent it (base offset +
	// delta; normally its position in the batch). The Fluss offset is only
	// known after the write, so this is what the offset metadata column and
	// the dead-letter row receive.
	Offset int64
	// Index is the record's position in its Kafka record batch, reported in
	// INVALID_RECORD's record_errors.
	Index int32
	// Timestamp is the record timestamp in epoch milliseconds.
	Timestamp int64
	// Key is nil for a record without a key; an empty non-nil slice is an
	// empty key.
	Key []byte
	// Value is nil for a tombstone (null value).
	Value   []byte
	Headers []Header
	// SerializedValue and SerializedKey are the value and key of a route
	// whose format is a schema-registry one (Converter.FramingOptions),
	// resolved by the caller; unused otherwise.
	SerializedValue, SerializedKey Serialized
}

// Header is one Kafka record header; a nil Value is a null header value.
type Header struct {
	Key   string
	Value []byte
}

// Converted is the result of converting one record. It is reusable: pass
// the same *Converted to many Convert calls to avoid allocations.
//
// Ownership: Row's BYTES/STRING datums and Key point into the record's Key
// and Value and into buffers owned by the Converted. They stay valid until
// the next Convert into the same Converted, or until the record's buffers
// are released, whichever comes first; encode the row into a batch before
// that. A Converted must not be used by two goroutines at once.
type Converted struct {
	// Op is fluss.WriteAppend for log tables, fluss.WriteUpsert or
	// fluss.WriteDelete for primary-key tables.
	Op fluss.WriteOp
	// Row holds one datum per table column, in column order. For a delete
	// only the primary-key (and partition) columns are set; the others
	// are null.
	Row fluss.Row
	// Key is the encoded primary key (primary-key tables only), as the KV
	// batch builder wants it; empty for log tables.
	Key []byte
	// Partition is the partition name ("" for unpartitioned tables).
	Partition string
	// Bucket is the Fluss bucket the row belongs to.
	Bucket int32

	arena     arena
	nested    nestedArena
	bucketKey []byte
	partBuf   []byte
	seen      []bool
}

// arena hands out byte slices that stay valid until reset: when it runs
// out of room it starts a new chunk instead of moving the old one, so
// earlier slices never dangle.
type arena struct{ buf []byte }

func (a *arena) reset() { a.buf = a.buf[:0] }

// alloc returns n bytes (len n, cap n).
func (a *arena) alloc(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, 2*cap(a.buf), 1024))
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start+n : start+n]
}

// shrink gives back the unused tail of the last alloc: b must be the last
// allocation, and used its prefix that is kept.
func (a *arena) shrink(b []byte, used int) []byte {
	a.buf = a.buf[:len(a.buf)-(len(b)-used)]
	return b[:used:used]
}

// nestedArena hands out the values of nested columns (ARRAY, MAP, ROW)
// that stay valid until reset, without an allocation per value once warm:
// like arena, a full chunk is left to the values that point into it and a
// new one is started.
type nestedArena struct {
	nested []fluss.Nested
	datums []fluss.Datum
}

func (a *nestedArena) reset() {
	clear(a.nested)
	clear(a.datums)
	a.nested, a.datums = a.nested[:0], a.datums[:0]
}

// newNested returns a zeroed Nested.
func (a *nestedArena) newNested() *fluss.Nested {
	if len(a.nested) == cap(a.nested) {
		a.nested = make([]fluss.Nested, 0, max(16, 2*cap(a.nested)))
	}
	a.nested = a.nested[:len(a.nested)+1]
	return &a.nested[len(a.nested)-1]
}

// datumSlice returns n zeroed datums (len n, cap n).
func (a *nestedArena) datumSlice(n int) []fluss.Datum {
	if cap(a.datums)-len(a.datums) < n {
		a.datums = make([]fluss.Datum, 0, max(n, 2*cap(a.datums), 64))
	}
	start := len(a.datums)
	a.datums = a.datums[:start+n]
	return a.datums[start : start+n : start+n]
}
