package schemafollow

import (
	"fmt"
	"hash/fnv"
	"log/slog"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// WriterSchema is one writer schema records name: a registry schema (for
// Protobuf, with the message the records are), or a Kafka Connect
// envelope's schema.
type WriterSchema struct {
	Registry *schemaregistry.Schema
	// Message is the Protobuf message the records are (a .proto file may
	// declare several; the framing says which).
	Message  string
	Envelope []byte // a Connect envelope's schema
	Digest   uint64 // of Envelope
}

// envelopeWriterSchema is a Connect envelope's schema, keyed by its digest.
func envelopeWriterSchema(sch []byte) WriterSchema {
	h := fnv.New64a()
	h.Write(sch)
	return WriterSchema{Envelope: sch, Digest: h.Sum64()}
}

// registryWriterSchema is the writer schema of a registry-framed value or
// key: for Protobuf, with the message its framing names.
func registryWriterSchema(format string, v *mapping.Serialized) (WriterSchema, error) {
	w := WriterSchema{Registry: v.Schema}
	if format == string(mapping.ValueProtobuf) {
		m, err := mapping.ProtobufMessage(v.Schema, v.Ref)
		if err != nil {
			return w, err
		}
		w.Message = m
	}
	return w, nil
}

// ID names the schema in logs: the registry id (and message), or the
// envelope digest.
func (w WriterSchema) ID() slog.Attr {
	switch {
	case w.Registry != nil && w.Message != "":
		return slog.Group("writer_schema", slog.Int64("id", w.Registry.ID), slog.String("message", w.Message))
	case w.Registry != nil:
		return slog.Int64("schema_id", w.Registry.ID)
	}
	return slog.String("envelope_schema", fmt.Sprintf("%016x", w.Digest))
}

// Columns are the columns the schema's top-level fields fill, and the
// fields no column type holds.
func (w WriterSchema) Columns(format string) ([]fluss.Column, []mapping.FieldNotAdded, error) {
	if w.Registry != nil {
		return mapping.WriterColumns(format, w.Registry, w.Message)
	}
	return mapping.ConnectSchemaColumns(w.Envelope)
}

// keyColumns are the primary-key columns a key's writer schema makes
// (follow_schema.primary_key_from_key): every top-level field, each with a
// column type.
func keyColumns(format string, w WriterSchema) ([]fluss.Column, error) {
	cols, notAdded, err := w.Columns(format)
	if err != nil {
		return nil, err
	}
	if len(notAdded) > 0 {
		return nil, fmt.Errorf("a primary key holds every field of the key, and %s", notAdded[0])
	}
	return cols, nil
}

// columnNames are the names of cols, for logs.
func columnNames(cols []fluss.Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}
