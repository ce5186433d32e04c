package produce

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// framing holds, per record of a batch whose route reads a schema-registry
// format, its value and key as mapping needs them (mapping.Serialized).
type framing struct {
	values, keys []mapping.Serialized
}

func (f *framing) reset(n int) {
	f.values = growSerialized(f.values, n)
	f.keys = growSerialized(f.keys, n)
	clear(f.values)
	clear(f.keys)
}

func growSerialized(s []mapping.Serialized, n int) []mapping.Serialized {
	if cap(s) < n {
		return make([]mapping.Serialized, n)
	}
	return s[:n]
}

// frame parses the framing of every record's registry-format value and key
// and fills in the writer schemas the registry client has cached. It
// reports whether some schema still has to be fetched (resolveSchemas).
// A framing that does not parse, or a schema the registry said it does not
// know, makes that record bad (Serialized.Err), not the batch.
func (s *Path) frame(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (missing bool) {
	conv := route.Converter()
	vOpts, vReg := conv.FramingOptions(false)
	kOpts, kReg := conv.FramingOptions(true)
	if !vReg && !kReg {
		cb.framing.values, cb.framing.keys = cb.framing.values[:0], cb.framing.keys[:0]
		return false
	}
	cb.framing.reset(len(req.Records))
	// Records of one batch nearly always name the same schema: remember the
	// last answer instead of asking the cache (and building its key) again.
	type memo struct {
		kind   schemaregistry.IDKind
		id     int64
		guid   string
		schema *schemaregistry.Schema
		err    error
		ok     bool
	}
	var last memo
	cached := func(ref schemaregistry.Ref) (*schemaregistry.Schema, error, bool) {
		if last.ok && last.kind == ref.Kind && last.id == ref.ID && last.guid == ref.GUID {
			return last.schema, last.err, true
		}
		schema, err, ok := s.Registry.Cached(ref)
		last = memo{kind: ref.Kind, id: ref.ID, guid: ref.GUID, schema: schema, err: err, ok: ok}
		return schema, err, ok
	}
	one := func(data []byte, header func(string) ([]byte, bool), opts schemaregistry.Options, out *mapping.Serialized) {
		if data == nil {
			return // a tombstone, or no key: mapping decides
		}
		ref, payload, err := schemaregistry.ParseFraming(data, header, opts)
		if err != nil {
			out.Err = err
			return
		}
		out.Ref, out.Payload = ref, payload
		if s.Registry == nil {
			out.Err = errNoRegistry
			return
		}
		schema, err, ok := cached(ref)
		switch {
		case !ok:
			missing = true
		case err != nil:
			out.Err = err
		default:
			out.Schema = schema
		}
	}
	for i := range req.Records {
		kr := &req.Records[i]
		if vReg {
			one(kr.Value, kr.Header, vOpts, &cb.framing.values[i])
		}
		if kReg {
			one(kr.Key, kr.Header, kOpts, &cb.framing.keys[i])
		}
	}
	return missing
}

// errNoRegistry marks records of a registry format when no schema_registry
// is configured (configs refuses such a file; this guards the produce path).
var errNoRegistry = errors.New("no schema_registry is configured")

// resolveSchemas fetches the writer schemas frame did not find cached. It
// may block on the registry, honouring ctx. An unknown schema marks its
// record bad; an unavailable registry fails the whole batch (retriable).
func (s *Path) resolveSchemas(ctx context.Context, route string, cb *convBatch) error {
	fetch := func(out *mapping.Serialized) error {
		if out.Err != nil || out.Schema != nil || out.Payload == nil {
			return nil // resolved, bad, or nothing to decode (no key, a tombstone)
		}
		schema, err := s.Registry.Resolve(ctx, out.Ref)
		switch {
		case err == nil:
			out.Schema = schema
		case errors.Is(err, schemaregistry.ErrUnknownSchema):
			out.Err = err
		default:
			s.m.registryUnavailable(route)
			return fmt.Errorf("%w: look up %v: %w", kafkaproto.ErrRequestTimedOut, out.Ref, err)
		}
		return nil
	}
	for i := range cb.framing.values {
		if err := fetch(&cb.framing.values[i]); err != nil {
			return err
		}
		if err := fetch(&cb.framing.keys[i]); err != nil {
			return err
		}
	}
	return nil
}
