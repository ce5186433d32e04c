package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fluss-kafka/gateway/schemaregistry"
)

// jsonSchemaDecoder reads json_schema values and keys: the payload is JSON
// text (after the registry framing) that must validate against its writer
// schema; its fields then fill columns exactly as the json format does.
// Schemas are compiled once per writer schema, with their $ref targets
// (Schema.Deps) as resources.
type jsonSchemaDecoder struct {
	t        registryTarget
	compiled writerSchemaCache[compiledJSONSchema]
}

type compiledJSONSchema struct {
	schema *jsonschema.Schema
	err    error // the schema does not compile: every record of it is bad
}

// maxCompiledJSONSchemas bounds the compiled-schema cache.
const maxCompiledJSONSchemas = 1024

func newJSONSchemaDecoder(t registryTarget) (registryDecoder, error) {
	if t.walkJSON == nil {
		return nil, errors.New("mapping: json_schema decoder without a JSON walker")
	}
	d := &jsonSchemaDecoder{t: t}
	d.compiled.max = maxCompiledJSONSchemas
	return d, nil
}

func (d *jsonSchemaDecoder) decode(s *Serialized, out *Converted) (string, string) {
	if s.Schema.Type != "JSON" {
		return "", fmt.Sprintf("writer schema %d is %s, not a JSON Schema", s.Schema.ID, s.Schema.Type)
	}
	c := d.compiled.get(s.Schema, compileJSONSchema)
	if c.err != nil {
		return "", fmt.Sprintf("writer schema %d does not compile: %v", s.Schema.ID, firstLine(c.err.Error()))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Payload))
	if err != nil {
		return "", "not JSON: " + err.Error()
	}
	if err := c.schema.Validate(doc); err != nil {
		return "", "does not validate against its schema: " + firstLine(err.Error())
	}
	return d.t.walkJSON(s.Payload, out)
}

func compileJSONSchema(s *schemaregistry.Schema) compiledJSONSchema {
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft7) // what Confluent's serializers write by default
	// No loader: a $ref can only reach the schema itself and its registry
	// references, never the network or the file system.
	comp.UseLoader(noLoader{})
	add := func(url, text string) error {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return fmt.Errorf("%s: %w", url, err)
		}
		return comp.AddResource(url, doc)
	}
	root := jsonSchemaRootURL
	for name, text := range s.Deps {
		if err := add(jsonSchemaDepURL(name), text); err != nil {
			return compiledJSONSchema{err: err}
		}
	}
	if err := add(root, s.Text); err != nil {
		return compiledJSONSchema{err: err}
	}
	sch, err := comp.Compile(root)
	if err != nil {
		return compiledJSONSchema{err: err}
	}
	return compiledJSONSchema{schema: sch}
}

// noLoader refuses every URL the schema and its references do not provide.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %s is not among the schema's registry references", strconv.Quote(url))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
