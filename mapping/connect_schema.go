package mapping

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/fluss-kafka/gateway/fluss"
)

// Kafka Connect's JsonConverter puts the value's Connect schema in each
// envelope ({"schema": {...}, "payload": ...}). ConnectEnvelopeSchema finds
// it, and ConnectSchemaColumns derives from a struct schema the columns its
// fields fill, as WriterColumns does for registry schemas.

// connectSchema is a Connect schema as JsonConverter writes it.
type connectSchema struct {
	Type       string            `json:"type"`
	Optional   bool              `json:"optional"`
	Name       string            `json:"name"`
	Field      string            `json:"field"`
	Doc        string            `json:"doc"`
	Parameters map[string]string `json:"parameters"`
	Fields     []connectSchema   `json:"fields"`
	Items      *connectSchema    `json:"items"`
	Keys       *connectSchema    `json:"keys"`
	Values     *connectSchema    `json:"values"`
}

// ConnectEnvelopeSchema returns the raw "schema" member of a JsonConverter
// envelope, nil when the value is not one (or has no schema).
func ConnectEnvelopeSchema(value []byte) []byte {
	s := jsonScanner{data: value}
	if s.peek() != '{' {
		return nil
	}
	s.pos++
	for s.peek() == '"' {
		name, _, reason := s.str()
		if reason != "" || s.peek() != ':' {
			return nil
		}
		s.pos++
		s.ws()
		start := s.pos
		if _, reason := s.value(1); reason != "" {
			return nil
		}
		if string(name) == "schema" {
			return value[start:s.pos]
		}
		if s.peek() != ',' {
			return nil
		}
		s.pos++
	}
	return nil
}

// ConnectSchemaColumns derives the columns a Connect struct schema's
// fields fill (each nullable), by the type JsonConverter writes each Connect
// type as and the json conversion reads. Fields no column type holds are
// returned in notAdded, as WriterColumns does.
func ConnectSchemaColumns(schema []byte) (cols []fluss.Column, notAdded []FieldNotAdded, err error) {
	var cs connectSchema
	if err := json.Unmarshal(schema, &cs); err != nil {
		return nil, nil, fmt.Errorf("the envelope's schema is not a Connect schema: %w", err)
	}
	if cs.Type != "struct" {
		return nil, nil, fmt.Errorf("the envelope's schema is %s, not a struct: it has no fields to make columns of", cs.Type)
	}
	cols = make([]fluss.Column, 0, len(cs.Fields))
	for _, f := range cs.Fields {
		t, err := connectColumnType(&f, 0)
		if err != nil {
			notAdded = append(notAdded, FieldNotAdded{Field: f.Field, Type: f.Type, Reason: err.Error()})
			continue
		}
		cols = append(cols, fluss.Column{Name: f.Field, Type: t, Comment: f.Doc})
	}
	if len(cols) == 0 && len(notAdded) > 0 {
		return nil, notAdded, errNoColumns(notAdded)
	}
	return cols, notAdded, nil
}

func connectColumnType(cs *connectSchema, depth int) (fluss.DataType, error) {
	if depth > maxJSONDepth {
		return fluss.DataType{}, fmt.Errorf("nested too deeply")
	}
	switch cs.Name {
	case "org.apache.kafka.connect.data.Date":
		return fluss.Date(), nil
	case "org.apache.kafka.connect.data.Time":
		return fluss.Time(3), nil
	case "org.apache.kafka.connect.data.Timestamp":
		return fluss.TimestampLTZ(3), nil
	case "org.apache.kafka.connect.data.Decimal":
		// JsonConverter writes decimals as base64 unless decimal.format is
		// NUMERIC; a DECIMAL column reads only the latter (the docs say so).
		scale, err := strconv.Atoi(cs.Parameters["scale"])
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("decimal without a scale parameter")
		}
		precision := 38
		if p, err := strconv.Atoi(cs.Parameters["connect.decimal.precision"]); err == nil {
			precision = p
		}
		return decimalColumn(precision, scale)
	}
	switch cs.Type {
	case "int8":
		return fluss.TinyInt(), nil
	case "int16":
		return fluss.SmallInt(), nil
	case "int32":
		return fluss.Int(), nil
	case "int64":
		return fluss.BigInt(), nil
	case "float32":
		return fluss.Float(), nil
	case "float64":
		return fluss.Double(), nil
	case "boolean":
		return fluss.Boolean(), nil
	case "string":
		return fluss.String(), nil
	case "bytes":
		return fluss.Bytes(), nil
	case "array":
		if cs.Items == nil {
			return fluss.DataType{}, fmt.Errorf("an array without items")
		}
		e, err := connectColumnType(cs.Items, depth+1)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("items: %w", err)
		}
		return fluss.Array(e), nil
	case "map":
		if cs.Keys == nil || cs.Values == nil || cs.Keys.Type != "string" {
			return fluss.DataType{}, fmt.Errorf("a map whose keys are not strings (JsonConverter writes it as an array of pairs)")
		}
		v, err := connectColumnType(cs.Values, depth+1)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("values: %w", err)
		}
		return fluss.Map(fluss.String(), v), nil
	case "struct":
		fields := make([]fluss.Field, 0, len(cs.Fields))
		for _, f := range cs.Fields {
			t, err := connectColumnType(&f, depth+1)
			if err != nil {
				return fluss.DataType{}, fmt.Errorf("field %q: %w", f.Field, err)
			}
			fields = append(fields, fluss.Field{Name: f.Field, Type: t, Description: f.Doc})
		}
		return fluss.RowType(fields...), nil
	}
	return fluss.DataType{}, fmt.Errorf("no column type for Connect type %q", cs.Type)
}
