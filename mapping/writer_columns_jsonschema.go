package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// maxJSONSchemaDepth bounds nesting and $ref hops: a recursive schema has
// no finite column type.
const maxJSONSchemaDepth = 64

// jsonSchemaRootURL is the URL the writer schema is compiled under
// (compileJSONSchema); compiled locations name it, and the walker finds
// the text by it.
const jsonSchemaRootURL = "registry:///writer-schema.json"

// jsonSchemaDepURL is the URL of the registry reference of this name: it
// resolves against the writer schema's own URL, as a relative $ref does;
// an absolute one stays as it is.
func jsonSchemaDepURL(name string) string {
	if strings.Contains(name, "://") {
		return name
	}
	return "registry:///" + strings.TrimPrefix(name, "/")
}

// jsonSchemaWriterColumns derives columns from a JSON Schema writer schema:
// one per property of its top-level object, in the order the schema text
// lists them. The schema is compiled as the decoder compiles it, so $ref,
// draft and format semantics are the ones records are validated with; each
// type is the one the json conversion reads the values it allows into.
func jsonSchemaWriterColumns(s *schemaregistry.Schema) ([]fluss.Column, []FieldNotAdded, error) {
	if s.Type != "" && !strings.EqualFold(s.Type, "JSON") {
		return nil, nil, fmt.Errorf("the writer schema is a %s schema, not JSON Schema", s.Type)
	}
	w, err := newJSONSchemaWalker(s)
	if err != nil {
		return nil, nil, err
	}
	c := compileJSONSchema(s)
	if c.err != nil {
		if err := w.foreignRef(); err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("the writer schema does not compile: %s", firstLine(c.err.Error()))
	}
	root, depth, err := w.unwrap(c.schema, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("the writer schema: %w", err)
	}
	switch t, n := jsonSchemaOneType(root); {
	case n != 1 || t != "object":
		return nil, nil, fmt.Errorf("the writer schema's type is %s, not an object: it has no properties to make columns of", jsonSchemaTypeName(root))
	case len(root.Properties) == 0:
		return nil, nil, errors.New("the writer schema is an object without properties: it has none to make columns of")
	}
	var notAdded []FieldNotAdded
	fields, err := w.fields(root, depth+1, func(name string, err error) {
		notAdded = append(notAdded, FieldNotAdded{Field: name, Reason: err.Error()})
	})
	if err != nil {
		return nil, nil, err
	}
	cols := make([]fluss.Column, 0, len(fields))
	for _, f := range fields {
		cols = append(cols, fluss.Column{Name: f.Name, Type: f.Type, Comment: f.Description})
	}
	if len(cols) == 0 && len(notAdded) > 0 {
		return nil, notAdded, errNoColumns(notAdded)
	}
	return cols, notAdded, nil
}

// jsonSchemaWalker reads a compiled schema, going back to the schema text
// for what compiling drops: the order of properties and keywords the
// validator ignores (contentEncoding, Connect's connect.type).
type jsonSchemaWalker struct {
	docs   map[string]any              // URL → ordered JSON of the writer schema and its references
	onPath map[*jsonschema.Schema]bool // the objects enclosing the one being typed
}

func newJSONSchemaWalker(s *schemaregistry.Schema) (*jsonSchemaWalker, error) {
	w := &jsonSchemaWalker{docs: make(map[string]any, len(s.Deps)+1), onPath: map[*jsonschema.Schema]bool{}}
	for name, text := range s.Deps {
		doc, err := decodeOrderedJSON(text)
		if err != nil {
			return nil, fmt.Errorf("registry reference %q is not JSON: %w", name, err)
		}
		w.docs[jsonSchemaDepURL(name)] = doc
	}
	doc, err := decodeOrderedJSON(s.Text)
	if err != nil {
		return nil, fmt.Errorf("the writer schema is not JSON: %w", err)
	}
	w.docs[jsonSchemaRootURL] = doc
	return w, nil
}

// node is the schema text of a compiled schema, nil if it is not an object.
func (w *jsonSchemaWalker) node(s *jsonschema.Schema) *orderedObject {
	u, frag, _ := strings.Cut(s.Location, "#")
	v, ok := w.docs[u]
	if !ok {
		return nil
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil {
		return nil
	}
	if ptr != "" {
		for _, tok := range strings.Split(ptr, "/")[1:] {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			switch n := v.(type) {
			case *orderedObject:
				v = n.vals[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(n) {
					return nil
				}
				v = n[i]
			default:
				return nil
			}
		}
	}
	o, _ := v.(*orderedObject)
	return o
}

// keyword is a string keyword of s as written, "" if absent.
func (w *jsonSchemaWalker) keyword(s *jsonschema.Schema, name string) string {
	if n := w.node(s); n != nil {
		v, _ := n.vals[name].(string)
		return v
	}
	return ""
}

var errJSONSchemaRecursive = errors.New("recursive, or nested too deeply (a recursive schema cannot be a column)")

// unwrap follows what only points at another schema: a $ref, a one-schema
// allOf, and anyOf/oneOf of null and one schema (a nullable value: every
// column is nullable anyway). depth grows with each hop.
func (w *jsonSchemaWalker) unwrap(s *jsonschema.Schema, depth int) (*jsonschema.Schema, int, error) {
	for {
		if depth > maxJSONSchemaDepth {
			return nil, depth, errJSONSchemaRecursive
		}
		if s.Bool != nil {
			if *s.Bool {
				return nil, depth, errors.New("the schema true takes any value: no column type (create the column yourself; STRING keeps any JSON value as its text)")
			}
			return nil, depth, errors.New("the schema false takes no value: no column type")
		}
		if s.RecursiveRef != nil || s.DynamicRef != nil {
			return nil, depth, errors.New("$recursiveRef and $dynamicRef are not followed (they make recursive types): create the column yourself")
		}
		shaped := s.Types != nil || len(s.Properties) > 0 || s.Items != nil || s.Items2020 != nil || len(s.PrefixItems) > 0
		var next *jsonschema.Schema
		n := 0
		if s.Ref != nil {
			next, n = s.Ref, n+1
		}
		if len(s.AllOf) > 0 {
			if len(s.AllOf) > 1 {
				return nil, depth, errors.New("allOf of several schemas has no one column type: create the column yourself")
			}
			next, n = s.AllOf[0], n+1
		}
		for _, union := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
			if len(union) == 0 {
				continue
			}
			n++
			next = nil
			for _, b := range union {
				if jsonSchemaIsNull(b) {
					continue
				}
				if next != nil {
					return nil, depth, errors.New("a union (anyOf/oneOf) of several types has no one column type: create the column yourself")
				}
				next = b
			}
			if next == nil {
				return nil, depth, errors.New("a union of null only has no column type")
			}
		}
		switch {
		case n == 0:
			return s, depth, nil
		case n > 1 || shaped:
			return nil, depth, errors.New("$ref, allOf, anyOf or oneOf combined with other type keywords has no one column type: create the column yourself")
		}
		s, depth = next, depth+1
	}
}

func jsonSchemaIsNull(s *jsonschema.Schema) bool {
	if s.Types == nil || s.Ref != nil || len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) > 0 {
		return false
	}
	ts := s.Types.ToStrings()
	return len(ts) == 1 && ts[0] == "null"
}

// jsonSchemaOneType is the one type besides null that s allows; n counts
// them (0: untyped or null only).
func jsonSchemaOneType(s *jsonschema.Schema) (t string, n int) {
	if s.Types == nil {
		return "", 0
	}
	for _, ts := range s.Types.ToStrings() {
		if ts != "null" {
			t, n = ts, n+1
		}
	}
	return t, n
}

func jsonSchemaTypeName(s *jsonschema.Schema) string {
	if s.Types == nil {
		return "untyped"
	}
	return s.Types.String()
}

// columnType is the column type property schema s fills by default.
func (w *jsonSchemaWalker) columnType(s *jsonschema.Schema, depth int) (fluss.DataType, error) {
	s, depth, err := w.unwrap(s, depth)
	if err != nil {
		return fluss.DataType{}, err
	}
	t, n := jsonSchemaOneType(s)
	switch {
	case s.Types == nil:
		return fluss.DataType{}, errors.New("no type: an untyped property has no column type (create the column yourself; STRING keeps any JSON value as its text)")
	case n == 0:
		return fluss.DataType{}, errors.New("a null-only property has no column type")
	case n > 1:
		return fluss.DataType{}, fmt.Errorf("a union of several types %s has no one column type: create the column yourself", s.Types)
	}
	// Kafka Connect's JSON Schema converter marks its types' widths; the
	// values it writes fit them.
	connect := w.keyword(s, "connect.type")
	switch t {
	case "boolean":
		return fluss.Boolean(), nil
	case "integer":
		switch connect {
		case "int8":
			return fluss.TinyInt(), nil
		case "int16":
			return fluss.SmallInt(), nil
		case "int32":
			return fluss.Int(), nil
		}
		// 1.0, 1e3 and integers beyond 64 bits are JSON Schema integers
		// that BIGINT refuses; serializers write integers plainly.
		return fluss.BigInt(), nil
	case "number":
		if connect == "float32" {
			return fluss.Float(), nil
		}
		return fluss.Double(), nil
	case "string":
		return w.stringType(s, connect), nil
	case "object":
		if len(s.Properties) > 0 {
			fields, err := w.fields(s, depth+1, nil)
			if err != nil {
				return fluss.DataType{}, err
			}
			return fluss.RowType(fields...), nil
		}
		if v, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			vt, err := w.columnType(v, depth+1)
			if err != nil {
				return fluss.DataType{}, fmt.Errorf("additionalProperties: %w", err)
			}
			return fluss.Map(fluss.String(), vt), nil
		}
		return fluss.DataType{}, errors.New("an object without properties or an additionalProperties schema has no column type (create the column yourself; STRING keeps it as JSON text)")
	case "array":
		if len(s.PrefixItems) > 0 {
			return fluss.DataType{}, errors.New("a tuple (prefixItems) has no one element type: create the column yourself")
		}
		items, _ := s.Items.(*jsonschema.Schema)
		if _, tuple := s.Items.([]*jsonschema.Schema); tuple {
			return fluss.DataType{}, errors.New("a tuple (items as a list) has no one element type: create the column yourself")
		}
		if s.Items2020 != nil {
			items = s.Items2020
		}
		if items == nil {
			return fluss.DataType{}, errors.New("an array without items has no element type: create the column yourself")
		}
		et, err := w.columnType(items, depth+1)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("items: %w", err)
		}
		return fluss.Array(et), nil
	}
	return fluss.DataType{}, fmt.Errorf("no column type for %s", t)
}

// stringType types a string: a format only when the validator asserts it
// (s.Format is set for drafts 4 to 7, not for 2019-09/2020-12 where format
// is an annotation), and only where the json conversion reads every value
// the format allows.
func (w *jsonSchemaWalker) stringType(s *jsonschema.Schema, connect string) fluss.DataType {
	if s.Format != nil {
		switch s.Format.Name {
		case "date":
			return fluss.Date() // yyyy-MM-dd, what DATE reads
		case "date-time":
			// RFC 3339 with an offset, read as the UTC instant. Fluss's
			// default TIMESTAMP_LTZ precision; finer fractions truncate.
			// Leap seconds, over 9 fraction digits and offsets beyond
			// ±18:00 validate but do not convert: no serializer writes them.
			return fluss.TimestampLTZ(3)
		}
		// "time" is RFC 3339 full-time, whose offset TIME does not read:
		// it stays STRING, as do the other formats.
	}
	// contentEncoding is an annotation the validator does not check, but it
	// says what producers write; TypeBytes reads base64 (padded or not).
	if strings.EqualFold(w.keyword(s, "contentEncoding"), "base64") || connect == "bytes" {
		return fluss.Bytes()
	}
	return fluss.String()
}

// fields are the ROW fields of an object schema's properties, in the order
// the schema text lists them (compiling keeps them in a map).
//
// skip, when not nil, takes a property no column type holds, which is
// then left out; nil fails the whole object.
func (w *jsonSchemaWalker) fields(s *jsonschema.Schema, depth int, skip func(name string, err error)) ([]fluss.Field, error) {
	// An object inside itself is recursive: say so at once rather than
	// at the depth bound.
	if depth > maxJSONSchemaDepth || w.onPath[s] {
		return nil, errJSONSchemaRecursive
	}
	w.onPath[s] = true
	defer delete(w.onPath, s)
	var order []string
	if n := w.node(s); n != nil {
		if props, ok := n.vals["properties"].(*orderedObject); ok {
			order = props.keys
		}
	}
	if len(order) != len(s.Properties) {
		return nil, fmt.Errorf("cannot find the properties of %s in the schema text to order them", s.Location)
	}
	fields := make([]fluss.Field, 0, len(order))
	for _, name := range order {
		ps, ok := s.Properties[name]
		if !ok {
			return nil, fmt.Errorf("cannot find property %q of %s in the schema text", name, s.Location)
		}
		t, err := w.columnType(ps, depth)
		if err != nil && skip != nil {
			skip(name, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		fields = append(fields, fluss.Field{Name: name, Type: t, Description: w.description(ps)})
	}
	return fields, nil
}

// description is a property's description, or that of the schema its $ref
// names (drafts before 2019-09 drop a $ref's sibling keywords when
// compiling, so the text is read).
func (w *jsonSchemaWalker) description(s *jsonschema.Schema) string {
	for i := 0; s != nil && i < maxJSONSchemaDepth; i++ {
		if s.Description != "" {
			return s.Description
		}
		if d := w.keyword(s, "description"); d != "" {
			return d
		}
		s = s.Ref
	}
	return ""
}

// foreignRef explains a schema that did not compile because a top-level
// property's $ref reaches outside the writer schema and its registry
// references (compileJSONSchema never fetches one): it names the property.
func (w *jsonSchemaWalker) foreignRef() error {
	known := map[string]bool{}
	for u, doc := range w.docs {
		known[u] = true
		if o, ok := doc.(*orderedObject); ok {
			for _, k := range []string{"$id", "id"} {
				if id, ok := o.vals[k].(string); ok {
					if r, err := resolveURL(u, id); err == nil {
						known[r] = true
					}
				}
			}
		}
	}
	root, _ := w.docs[jsonSchemaRootURL].(*orderedObject)
	if root == nil {
		return nil
	}
	base := jsonSchemaRootURL
	for _, k := range []string{"$id", "id"} {
		if id, ok := root.vals[k].(string); ok {
			if r, err := resolveURL(base, id); err == nil {
				base = r
				break
			}
		}
	}
	props, _ := root.vals["properties"].(*orderedObject)
	if props == nil {
		return nil
	}
	for _, name := range props.keys {
		var bad string
		walkOrderedRefs(props.vals[name], func(ref string) {
			if r, err := resolveURL(base, ref); bad == "" && (err != nil || !known[r]) {
				bad = ref
			}
		})
		if bad != "" {
			return fmt.Errorf("property %q: $ref %q is not the writer schema nor one of its registry references (it is never fetched)", name, bad)
		}
	}
	return nil
}

// resolveURL resolves ref against base, without its fragment.
func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := b.Parse(ref)
	if err != nil {
		return "", err
	}
	r.Fragment, r.RawFragment = "", ""
	return r.String(), nil
}

func walkOrderedRefs(v any, f func(string)) {
	switch n := v.(type) {
	case *orderedObject:
		for _, k := range n.keys {
			if ref, ok := n.vals[k].(string); ok && k == "$ref" {
				f(ref)
			}
			walkOrderedRefs(n.vals[k], f)
		}
	case []any:
		for _, e := range n {
			walkOrderedRefs(e, f)
		}
	}
}

// orderedObject is a JSON object that keeps its keys' order (the order of
// properties is the order of columns).
type orderedObject struct {
	keys []string
	vals map[string]any
}

func decodeOrderedJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := decodeOrderedValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeOrderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := &orderedObject{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			// A repeated key keeps its first place and its last value, as
			// encoding/json (which the validator parses with) keeps it.
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
		}
		_, err := dec.Token()
		return o, err
	case '[':
		var a []any
		for dec.More() {
			v, err := decodeOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}
