package mapping

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fluss-kafka/gateway/fluss"
)

// Decoding: one walk over a record's wire format, driven by its plan.

type pbRaw struct {
	u uint64
	b []byte
}

type pbRun struct {
	out *Converted
}

// defaults gives the columns of m's implicit-presence fields that the
// message did not carry their defaults.
func (r *pbRun) defaults(m *pbMessage, dst []fluss.Datum, seen []bool) {
	for _, p := range m.defaults {
		if !seen[p.slot] {
			dst[p.slot], seen[p.slot] = p.d, true
		}
	}
}

func pbWireError(what string, off, n int) string {
	return "malformed protobuf " + what + " at byte " + strconv.Itoa(off) + ": " + protowire.ParseError(n).Error()
}

func pbWireTypeError(path, name string, got, want protowire.Type) string {
	return "field " + strconv.Quote(path+name) + " has wire type " + strconv.Itoa(int(got)) + ", want " + strconv.Itoa(int(want))
}

// message decodes one message of plan m into dst (columns when seen is
// non-nil, ROW fields otherwise). On failure it returns the slot
// concerned (or -1) and the reason.
func (r *pbRun) message(b []byte, m *pbMessage, dst []fluss.Datum, seen []bool) (int, string) {
	var done uint64
	var doneMore []uint64
	if m.nRep > 64 {
		doneMore = make([]uint64, (m.nRep+63)/64)
	}
	for i := 0; i < len(b); {
		start := i
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return -1, pbWireError("tag", i, n)
		}
		i += n
		fi := m.lookup(num)
		if fi <= 0 {
			if m.reject {
				if fi < 0 {
					what := " is read by no column"
					if m.initial != nil {
						what = " is not a field of the ROW type"
					}
					return -1, "field " + strconv.Quote(m.path+string(m.desc.Fields().ByNumber(num).Name())) + what + " (unknown_fields: reject)"
				}
				return -1, "unknown field number " + strconv.Itoa(int(num)) + " in " + string(m.desc.FullName()) + " (unknown_fields: reject)"
			}
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return -1, pbWireError("field "+strconv.Itoa(int(num)), i, n)
			}
			i += n
			continue
		}
		f := &m.fields[fi-1]
		if f.rep >= 0 {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return f.errSlot, pbWireError("field "+strconv.Quote(m.path+f.name), i, n)
			}
			i += n
			if doneMore != nil {
				w, bit := f.rep/64, uint64(1)<<(f.rep%64)
				if doneMore[w]&bit != 0 {
					continue
				}
				doneMore[w] |= bit
			} else {
				bit := uint64(1) << f.rep
				if done&bit != 0 {
					continue
				}
				done |= bit
			}
			// First occurrence: read every value of the field from here on.
			for _, tg := range f.targets {
				d, reason, other := r.collect(b[start:], m.path, f, tg.conv)
				if reason != "" {
					if other {
						return -1, reason
					}
					return tg.slot, reason
				}
				dst[tg.slot] = d
				if seen != nil {
					seen[tg.slot] = true
				}
			}
			continue
		}
		if typ != f.wire {
			return f.errSlot, pbWireTypeError(m.path, f.name, typ, f.wire)
		}
		raw, n := pbConsume(b[i:], typ)
		if n < 0 {
			return f.errSlot, pbWireError("field "+strconv.Quote(m.path+f.name), i, n)
		}
		i += n
		for _, tg := range f.targets {
			merge := seen == nil || seen[tg.slot]
			if reason := r.value(tg.conv, raw, &dst[tg.slot], merge); reason != "" {
				return tg.slot, reason
			}
			if seen != nil {
				seen[tg.slot] = true
			}
		}
		if f.child != nil {
			if slot, reason := r.message(raw.b, f.child, dst, seen); reason != "" {
				return slot, reason
			}
			r.defaults(f.child, dst, seen)
		}
	}
	return -1, ""
}

func pbConsume(b []byte, typ protowire.Type) (pbRaw, int) {
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		return pbRaw{u: v}, n
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(b)
		return pbRaw{u: uint64(v)}, n
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(b)
		return pbRaw{u: v}, n
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		return pbRaw{b: v}, n
	}
	return pbRaw{}, -1
}

// pbCount counts the values of repeated field f in b (which starts at its
// first tag), checking the wire format; other is set when the problem is
// in another field.
func pbCount(b []byte, path string, f *pbField) (count int, reason string, other bool) {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return 0, pbWireError("tag", i, n), true
		}
		i += n
		if num != f.num {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return 0, pbWireError("field "+strconv.Itoa(int(num)), i, n), true
			}
			i += n
			continue
		}
		switch {
		case typ == protowire.BytesType && f.packable:
			p, n := protowire.ConsumeBytes(b[i:])
			if n < 0 {
				return 0, pbWireError("field "+strconv.Quote(path+f.name), i, n), false
			}
			i += n
			switch f.wire {
			case protowire.VarintType:
				for _, c := range p {
					if c < 0x80 {
						count++
					}
				}
				if len(p) > 0 && p[len(p)-1] >= 0x80 {
					return 0, "malformed protobuf: packed field " + strconv.Quote(path+f.name) + " ends inside a varint", false
				}
			case protowire.Fixed32Type, protowire.Fixed64Type:
				size := 4
				if f.wire == protowire.Fixed64Type {
					size = 8
				}
				if len(p)%size != 0 {
					return 0, "malformed protobuf: packed field " + strconv.Quote(path+f.name) + " is not a whole number of values", false
				}
				count += len(p) / size
			}
		case typ == f.wire:
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return 0, pbWireError("field "+strconv.Quote(path+f.name), i, n), false
			}
			i += n
			count++
		default:
			return 0, pbWireTypeError(path, f.name, typ, f.wire), false
		}
	}
	return count, "", false
}

// collect reads every value of repeated or map field f in b (from its
// first tag on) into an ARRAY or MAP datum.
func (r *pbRun) collect(b []byte, path string, f *pbField, c *pbConv) (fluss.Datum, string, bool) {
	count, reason, other := pbCount(b, path, f)
	if reason != "" {
		return fluss.Datum{}, reason, other
	}
	d, reason := r.fill(b, path, f, c, count)
	return d, reason, false
}

// fill converts the count values of f in b (checked by pbCount).
func (r *pbRun) fill(b []byte, path string, f *pbField, c *pbConv, count int) (fluss.Datum, string) {
	a := &r.out.nested
	nd := a.newNested()
	var elems, keys, vals []fluss.Datum
	if f.isMap {
		keys, vals = a.datumSlice(count), a.datumSlice(count)
		nd.Keys, nd.Values = keys, vals
	} else {
		elems = a.datumSlice(count)
		nd.Elems = elems
	}
	k := 0
	put := func(raw pbRaw) string {
		if k >= count {
			return "malformed protobuf: field " + strconv.Quote(path+f.name) + " changed while read"
		}
		if f.isMap {
			var reason string
			keys[k], vals[k], reason = r.mapEntry(raw.b, c)
			if reason != "" {
				return reason
			}
		} else {
			if reason := r.value(c.elem, raw, &elems[k], false); reason != "" {
				return "element " + strconv.Itoa(k) + ": " + reason
			}
		}
		k++
		return ""
	}
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fluss.Datum{}, pbWireError("tag", i, n)
		}
		i += n
		if num != f.num {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return fluss.Datum{}, pbWireError("field "+strconv.Itoa(int(num)), i, n)
			}
			i += n
			continue
		}
		if typ == protowire.BytesType && f.packable {
			p, n := protowire.ConsumeBytes(b[i:])
			if n < 0 {
				return fluss.Datum{}, pbWireError("field "+strconv.Quote(path+f.name), i, n)
			}
			i += n
			for len(p) > 0 {
				raw, n := pbConsume(p, f.wire)
				if n < 0 {
					return fluss.Datum{}, pbWireError("packed field "+strconv.Quote(path+f.name), i, n)
				}
				p = p[n:]
				if reason := put(raw); reason != "" {
					return fluss.Datum{}, reason
				}
			}
			continue
		}
		raw, n := pbConsume(b[i:], typ)
		if n < 0 {
			return fluss.Datum{}, pbWireError("field "+strconv.Quote(path+f.name), i, n)
		}
		i += n
		if reason := put(raw); reason != "" {
			return fluss.Datum{}, reason
		}
	}
	if k != count {
		return fluss.Datum{}, "malformed protobuf: field " + strconv.Quote(path+f.name) + " changed while read"
	}
	return fluss.Datum{Nested: nd}, ""
}

// mapEntry reads one map entry (key = 1, value = 2; absent = default).
func (r *pbRun) mapEntry(b []byte, c *pbConv) (fluss.Datum, fluss.Datum, string) {
	kraw, vraw := pbRaw{b: pbEmpty}, pbRaw{b: pbEmpty}
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fluss.Datum{}, fluss.Datum{}, pbWireError("map entry tag", i, n)
		}
		i += n
		var dst *pbRaw
		var want protowire.Type
		switch num {
		case 1:
			dst, want = &kraw, c.key.wire
		case 2:
			dst, want = &vraw, c.val.wire
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return fluss.Datum{}, fluss.Datum{}, pbWireError("map entry field", i, n)
			}
			i += n
			continue
		}
		if typ != want {
			return fluss.Datum{}, fluss.Datum{}, "map entry field " + strconv.Itoa(int(num)) + " has wire type " + strconv.Itoa(int(typ)) + ", want " + strconv.Itoa(int(want))
		}
		raw, n := pbConsume(b[i:], typ)
		if n < 0 {
			return fluss.Datum{}, fluss.Datum{}, pbWireError("map entry field", i, n)
		}
		i += n
		*dst = raw
	}
	var kd, vd fluss.Datum
	if reason := r.value(c.key, kraw, &kd, false); reason != "" {
		return fluss.Datum{}, fluss.Datum{}, "map key: " + reason
	}
	if reason := r.value(c.val, vraw, &vd, false); reason != "" {
		return fluss.Datum{}, fluss.Datum{}, "map value: " + reason
	}
	return kd, vd, ""
}

// pbInteger is the integer an integer or enum kind's raw value holds; ok
// is false for a uint64/fixed64 above MaxInt64.
func pbInteger(k protoreflect.Kind, u uint64) (int64, bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind, protoreflect.EnumKind:
		return int64(int32(u)), true
	case protoreflect.Sint32Kind:
		return int64(int32(protowire.DecodeZigZag(u & math.MaxUint32))), true
	case protoreflect.Sint64Kind:
		return protowire.DecodeZigZag(u), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return int64(uint32(u)), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return int64(u), u <= math.MaxInt64
	}
	return int64(u), true
}

func pbFloatValue(k protoreflect.Kind, u uint64) float64 {
	if k == protoreflect.FloatKind {
		return float64(math.Float32frombits(uint32(u)))
	}
	return math.Float64frombits(u)
}

func pbIntString(k protoreflect.Kind, u uint64) string {
	if v, ok := pbInteger(k, u); ok {
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatUint(u, 10)
}

// appendInteger writes the integer's decimal text.
func appendInteger(dst []byte, k protoreflect.Kind, u uint64) []byte {
	if v, ok := pbInteger(k, u); ok {
		return strconv.AppendInt(dst, v, 10)
	}
	return strconv.AppendUint(dst, u, 10)
}

// value converts one raw value with c into *dst, and returns the reason
// it cannot. *dst holds the slot's current value: a message that occurs
// twice merges into it when merge is set.
func (r *pbRun) value(c *pbConv, raw pbRaw, dst *fluss.Datum, merge bool) string {
	a := &r.out.arena
	switch c.op {
	case pbBool:
		*dst = fluss.Datum{I: int64(min(raw.u, 1))}
		return ""
	case pbBoolText:
		if raw.u != 0 {
			*dst = fluss.Datum{B: pbTrue}
			return ""
		}
		*dst = fluss.Datum{B: pbFalse}
		return ""
	case pbInt:
		v, ok := pbInteger(c.kind, raw.u)
		if !ok || v < c.lo || v > c.hi {
			return "integer " + pbIntString(c.kind, raw.u) + " is out of range for " + c.t.Root.String()
		}
		*dst = fluss.Datum{I: v}
		return ""
	case pbIntFloat:
		v, ok := pbInteger(c.kind, raw.u)
		f := float64(v)
		if !ok {
			f = float64(raw.u)
		}
		if c.t.Root == fluss.TypeFloat {
			f = float64(float32(f))
		}
		*dst = fluss.Datum{F: f}
		return ""
	case pbIntText:
		buf := a.alloc(20)
		*dst = fluss.Datum{B: a.shrink(buf, len(appendInteger(buf[:0], c.kind, raw.u)))}
		return ""
	case pbIntDecimal:
		buf := a.alloc(20)
		text := appendInteger(buf[:0], c.kind, raw.u)
		d, reason := decimalDatum(text, c.t.Precision, c.t.Scale)
		a.shrink(buf, 0)
		*dst = d
		return reason
	case pbIntTime:
		v, ok := pbInteger(c.kind, raw.u)
		if !ok {
			return "integer " + pbIntString(c.kind, raw.u) + " is out of range for " + c.t.Root.String()
		}
		var reason string
		*dst, reason = pbIntTimeDatum(c.t, v)
		return reason
	case pbFloat:
		f := pbFloatValue(c.kind, raw.u)
		if c.t.Root == fluss.TypeFloat && c.kind == protoreflect.DoubleKind {
			if !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
				return "number " + strconv.FormatFloat(f, 'g', -1, 64) + " is out of range for FLOAT"
			}
			f = float64(float32(f))
		}
		*dst = fluss.Datum{F: f}
		return ""
	case pbFloatText:
		bits := 64
		if c.kind == protoreflect.FloatKind {
			bits = 32
		}
		buf := a.alloc(32)
		*dst = fluss.Datum{B: a.shrink(buf, len(strconv.AppendFloat(buf[:0], pbFloatValue(c.kind, raw.u), 'g', -1, bits)))}
		return ""
	case pbFloatDecimal:
		bits := 64
		if c.kind == protoreflect.FloatKind {
			bits = 32
		}
		buf := a.alloc(32)
		text := strconv.AppendFloat(buf[:0], pbFloatValue(c.kind, raw.u), 'g', -1, bits)
		d, reason := decimalDatum(text, c.t.Precision, c.t.Scale)
		a.shrink(buf, 0)
		*dst = d
		return reason
	case pbString:
		if !utf8.Valid(raw.b) {
			return "string is not valid UTF-8"
		}
		if c.maxLen > 0 {
			if n := utf8.RuneCount(raw.b); n > c.maxLen {
				return "value of length " + strconv.Itoa(n) + " is longer than " + c.t.String()
			}
		}
		*dst = fluss.Datum{B: raw.b}
		return ""
	case pbStringBytes, pbBytes:
		if c.maxLen > 0 && len(raw.b) > c.maxLen {
			return "value of length " + strconv.Itoa(len(raw.b)) + " is longer than " + c.t.String()
		}
		*dst = fluss.Datum{B: raw.b}
		return ""
	case pbStringParse:
		if !utf8.Valid(raw.b) {
			return "string is not valid UTF-8"
		}
		var reason string
		*dst, reason = textDatum(c.t, raw.b, a)
		return reason
	case pbEnumName:
		n := int32(raw.u)
		name := c.enum.name(n)
		if name == nil {
			buf := a.alloc(11)
			name = a.shrink(buf, len(strconv.AppendInt(buf[:0], int64(n), 10)))
		}
		if c.maxLen > 0 && utf8.RuneCount(name) > c.maxLen {
			return "value " + strconv.Quote(string(name)) + " is longer than " + c.t.String()
		}
		*dst = fluss.Datum{B: name}
		return ""
	case pbRow:
		nd := dst.Nested
		if !merge || nd == nil {
			nd = r.out.nested.newNested()
			nd.Fields = r.out.nested.datumSlice(len(c.row.initial))
			copy(nd.Fields, c.row.initial)
		}
		if slot, reason := r.message(raw.b, c.row, nd.Fields, nil); reason != "" {
			if slot >= 0 {
				if prefix := "field " + strconv.Quote(c.row.slotNames[slot]); !strings.HasPrefix(reason, prefix) {
					return prefix + ": " + reason
				}
			}
			return reason
		}
		for _, i := range c.row.notNull {
			if nd.Fields[i].Null {
				return "field " + strconv.Quote(c.row.slotNames[i]) + ": no value for a NOT NULL field"
			}
		}
		*dst = fluss.Datum{Nested: nd}
		return ""
	case pbTimestamp, pbTimestampMillis, pbDuration:
		var v [2]uint64
		if reason := pbVarintFields(raw.b, v[:]); reason != "" {
			return reason
		}
		sec, nanos := int64(v[0]), int64(int32(v[1]))
		if c.op == pbDuration {
			if sec < -315_576_000_000 || sec > 315_576_000_000 || nanos <= -1e9 || nanos >= 1e9 {
				return "google.protobuf.Duration out of range"
			}
			*dst = fluss.Datum{I: sec*1000 + nanos/1e6}
			return ""
		}
		if sec < -62_135_596_800 || sec > 253_402_300_799 || nanos < 0 || nanos >= 1e9 {
			return "google.protobuf.Timestamp out of range (0001-01-01 to 9999-12-31, nanos 0 to 999999999)"
		}
		millis, nano := sec*1000+nanos/1e6, int32(nanos%1e6)
		if c.op == pbTimestampMillis {
			*dst = fluss.Datum{I: millis}
			return ""
		}
		millis, nano = truncTimestamp(millis, nano, c.t.Precision)
		*dst = fluss.Datum{I: millis, N: nano}
		return ""
	case pbDate:
		var v [3]uint64
		if reason := pbVarintFields(raw.b, v[:]); reason != "" {
			return reason
		}
		y, m, d := int64(int32(v[0])), int64(int32(v[1])), int64(int32(v[2]))
		if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
			return fmt.Sprintf("google.type.Date %d-%d-%d is not a full date", y, m, d)
		}
		*dst = fluss.Datum{I: daysFromCivil(y, m, d)}
		return ""
	case pbTimeOfDay:
		var v [4]uint64
		if reason := pbVarintFields(raw.b, v[:]); reason != "" {
			return reason
		}
		h, m, s, ns := int64(int32(v[0])), int64(int32(v[1])), int64(int32(v[2])), int64(int32(v[3]))
		if h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 59 || ns < 0 || ns >= 1e9 {
			return fmt.Sprintf("google.type.TimeOfDay %02d:%02d:%02d.%09d is out of range", h, m, s, ns)
		}
		*dst = fluss.Datum{I: truncMillis(((h*60+m)*60+s)*1000+ns/1e6, c.t.Precision)}
		return ""
	case pbDecimalMsg:
		var reason string
		*dst, reason = pbDecimalMessage(raw.b, c.t)
		return reason
	case pbWrapper:
		v := pbRaw{b: pbEmpty}
		b := raw.b
		for i := 0; i < len(b); {
			num, typ, n := protowire.ConsumeTag(b[i:])
			if n < 0 {
				return pbWireError("tag", i, n)
			}
			i += n
			if num != 1 {
				if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
					return pbWireError("field", i, n)
				}
				i += n
				continue
			}
			if typ != c.elem.wire {
				return "wrapper value has wire type " + strconv.Itoa(int(typ)) + ", want " + strconv.Itoa(int(c.elem.wire))
			}
			if v, n = pbConsume(b[i:], typ); n < 0 {
				return pbWireError("wrapper value", i, n)
			}
			i += n
		}
		*dst = fluss.Datum{}
		return r.value(c.elem, v, dst, false)
	}
	return "no conversion"
}

var (
	pbTrue  = []byte("true")
	pbFalse = []byte("false")
)

// pbIntTimeDatum reads an integer as DATE days, TIME milliseconds of the
// day or TIMESTAMP epoch milliseconds, as JSON numbers are.
func pbIntTimeDatum(t *fluss.DataType, n int64) (fluss.Datum, string) {
	switch t.Root {
	case fluss.TypeDate:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return fluss.Datum{}, "day number " + strconv.FormatInt(n, 10) + " is out of range for DATE"
		}
		return fluss.Datum{I: n}, ""
	case fluss.TypeTime:
		if n < 0 || n >= 86_400_000 {
			return fluss.Datum{}, "milliseconds of day " + strconv.FormatInt(n, 10) + " is out of range for TIME"
		}
		return fluss.Datum{I: truncMillis(n, t.Precision)}, ""
	}
	millis, nano := truncTimestamp(n, 0, t.Precision)
	return fluss.Datum{I: millis, N: nano}, ""
}

// pbVarintFields reads fields 1 … len(v) of a message whose fields are all
// varints (Timestamp, Duration, Date, TimeOfDay); absent fields stay 0.
func pbVarintFields(b []byte, v []uint64) string {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return pbWireError("tag", i, n)
		}
		i += n
		if num < 1 || int(num) > len(v) {
			if n = protowire.ConsumeFieldValue(num, typ, b[i:]); n < 0 {
				return pbWireError("field", i, n)
			}
			i += n
			continue
		}
		if typ != protowire.VarintType {
			return "field " + strconv.Itoa(int(num)) + " has wire type " + strconv.Itoa(int(typ)) + ", want 0"
		}
		x, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return pbWireError("field", i, n)
		}
		i += n
		v[num-1] = x
	}
	return ""
}

// pbDecimalMessage converts a confluent.type.Decimal (value = unscaled
// big-endian two's complement, scale) to DECIMAL(p, s), rescaling with
// rounding half-up.
func pbDecimalMessage(b []byte, t *fluss.DataType) (fluss.Datum, string) {
	var unscaled []byte
	var scale int64
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return fluss.Datum{}, pbWireError("tag", i, n)
		}
		i += n
		switch {
		case num == 1 && typ == protowire.BytesType:
			unscaled, n = protowire.ConsumeBytes(b[i:])
		case num == 3 && typ == protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b[i:])
			scale = int64(int32(x))
		case num == 1 || num == 3:
			return fluss.Datum{}, "confluent.type.Decimal field " + strconv.Itoa(int(num)) + " has wire type " + strconv.Itoa(int(typ))
		default:
			n = protowire.ConsumeFieldValue(num, typ, b[i:])
		}
		if n < 0 {
			return fluss.Datum{}, pbWireError("field", i, n)
		}
		i += n
	}
	p, s := t.Precision, int64(t.Scale)
	overflow := func() (fluss.Datum, string) {
		return fluss.Datum{}, "confluent.type.Decimal does not fit " + t.String()
	}
	if len(unscaled) > pbMaxDecimalBytes {
		return fluss.Datum{}, "confluent.type.Decimal value of " + strconv.Itoa(len(unscaled)) + " bytes is too long"
	}
	if scale == s && len(unscaled) <= 8 && p <= 18 {
		var v int64
		if len(unscaled) > 0 && unscaled[0]&0x80 != 0 {
			v = -1
		}
		for _, c := range unscaled {
			v = v<<8 | int64(c)
		}
		lim := int64(pow10u(p))
		if v >= lim || v <= -lim {
			return overflow()
		}
		return fluss.Datum{I: v}, ""
	}
	n := new(big.Int).SetBytes(unscaled)
	if len(unscaled) > 0 && unscaled[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(unscaled))))
	}
	switch diff := s - scale; {
	case n.Sign() == 0:
	case diff > int64(p):
		return overflow()
	case diff > 0:
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(diff), nil))
	case diff < -3*pbMaxDecimalBytes:
		n.SetInt64(0)
	case diff < 0:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(-diff), nil)
		q, rem := new(big.Int).QuoRem(n, div, new(big.Int))
		rem.Abs(rem).Lsh(rem, 1)
		if rem.Cmp(div) >= 0 {
			q.Add(q, big.NewInt(int64(n.Sign())))
		}
		n = q
	}
	lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	if new(big.Int).Abs(n).Cmp(lim) >= 0 {
		return overflow()
	}
	if p <= 18 {
		return fluss.Datum{I: n.Int64()}, ""
	}
	return fluss.Datum{B: twosComplement(n)}, ""
}
