package mapping

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner made for the conversion fast path: it walks a
// document once, hands out values as slices of the input (no decoding into
// maps or interfaces), and validates what it skips, so a malformed document
// is always rejected. Strings are unescaped only when a column needs them.

// maxJSONDepth bounds nesting so a hostile document cannot exhaust the
// stack.
const maxJSONDepth = 64

type jsonKind uint8

const (
	jsonString jsonKind = iota + 1
	jsonNumber
	jsonTrue
	jsonFalse
	jsonNull
	jsonObject
	jsonArray
)

func (k jsonKind) String() string {
	switch k {
	case jsonString:
		return "a string"
	case jsonNumber:
		return "a number"
	case jsonTrue, jsonFalse:
		return "a boolean"
	case jsonNull:
		return "null"
	case jsonObject:
		return "an object"
	case jsonArray:
		return "an array"
	}
	return "nothing"
}

// jsonValue is one scanned value. raw is, for strings, the text between
// the quotes, still escaped when escaped is set; for every other kind the
// value's literal text.
type jsonValue struct {
	kind    jsonKind
	escaped bool
	raw     []byte
}

type jsonScanner struct {
	data []byte
	pos  int
}

// syntaxError is a malformed-document reason with the byte offset.
func (s *jsonScanner) syntaxError(what string) string {
	return "invalid JSON at byte " + strconv.Itoa(s.pos) + ": " + what
}

func (s *jsonScanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// value scans one value at the current position.
func (s *jsonScanner) value(depth int) (jsonValue, string) {
	switch c := s.peek(); {
	case c == '"':
		raw, esc, reason := s.str()
		return jsonValue{kind: jsonString, escaped: esc, raw: raw}, reason
	case c == '{' || c == '[':
		start := s.pos
		if reason := s.skipContainer(depth); reason != "" {
			return jsonValue{}, reason
		}
		k := jsonObject
		if c == '[' {
			k = jsonArray
		}
		return jsonValue{kind: k, raw: s.data[start:s.pos]}, ""
	case c == 't':
		return s.literal("true", jsonTrue)
	case c == 'f':
		return s.literal("false", jsonFalse)
	case c == 'n':
		return s.literal("null", jsonNull)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 0:
		return jsonValue{}, s.syntaxError("unexpected end of input")
	default:
		return jsonValue{}, s.syntaxError("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (s *jsonScanner) literal(lit string, k jsonKind) (jsonValue, string) {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return jsonValue{}, s.syntaxError("invalid literal")
	}
	v := jsonValue{kind: k, raw: s.data[s.pos : s.pos+len(lit)]}
	s.pos += len(lit)
	return v, ""
}

// number scans a number following the JSON grammar exactly.
func (s *jsonScanner) number() (jsonValue, string) {
	d, start := s.data, s.pos
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return jsonValue{}, s.syntaxError("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		n := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == n {
			s.pos = i
			return jsonValue{}, s.syntaxError("invalid number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		n := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == n {
			s.pos = i
			return jsonValue{}, s.syntaxError("invalid number")
		}
	}
	s.pos = i
	return jsonValue{kind: jsonNumber, raw: d[start:i]}, ""
}

// str scans a string starting at the opening quote and returns its
// content, still escaped.
func (s *jsonScanner) str() (raw []byte, escaped bool, reason string) {
	d := s.data
	i := s.pos + 1
	start := i
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return d[start:i], escaped, ""
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				s.pos = i
				return nil, false, s.syntaxError("unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					s.pos = i
					return nil, false, s.syntaxError("invalid \\u escape")
				}
				i += 6
			default:
				s.pos = i
				return nil, false, s.syntaxError("invalid escape")
			}
		case c < 0x20:
			s.pos = i
			return nil, false, s.syntaxError("control character in string")
		default:
			i++
		}
	}
	s.pos = i
	return nil, false, s.syntaxError("unterminated string")
}

// skipContainer validates and skips an object or array.
func (s *jsonScanner) skipContainer(depth int) string {
	if depth >= maxJSONDepth {
		return s.syntaxError("nested too deeply")
	}
	open := s.data[s.pos]
	s.pos++
	if open == '{' {
		if s.peek() == '}' {
			s.pos++
			return ""
		}
		for {
			if s.peek() != '"' {
				return s.syntaxError("expected a field name")
			}
			if _, _, reason := s.str(); reason != "" {
				return reason
			}
			if s.peek() != ':' {
				return s.syntaxError("expected ':'")
			}
			s.pos++
			if _, reason := s.value(depth + 1); reason != "" {
				return reason
			}
			switch s.peek() {
			case ',':
				s.pos++
			case '}':
				s.pos++
				return ""
			default:
				return s.syntaxError("expected ',' or '}'")
			}
		}
	}
	if s.peek() == ']' {
		s.pos++
		return ""
	}
	for {
		if _, reason := s.value(depth + 1); reason != "" {
			return reason
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return ""
		default:
			return s.syntaxError("expected ',' or ']'")
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// unescape decodes the (already validated) escaped string content raw into
// dst, which must have room for len(raw) bytes: no escape expands. Invalid
// UTF-8 is copied as is (the caller rejects it); a lone surrogate becomes
// U+FFFD, 3 bytes from a 6-byte escape.
func unescape(dst, raw []byte) []byte {
	dst = dst[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 = utf16.DecodeRune(r, hex4(raw[i+2:]))
				}
				if r2 != utf8.RuneError {
					i += 6
				}
				r = r2
			}
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}
