package schemafollow

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Which writer schemas a batch of records names: asked before a batch
// converts (to follow them) and before a route's table is created from
// the batch's first record.

// ErrNoWriterSchema: no record of the batch names a writer schema this
// route can follow (a bad batch; the producer's retry does not fix it).
var ErrNoWriterSchema = errors.New("no writer schema")

// Batch is one Kafka batch as schema following reads it.
type Batch struct {
	Len int
	// Record is record i's value, or (key) its key, and a lookup of its
	// headers (the last header of a key wins, as Kafka clients read them).
	Record func(i int, key bool) (data []byte, header func(string) ([]byte, bool))
	// Framed are the values' registry framings as the produce path parsed
	// them, with their schemas resolved, one per record (registry
	// formats; empty for others).
	Framed []mapping.Serialized
}

// writerSchemas returns the distinct writer schemas of the batch: the
// registry schemas its framed values name, or for Connect's envelope the
// schemas of the values. Consecutive records nearly always share one.
func (b Batch) writerSchemas(format mapping.ValueFormat) []WriterSchema {
	var out []WriterSchema
	if format == mapping.ValueConnectJSON {
		var last uint64
		for i := range b.Len {
			value, _ := b.Record(i, false)
			sch := mapping.ConnectEnvelopeSchema(value)
			if sch == nil {
				continue
			}
			if w := envelopeWriterSchema(sch); w.Digest != last && !slices.ContainsFunc(out, func(o WriterSchema) bool { return o.Digest == w.Digest }) {
				last = w.Digest
				out = append(out, w)
			}
		}
		return out
	}
	var last *mapping.Serialized
	for i := range b.Framed {
		v := &b.Framed[i]
		if v.Schema == nil || v.Err != nil || (last != nil && sameWriter(last, v)) {
			continue
		}
		last = v
		w, err := registryWriterSchema(string(format), v)
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

// first is the writer schema of the batch's first record that has one: of
// its value, or (key) of its key, as spec reads them. A registry format
// resolves the schema through reg. The error wraps ErrNoWriterSchema,
// schemaregistry.ErrUnavailable, or ErrCannotCreate (the writer schema
// makes no columns).
func (b Batch) first(ctx context.Context, reg *schemaregistry.Client, spec mapping.RouteSpec, key bool) (WriterSchema, error) {
	what, format := "value", string(spec.Value.Format)
	if key {
		what, format = "key", string(spec.Key.Format)
	}
	if !key && spec.Value.Format == mapping.ValueConnectJSON {
		for i := range b.Len {
			data, _ := b.Record(i, false)
			if sch := mapping.ConnectEnvelopeSchema(data); sch != nil {
				return envelopeWriterSchema(sch), nil
			}
		}
		return WriterSchema{}, fmt.Errorf("%w: no record of the batch is a Kafka Connect envelope with a schema", ErrNoWriterSchema)
	}
	opts, ok := mapping.SpecFramingOptions(spec, key)
	if !ok || reg == nil {
		return WriterSchema{}, fmt.Errorf("%w: %s.format %s has no writer schema here", ErrNoWriterSchema, what, format)
	}
	for i := range b.Len {
		data, header := b.Record(i, key)
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
			w, err := registryWriterSchema(format, &mapping.Serialized{Ref: ref, Schema: sc})
			if err != nil {
				return WriterSchema{}, fmt.Errorf("%w: the %s's writer schema (id %d): %w", ErrCannotCreate, what, sc.ID, err)
			}
			return w, nil
		case errors.Is(err, schemaregistry.ErrUnknownSchema):
			continue
		case errors.Is(err, schemaregistry.ErrUnavailable):
			return WriterSchema{}, fmt.Errorf("look up %v: %w", ref, err)
		default:
			return WriterSchema{}, fmt.Errorf("%w: look up %v: %w", schemaregistry.ErrUnavailable, ref, err)
		}
	}
	return WriterSchema{}, fmt.Errorf("%w: no record of the batch names a %s writer schema the registry knows", ErrNoWriterSchema, what)
}
