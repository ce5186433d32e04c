package mapping

import (
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fluss-kafka/gateway/fluss"
)

// Reading a record: the plan's run methods drive the walker over the
// binary datum.

func (p *avroPlan) run(r *avroReader, out *Converted) string {
	if p.root != nil {
		return p.root.run(r, out, 0)
	}
	start := r.pos
	for _, c := range p.whole {
		r.pos = start
		out.Row[c.col] = r.value(c.conv, out, 0)
		out.seen[c.col] = true
		if r.err != "" {
			return c.name
		}
	}
	return ""
}

func (p *avroRecordPlan) run(r *avroReader, out *Converted, depth int) string {
	for i := range p.fields {
		f := &p.fields[i]
		if f.child == nil {
			switch len(f.cols) {
			case 0:
				r.skip(f.skip, depth+1)
				if r.err != "" {
					r.at(f.name)
					return ""
				}
				continue
			case 1:
				c := &f.cols[0]
				out.Row[c.col] = r.value(c.conv, out, depth+1)
				out.seen[c.col] = true
				if r.err != "" {
					r.at(f.name)
					return c.name
				}
				continue
			}
		}
		start := r.pos
		for j := range f.cols {
			c := &f.cols[j]
			r.pos = start
			out.Row[c.col] = r.value(c.conv, out, depth+1)
			out.seen[c.col] = true
			if r.err != "" {
				r.at(f.name)
				return c.name
			}
		}
		if f.child != nil {
			r.pos = start
			if col := f.child.run(r, out, depth+1); r.err != "" {
				r.at(f.name)
				return col
			}
		}
	}
	return ""
}

func (d *avroDescend) run(r *avroReader, out *Converted, depth int) string {
	if depth > maxAvroDepth {
		r.fail("nested too deeply")
		return ""
	}
	if d.rec != nil {
		return d.rec.run(r, out, depth)
	}
	b := r.branch(len(d.branches))
	if r.err != "" {
		return ""
	}
	if p := d.branches[b]; p != nil {
		return p.run(r, out, depth)
	}
	r.skip(d.skips[b], depth+1)
	return ""
}

// The walker.

// avroReader reads a binary Avro datum. Errors are sticky: the first one
// is kept, and reads after it return zero values.
type avroReader struct {
	buf  []byte
	pos  int
	err  string
	path string // the field path of err, innermost last
	// zeroLeft is how many more array items that take no bytes may be
	// decoded.
	zeroLeft int
}

const errAvroTruncated = "truncated"

func (r *avroReader) fail(reason string) {
	if r.err == "" {
		r.err = reason
	}
}

// at records that the error happened inside field name.
func (r *avroReader) at(name string) {
	if r.path == "" {
		r.path = name
	} else {
		r.path = name + "." + r.path
	}
}

func (r *avroReader) long() int64 {
	if r.pos < len(r.buf) {
		if b := r.buf[r.pos]; b < 0x80 {
			r.pos++
			return int64(b>>1) ^ -int64(b&1)
		}
	}
	return r.longSlow()
}

func (r *avroReader) longSlow() int64 {
	var v uint64
	for i := range 10 {
		if r.pos >= len(r.buf) {
			r.fail(errAvroTruncated)
			return 0
		}
		b := r.buf[r.pos]
		r.pos++
		if i == 9 && b > 1 {
			r.fail("varint overflows a long")
			return 0
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(v>>1) ^ -int64(v&1)
		}
	}
	r.fail("varint overflows a long")
	return 0
}

func (r *avroReader) int() int64 {
	v := r.long()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("int " + strconv.FormatInt(v, 10) + " out of range")
		return 0
	}
	return v
}

// bytes reads a length-prefixed bytes or string value, aliasing the buffer.
func (r *avroReader) bytes() []byte {
	n := r.long()
	if r.err != "" {
		return nil
	}
	if n < 0 {
		r.fail("negative length " + strconv.FormatInt(n, 10))
		return nil
	}
	if n > int64(len(r.buf)-r.pos) {
		r.fail("length " + strconv.FormatInt(n, 10) + " runs past the end of the datum")
		return nil
	}
	b := r.buf[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return b
}

func (r *avroReader) fixed(n int) []byte {
	if n > len(r.buf)-r.pos {
		r.fail(errAvroTruncated)
		r.pos = len(r.buf)
		return nil
	}
	b := r.buf[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b
}

// branch reads a union branch index below n.
func (r *avroReader) branch(n int) int {
	b := r.long()
	if r.err != "" {
		return 0
	}
	if b < 0 || b >= int64(n) {
		r.fail("union branch " + strconv.FormatInt(b, 10) + " out of range (the union has " + strconv.Itoa(n) + ")")
		return 0
	}
	return int(b)
}

// blockCount reads an array or map block header: the item count (0 at the
// end) and, for a negative count, the block's byte size (else -1). Items
// of type item follow, perItem bytes more each (map keys). Counts are
// capped by the bytes left, or, for items that take no bytes, by zeroLeft.
func (r *avroReader) blockCount(item *avroType, perItem, zeroLeft int) (int, int64) {
	n := r.long()
	if r.err != "" || n == 0 {
		return 0, -1
	}
	size := int64(-1)
	if n < 0 {
		if n == math.MinInt64 {
			r.fail("bad block count")
			return 0, -1
		}
		n = -n
		size = r.long()
		if r.err != "" {
			return 0, -1
		}
		if size < 0 || size > int64(len(r.buf)-r.pos) {
			r.fail("block size " + strconv.FormatInt(size, 10) + " does not fit the datum")
			return 0, -1
		}
	}
	if item.zeroWidth && perItem == 0 {
		if n > int64(zeroLeft) {
			r.fail("block count " + strconv.FormatInt(n, 10) + " too large")
			return 0, -1
		}
	} else if n > int64(len(r.buf)-r.pos)/int64(max(item.minSize+perItem, 1)) {
		r.fail("block count " + strconv.FormatInt(n, 10) + " exceeds the bytes left")
		return 0, -1
	}
	return int(n), size
}

// items reserves room for n more items in a slice that holds have,
// growing geometrically so that many small blocks cost linear space.
func (r *avroReader) items(out *Converted, s []fluss.Datum, have, n int) []fluss.Datum {
	if have+n <= cap(s) {
		return s[:have+n]
	}
	grown := out.nested.datumSlice(max(have+n, 2*cap(s)))
	copy(grown, s[:have])
	return grown[:have+n]
}

// countZero counts decoded items that take no bytes: their number is not
// limited by the payload size, so it is by zeroLeft.
func (r *avroReader) countZero(item *avroType, perItem, n int) {
	if item.zeroWidth && perItem == 0 {
		r.zeroLeft -= n
	}
}

// skip reads past one value of type t.
func (r *avroReader) skip(t *avroType, depth int) {
	if r.err != "" {
		return
	}
	switch t.kind {
	case akNull:
	case akBoolean:
		r.fixed(1)
	case akInt, akLong, akEnum:
		r.long()
	case akFloat:
		r.fixed(4)
	case akDouble:
		r.fixed(8)
	case akBytes, akString:
		r.bytes()
	case akFixed:
		r.fixed(t.size)
	case akRecord:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return
		}
		for _, f := range t.fields {
			r.skip(f, depth+1)
			if r.err != "" {
				return
			}
		}
	case akUnion:
		b := r.branch(len(t.branches))
		if r.err != "" {
			return
		}
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return
		}
		r.skip(t.branches[b], depth+1)
	case akArray, akMap:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return
		}
		perItem := 0
		if t.kind == akMap {
			perItem = 1
		}
		for {
			n, size := r.blockCount(t.items, perItem, math.MaxInt)
			if r.err != "" || n == 0 {
				return
			}
			if size >= 0 {
				r.pos += int(size)
				continue
			}
			if t.items.zeroWidth && perItem == 0 {
				continue
			}
			for range n {
				if perItem > 0 {
					r.bytes()
				}
				r.skip(t.items, depth+1)
				if r.err != "" {
					return
				}
			}
		}
	}
}

var nullDatum = fluss.Datum{Null: true}

// value reads one value with conversion c.
func (r *avroReader) value(c *avroConv, out *Converted, depth int) fluss.Datum {
	switch c.op {
	case opNull:
		return nullDatum
	case opBool:
		b := r.fixed(1)
		if len(b) == 0 {
			return fluss.Datum{}
		}
		if b[0] > 1 {
			r.fail("invalid boolean byte " + strconv.Itoa(int(b[0])))
		}
		return fluss.Datum{I: int64(b[0])}
	case opInt:
		v := r.int()
		if v < c.lo || v > c.hi {
			r.fail("int " + strconv.FormatInt(v, 10) + " is out of range for " + c.target.String())
		}
		return fluss.Datum{I: v}
	case opLong:
		return fluss.Datum{I: r.long()}
	case opFloat:
		b := r.fixed(4)
		if len(b) == 0 {
			return fluss.Datum{}
		}
		return fluss.Datum{F: float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))}
	case opDouble:
		b := r.fixed(8)
		if len(b) == 0 {
			return fluss.Datum{}
		}
		return fluss.Datum{F: math.Float64frombits(binary.LittleEndian.Uint64(b))}
	case opString:
		b := r.bytes()
		if !utf8.Valid(b) {
			r.fail("string is not valid UTF-8")
		}
		if c.maxLen > 0 {
			r.checkLen(c, b)
		}
		return fluss.Datum{B: b}
	case opBytes:
		b := r.bytes()
		if c.maxLen > 0 {
			r.checkLen(c, b)
		}
		return fluss.Datum{B: b}
	case opFixed:
		return fluss.Datum{B: r.fixed(c.size)}
	case opEnum:
		i := r.int()
		if r.err != "" {
			return fluss.Datum{}
		}
		if i < 0 || i >= int64(len(c.symbols)) {
			r.fail("enum index " + strconv.FormatInt(i, 10) + " out of range")
			return fluss.Datum{}
		}
		b := c.symbols[i]
		if c.maxLen > 0 {
			r.checkLen(c, b)
		}
		return fluss.Datum{B: b}
	case opDecimalBytes, opDecimalFixed:
		var raw []byte
		if c.op == opDecimalBytes {
			raw = r.bytes()
		} else {
			raw = r.fixed(c.size)
		}
		if r.err != "" {
			return fluss.Datum{}
		}
		d, reason := avroDecimal(raw, c, &out.arena)
		if reason != "" {
			r.fail(reason)
		}
		return d
	case opTimeMillis:
		v := r.int()
		if v < 0 || v >= 86_400_000 {
			r.fail("time-millis " + strconv.FormatInt(v, 10) + " is not a time of day")
		}
		return fluss.Datum{I: truncMillis(v, c.prec)}
	case opTimeMicros:
		v := r.long()
		if v < 0 || v >= 86_400_000_000 {
			r.fail("time-micros " + strconv.FormatInt(v, 10) + " is not a time of day")
		}
		return fluss.Datum{I: truncMillis(v/1000, c.prec)}
	case opTimestampMillis:
		ms, n := truncTimestamp(r.long(), 0, c.prec)
		return fluss.Datum{I: ms, N: n}
	case opTimestampMicros:
		v := r.long()
		ms, n := truncTimestamp(floorDiv(v, 1000), int32(floorMod(v, 1000)*1000), c.prec)
		return fluss.Datum{I: ms, N: n}
	case opTimestampNanos:
		v := r.long()
		ms, n := truncTimestamp(floorDiv(v, 1_000_000), int32(floorMod(v, 1_000_000)), c.prec)
		return fluss.Datum{I: ms, N: n}
	case opUnion:
		b := r.branch(len(c.branches))
		if r.err != "" {
			return fluss.Datum{}
		}
		bc := c.branches[b]
		if bc == nil {
			r.fail(c.reasons[b])
			return fluss.Datum{}
		}
		return r.value(bc, out, depth)
	case opRow:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return fluss.Datum{}
		}
		fields := out.nested.datumSlice(c.nFields)
		for i := range fields {
			fields[i].Null = true
		}
		for i := range c.fields {
			f := &c.fields[i]
			if f.conv == nil {
				r.skip(f.skip, depth+1)
			} else {
				fields[f.idx] = r.value(f.conv, out, depth+1)
			}
			if r.err != "" {
				r.at(f.name)
				return fluss.Datum{}
			}
		}
		n := out.nested.newNested()
		n.Fields = fields
		return fluss.Datum{Nested: n}
	case opArray:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return fluss.Datum{}
		}
		var elems []fluss.Datum
		have := 0
		for {
			n, _ := r.blockCount(c.elem.w, 0, r.zeroLeft)
			if r.err != "" {
				return fluss.Datum{}
			}
			if n == 0 {
				break
			}
			r.countZero(c.elem.w, 0, n)
			elems = r.items(out, elems, have, n)
			for ; have < len(elems); have++ {
				elems[have] = r.value(c.elem, out, depth+1)
				if r.err != "" {
					return fluss.Datum{}
				}
			}
		}
		n := out.nested.newNested()
		n.Elems = elems
		return fluss.Datum{Nested: n}
	case opMap:
		if depth > maxAvroDepth {
			r.fail("nested too deeply")
			return fluss.Datum{}
		}
		var keys, vals []fluss.Datum
		have := 0
		for {
			n, _ := r.blockCount(c.elem.w, 1, 0)
			if r.err != "" {
				return fluss.Datum{}
			}
			if n == 0 {
				break
			}
			keys, vals = r.items(out, keys, have, n), r.items(out, vals, have, n)
			for ; have < len(keys); have++ {
				keys[have] = r.value(c.key, out, depth+1)
				vals[have] = r.value(c.elem, out, depth+1)
				if r.err != "" {
					return fluss.Datum{}
				}
			}
		}
		n := out.nested.newNested()
		n.Keys, n.Values = keys, vals
		return fluss.Datum{Nested: n}
	}
	r.fail("unsupported conversion")
	return fluss.Datum{}
}

// checkLen enforces CHAR(n)/BINARY(n) inside nested values.
func (r *avroReader) checkLen(c *avroConv, b []byte) {
	n := len(b)
	if c.charLen {
		n = utf8.RuneCount(b)
	}
	if n > c.maxLen {
		r.fail("value of length " + strconv.Itoa(n) + " is longer than " + strconv.Itoa(c.maxLen))
	}
}

var pow10i = [...]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// avroDecimal converts an Avro decimal (big-endian two's complement
// unscaled value at the writer's scale) into a DECIMAL(p, s) datum: I for
// p <= 18, else the minimal two's complement bytes. A scale change must be
// exact.
func avroDecimal(raw []byte, c *avroConv, a *arena) (fluss.Datum, string) {
	if len(raw) <= 8 {
		var v int64
		if len(raw) > 0 {
			v = int64(int8(raw[0]))
			for _, b := range raw[1:] {
				v = v<<8 | int64(b)
			}
		}
		if u, exact, ok := rescaleInt64(v, c.wScale, c.scale); ok {
			if !exact {
				return fluss.Datum{}, decimalInexact(big.NewInt(v), c)
			}
			mag := uint64(u)
			if u < 0 {
				mag = uint64(-u)
			}
			if c.precision <= 18 {
				if mag >= uint64(pow10i[c.precision]) {
					return fluss.Datum{}, decimalOverflow(big.NewInt(v), c)
				}
				return fluss.Datum{I: u}, ""
			}
			if c.wScale == c.scale && len(raw) > 0 {
				return fluss.Datum{B: minimalTwos(raw)}, ""
			}
			var buf [8]byte
			binary.BigEndian.PutUint64(buf[:], uint64(u))
			m := minimalTwos(buf[:])
			b := a.alloc(len(m))
			copy(b, m)
			return fluss.Datum{B: b}, ""
		}
	}
	if len(raw) > maxAvroDecimalBytes {
		return fluss.Datum{}, "decimal of " + strconv.Itoa(len(raw)) + " bytes is too large"
	}
	var n big.Int
	n.SetBytes(raw)
	if raw[0]&0x80 != 0 {
		n.Sub(&n, new(big.Int).Lsh(big.NewInt(1), uint(len(raw))*8))
	}
	orig := new(big.Int).Set(&n)
	switch {
	case c.scale > c.wScale:
		n.Mul(&n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.scale-c.wScale)), nil))
	case c.scale < c.wScale:
		var m big.Int
		n.QuoRem(&n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.wScale-c.scale)), nil), &m)
		if m.Sign() != 0 {
			return fluss.Datum{}, decimalInexact(orig, c)
		}
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.precision)), nil)
	if n.CmpAbs(limit) >= 0 {
		return fluss.Datum{}, decimalOverflow(orig, c)
	}
	if c.precision <= 18 {
		return fluss.Datum{I: n.Int64()}, ""
	}
	return fluss.Datum{B: twosComplement(&n)}, ""
}

// rescaleInt64 moves v from scale ws to s: ok false when int64 is too
// small for it, exact false when digits would be lost.
func rescaleInt64(v int64, ws, s int) (u int64, exact, ok bool) {
	switch {
	case s == ws:
		return v, true, true
	case s > ws:
		d := s - ws
		if d >= len(pow10i) {
			return 0, true, v == 0
		}
		m := pow10i[d]
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return 0, true, false
		}
		return v * m, true, true
	default:
		d := ws - s
		if d >= len(pow10i) {
			return 0, v == 0, true
		}
		m := pow10i[d]
		if v%m != 0 {
			return 0, false, true
		}
		return v / m, true, true
	}
}

// minimalTwos drops redundant sign bytes, as Java's BigInteger.toByteArray.
func minimalTwos(b []byte) []byte {
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	return b
}

func decimalText(unscaled *big.Int, scale int) string {
	s := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if unscaled.Sign() < 0 {
		s = "-" + s
	}
	return s
}

func decimalOverflow(unscaled *big.Int, c *avroConv) string {
	return "decimal " + decimalText(unscaled, c.wScale) + " does not fit DECIMAL(" + strconv.Itoa(c.precision) + ", " + strconv.Itoa(c.scale) + ")"
}

func decimalInexact(unscaled *big.Int, c *avroConv) string {
	return "decimal " + decimalText(unscaled, c.wScale) + " has more than " + strconv.Itoa(c.scale) + " fraction digits (DECIMAL(" +
		strconv.Itoa(c.precision) + ", " + strconv.Itoa(c.scale) + "))"
}
