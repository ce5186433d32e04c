package mapping

import (
	"strconv"

	"github.com/fluss-kafka/gateway/fluss"
)

// jsonNestedDatum converts a scanned JSON value into an ARRAY (a JSON
// array), MAP (a JSON object: keys are read as text into the key type) or
// ROW (a JSON object whose fields fill the row's fields by name; unknown
// fields are ignored, or refused with rejectUnknown, missing ones null) of
// type t. Nested values come from out's arenas, so a warm Converted
// allocates nothing.
func jsonNestedDatum(t *fluss.DataType, v jsonValue, out *Converted, depth int, rejectUnknown bool) (fluss.Datum, string) {
	if v.kind == jsonNull {
		return fluss.Datum{Null: true}, ""
	}
	if depth >= maxJSONDepth {
		return fluss.Datum{}, "nested too deeply"
	}
	s := jsonScanner{data: v.raw}
	switch t.Root {
	case fluss.TypeArray:
		if v.kind != jsonArray {
			return fluss.Datum{}, "cannot convert " + v.kind.String() + " to ARRAY"
		}
		n, reason := countArray(v.raw, depth)
		if reason != "" {
			return fluss.Datum{}, reason
		}
		elems := out.nested.datumSlice(n)
		s.pos++ // '['
		for i := range n {
			ev, reason := s.value(depth + 1)
			if reason != "" {
				return fluss.Datum{}, reason
			}
			if elems[i], reason = jsonElemDatum(t.Elem, ev, out, depth+1, rejectUnknown); reason != "" {
				return fluss.Datum{}, "element " + strconv.Itoa(i) + ": " + reason
			}
			if s.peek() == ',' {
				s.pos++
			}
		}
		nd := out.nested.newNested()
		nd.Elems = elems
		return fluss.Datum{Nested: nd}, ""
	case fluss.TypeMap, fluss.TypeRow:
		if v.kind != jsonObject {
			return fluss.Datum{}, "cannot convert " + v.kind.String() + " to " + t.Root.String()
		}
		n, reason := countObject(v.raw, depth)
		if reason != "" {
			return fluss.Datum{}, reason
		}
		nd := out.nested.newNested()
		if t.Root == fluss.TypeMap {
			nd.Keys, nd.Values = out.nested.datumSlice(n), out.nested.datumSlice(n)
		} else {
			nd.Fields = out.nested.datumSlice(len(t.Fields))
			for i := range nd.Fields {
				nd.Fields[i] = fluss.Datum{Null: true}
			}
		}
		s.pos++ // '{'
		for i := range n {
			s.peek() // to the field name
			name, escaped, reason := s.str()
			if reason != "" {
				return fluss.Datum{}, reason
			}
			if escaped {
				buf := out.arena.alloc(len(name))
				name = out.arena.shrink(buf, len(unescape(buf, name)))
			}
			if s.peek() == ':' {
				s.pos++
			}
			fv, reason := s.value(depth + 1)
			if reason != "" {
				return fluss.Datum{}, reason
			}
			if t.Root == fluss.TypeMap {
				if nd.Keys[i], reason = textDatum(t.Key, name, &out.arena); reason != "" {
					return fluss.Datum{}, "map key " + quoteShort(name) + ": " + reason
				}
				if nd.Values[i], reason = jsonElemDatum(t.Value, fv, out, depth+1, rejectUnknown); reason != "" {
					return fluss.Datum{}, "map value " + quoteShort(name) + ": " + reason
				}
			} else {
				known := false
				for j := range t.Fields {
					if t.Fields[j].Name == string(name) {
						if nd.Fields[j], reason = jsonElemDatum(&t.Fields[j].Type, fv, out, depth+1, rejectUnknown); reason != "" {
							return fluss.Datum{}, "field " + quoteShort(name) + ": " + reason
						}
						known = true
						break
					}
				}
				if !known && rejectUnknown {
					return fluss.Datum{}, "unknown field " + quoteShort(name) + " (unknown_fields: reject)"
				}
			}
			if s.peek() == ',' {
				s.pos++
			}
		}
		if t.Root == fluss.TypeRow {
			for j := range t.Fields {
				if nd.Fields[j].Null && t.Fields[j].Type.NotNull {
					return fluss.Datum{}, "field " + quoteShort([]byte(t.Fields[j].Name)) + " is NOT NULL but has no value"
				}
			}
		}
		return fluss.Datum{Nested: nd}, ""
	}
	return fluss.Datum{}, "not a nested type"
}

// jsonElemDatum converts an element, map value or row field.
func jsonElemDatum(t *fluss.DataType, v jsonValue, out *Converted, depth int, rejectUnknown bool) (fluss.Datum, string) {
	var d fluss.Datum
	var reason string
	if t.IsNested() {
		d, reason = jsonNestedDatum(t, v, out, depth, rejectUnknown)
	} else {
		d, reason = jsonDatum(t, v, &out.arena)
	}
	if reason == "" && d.Null && t.NotNull {
		return d, "null for a NOT NULL type"
	}
	return d, reason
}

// countArray counts the elements of a scanned (well-formed) JSON array.
func countArray(raw []byte, depth int) (int, string) {
	s := jsonScanner{data: raw, pos: 1}
	if s.peek() == ']' {
		return 0, ""
	}
	n := 0
	for {
		if _, reason := s.value(depth + 1); reason != "" {
			return 0, reason
		}
		n++
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			return n, ""
		default:
			return 0, s.syntaxError("expected ',' or ']'")
		}
	}
}

// countObject counts the fields of a scanned (well-formed) JSON object.
func countObject(raw []byte, depth int) (int, string) {
	s := jsonScanner{data: raw, pos: 1}
	if s.peek() == '}' {
		return 0, ""
	}
	n := 0
	for {
		if s.peek() != '"' {
			return 0, s.syntaxError("expected a field name")
		}
		if _, _, reason := s.str(); reason != "" {
			return 0, reason
		}
		if s.peek() != ':' {
			return 0, s.syntaxError("expected ':'")
		}
		s.pos++
		if _, reason := s.value(depth + 1); reason != "" {
			return 0, reason
		}
		n++
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			return n, ""
		default:
			return 0, s.syntaxError("expected ',' or '}'")
		}
	}
}
