package mapping

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Kafka Connect's JsonConverter with schemas.enable=true (its default)
// wraps each value as {"schema": {...}, "payload": ...}. A connect_json
// route reads the payload as a json route reads its value (columns by
// name, value.columns paths relative to the payload); the schema is not
// needed to fill columns, since JsonConverter writes each Connect type as
// the JSON a json route already reads: int64 as a number, bytes as base64,
// Date as days, Time and Timestamp as milliseconds. A null payload (or a
// null value) is a tombstone.

// walkEnvelope reads one envelope, filling the payload's columns. It
// reports a null payload; col and reason describe a bad one.
func (c *Converter) walkEnvelope(s *jsonScanner, out *Converted) (null bool, col, reason string) {
	if s.peek() != '{' {
		if s.pos >= len(s.data) {
			return false, "", "empty, not a Kafka Connect JSON envelope"
		}
		if _, reason := s.value(0); reason != "" {
			return false, "", reason
		}
		return false, "", "not a Kafka Connect JSON envelope (an object with schema and payload)"
	}
	s.pos++
	sawPayload := false
	for s.peek() != '}' {
		if s.peek() != '"' {
			return false, "", s.syntaxError("expected a field name")
		}
		name, escaped, reason := s.str()
		if reason != "" {
			return false, "", reason
		}
		if s.peek() != ':' {
			return false, "", s.syntaxError("expected ':'")
		}
		s.pos++
		switch {
		case !escaped && string(name) == "payload":
			if sawPayload {
				return false, "", "two payload fields"
			}
			sawPayload = true
			switch s.peek() {
			case '{':
				if col, reason := c.walkObject(s, c.valueTree, 1, c.rejectUnknown, out); reason != "" {
					return false, col, reason
				}
			default:
				v, reason := s.value(1)
				switch {
				case reason != "":
					return false, "", reason
				case v.kind == jsonNull:
					null = true
				default:
					return false, "", "the payload is " + v.kind.String() + ", not an object: the route fills columns from a struct's fields"
				}
			}
		default: // "schema", and anything a newer converter adds
			if _, reason := s.value(1); reason != "" {
				return false, "", reason
			}
		}
		switch s.peek() {
		case ',':
			s.pos++
			if s.peek() != '"' {
				return false, "", s.syntaxError("expected a field name")
			}
		case '}':
		default:
			return false, "", s.syntaxError("expected ',' or '}'")
		}
	}
	s.pos++
	if s.peek() != 0 {
		return false, "", s.syntaxError("data after the JSON object")
	}
	if !sawPayload {
		return false, "", "no payload field: not a Kafka Connect JSON envelope (is the converter's schemas.enable false? then use value.format json)"
	}
	return null, "", ""
}

// filledFromValue reports whether the value filled at least one of the
// columns read from it (a field present with null counts: the producer
// named it).
func (c *Converter) filledFromValue(out *Converted) bool {
	for i, v := range c.fromValue {
		if v && out.seen[i] {
			return true
		}
	}
	return false
}

// emptyValueReason says why a value that filled no column is refused,
// naming the fields it had (a few), so that the operator sees the mismatch.
// Only on the error path: it parses the value again.
func (c *Converter) emptyValueReason(rec *Record) string {
	var fields []string
	switch c.valueFormat {
	case ValueJSON:
		fields = topLevelFields(rec.Value)
	case ValueConnectJSON:
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(rec.Value, &env) == nil {
			fields = topLevelFields(env.Payload)
		}
	case ValueJSONSchema:
		fields = topLevelFields(rec.SerializedValue.Payload)
	case ValueAvro:
		if sc := rec.SerializedValue.Schema; sc != nil {
			var rs struct {
				Fields []struct {
					Name string `json:"name"`
				} `json:"fields"`
			}
			if json.Unmarshal([]byte(sc.Text), &rs) == nil {
				for _, f := range rs.Fields {
					fields = append(fields, f.Name)
				}
			}
		}
	case ValueProtobuf:
		if sc := rec.SerializedValue.Schema; sc != nil {
			if name, err := ProtobufMessage(sc, rec.SerializedValue.Ref); err == nil {
				if md, err := protobufMessage(sc, name); err == nil {
					fields = []string{}
					for i := 0; i < md.Fields().Len(); i++ {
						fields = append(fields, string(md.Fields().Get(i).Name()))
					}
				}
			}
		}
	}
	var cols []string
	for i, v := range c.fromValue {
		if v {
			cols = append(cols, c.colName(i))
		}
	}
	var b strings.Builder
	b.WriteString("value fills no column of ")
	b.WriteString(c.table.String())
	b.WriteString(" (value.empty_rows: reject): ")
	switch {
	case fields == nil:
		b.WriteString("none of its fields match any of the columns ")
	case len(fields) == 0:
		b.WriteString("it has no fields to fill any of the columns ")
	default:
		b.WriteString("none of its fields ")
		b.WriteString(listShort(fields))
		b.WriteString(" match any of the columns ")
	}
	b.WriteString(listShort(cols))
	return b.String()
}

// topLevelFields returns the member names of a JSON object, nil if data
// is not one.
func topLevelFields(data []byte) []string {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	fields := []string{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return fields
		}
		if name, ok := t.(string); ok {
			fields = append(fields, name)
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return fields
		}
	}
	return fields
}

// listShort renders names as [a, b, c], at most 8 of them.
func listShort(names []string) string {
	const most = 8
	names = slices.Clone(names)
	more := ""
	if len(names) > most {
		more = ", …"
		names = names[:most]
	}
	for i, n := range names {
		names[i] = quoteShort([]byte(n))
	}
	return "[" + strings.Join(names, ", ") + more + "]"
}
