package schemafollow

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Which writer schemas a batch of records names: the produce path asks
// before it converts a batch (to follow them) and before it creates a
// route's table from the batch's first record.

// ErrNoWriterSchema: no record of the batch names a writer schema this
// route can follow (a bad batch; the producer's retry does not fix it).
var ErrNoWriterSchema = errors.New("no writer schema")

// ErrRegistryUnavailable wraps a registry failure that a retry may fix.
var ErrRegistryUnavailable = errors.New("schema registry unavailable")

// BatchWriterSchemas returns the distinct writer schemas of a batch of n
// records: the registry schemas its framed values name (framed, one per
// record), or for Connect's envelope the schemas of the values (value(i)).
// Consecutive records nearly always share one.
func BatchWriterSchemas(format mapping.ValueFormat, n int, value func(i int) []byte, framed []mapping.Serialized) []WriterSchema {
	var out []WriterSchema
	if format == mapping.ValueConnectJSON {
		var last uint64
		for i := range n {
			sch := mapping.ConnectEnvelopeSchema(value(i))
			if sch == nil {
				continue
			}
			if w := EnvelopeWriterSchema(sch); w.Digest != last && !slices.ContainsFunc(out, func(o WriterSchema) bool { return o.Digest == w.Digest }) {
				last = w.Digest
				out = append(out, w)
			}
		}
		return out
	}
	var last *mapping.Serialized
	for i := range framed {
		v := &framed[i]
		if v.Schema == nil || v.Err != nil || (last != nil && sameWriter(last, v)) {
			continue
		}
		last = v
		w, err := RegistryWriterSchema(string(format), v)
		if err != nil {
			continue // the converter refuses the record, with the reason
		}
		if !slices.ContainsFunc(out, func(o WriterSchema) bool { return o.Registry == w.Registry && o.Message == w.Message }) {
			out = append(out, w)
		}
	}
	return out
}

// sameWriter reports whether two framed values name the same schema and
// message.
func sameWriter(a, b *mapping.Serialized) bool {
	return a.Schema == b.Schema && a.Ref.MessageName == b.Ref.MessageName && slices.Equal(a.Ref.MessageIndexes, b.Ref.MessageIndexes)
}

// FirstWriterSchema is the writer schema of the first of n records that
// has one: of its value, or (key) of its key, as spec reads them
// (record(i) is the record's bytes and its header lookup). A registry
// format resolves the schema through reg. The error wraps
// ErrNoWriterSchema, ErrRegistryUnavailable, or says why the writer schema
// cannot make columns.
func FirstWriterSchema(ctx context.Context, reg *schemaregistry.Client, spec mapping.RouteSpec, key bool, n int,
	record func(i int) (data []byte, header func(string) ([]byte, bool))) (WriterSchema, error) {
	what, format := "value", string(spec.Value.Format)
	if key {
		what, format = "key", string(spec.Key.Format)
	}
	if !key && spec.Value.Format == mapping.ValueConnectJSON {
		for i := range n {
			data, _ := record(i)
			if sch := mapping.ConnectEnvelopeSchema(data); sch != nil {
				return EnvelopeWriterSchema(sch), nil
			}
		}
		return WriterSchema{}, fmt.Errorf("%w: no record of the batch is a Kafka Connect envelope with a schema", ErrNoWriterSchema)
	}
	opts, ok := mapping.SpecFramingOptions(spec, key)
	if !ok || reg == nil {
		return WriterSchema{}, fmt.Errorf("%w: %s.format %s has no writer schema here", ErrNoWriterSchema, what, format)
	}
	for i := range n {
		data, header := record(i)
		if data == nil {
			continue
		}
		ref, _, err := schemaregistry.ParseFraming(data, header, opts)
		if err != nil {
			continue
		}
		sc, err := reg.Resolve(ctx, ref)
		switch {
		case err == nil:
			w, err := RegistryWriterSchema(format, &mapping.Serialized{Ref: ref, Schema: sc})
			if err != nil {
				return WriterSchema{}, fmt.Errorf("the %s's writer schema (id %d): %w", what, sc.ID, err)
			}
			return w, nil
		case errors.Is(err, schemaregistry.ErrUnknownSchema):
			continue
		default:
			return WriterSchema{}, fmt.Errorf("%w: look up %v: %w", ErrRegistryUnavailable, ref, err)
		}
	}
	return WriterSchema{}, fmt.Errorf("%w: no record of the batch names a %s writer schema the registry knows", ErrNoWriterSchema, what)
}
