package produce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemafollow"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// The produce path's side of the tables that follow writer schemas
// (package schemafollow): which writer schemas a batch names, following
// them before the batch converts, and holding a batch whose route's table
// is still to be created from it.

// writerSchemas returns the distinct writer schemas of the batch: the
// registry schemas its values name, or the schemas of its Connect
// envelopes. Consecutive records nearly always share one.
func writerSchemas(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) []schemafollow.WriterSchema {
	var out []schemafollow.WriterSchema
	format := route.Spec().Value.Format
	if format == mapping.ValueConnectJSON {
		var last uint64
		for i := range req.Records {
			sch := mapping.ConnectEnvelopeSchema(req.Records[i].Value)
			if sch == nil {
				continue
			}
			if w := schemafollow.EnvelopeWriterSchema(sch); w.Digest != last && !slices.ContainsFunc(out, func(o schemafollow.WriterSchema) bool { return o.Digest == w.Digest }) {
				last = w.Digest
				out = append(out, w)
			}
		}
		return out
	}
	var last *mapping.Serialized
	for i := range cb.framing.values {
		v := &cb.framing.values[i]
		if v.Schema == nil || v.Err != nil || (last != nil && sameWriter(last, v)) {
			continue
		}
		last = v
		w, err := schemafollow.RegistryWriterSchema(string(format), v)
		if err != nil {
			continue // the converter refuses the record, with the reason
		}
		if !slices.ContainsFunc(out, func(o schemafollow.WriterSchema) bool { return o.Registry == w.Registry && o.Message == w.Message }) {
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

// followNeeded reports, without blocking, whether a writer schema of the
// batch has not been checked against the route's table yet.
func (s *Path) followNeeded(st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) bool {
	if s.Follower == nil || !schemafollow.Follows(route) {
		return false
	}
	info := st.Infos[route.Table()]
	for _, w := range writerSchemas(route, req, cb) {
		if !s.Follower.Checked(route, info.SchemaID, w) {
			return true
		}
	}
	return false
}

// follow adds the columns the batch's writer schemas need and returns the
// routes to convert it with (a new generation when columns were added).
// A failure is retriable for the producer: nothing of the batch is written.
func (s *Path) follow(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*Bound, *mapping.Route, error) {
	f := s.Follower
	if f == nil || !schemafollow.Follows(route) {
		return st, route, nil
	}
	for _, w := range writerSchemas(route, req, cb) {
		// Twice at most: a second look after adding finds the table
		// holding w and marks it checked for the new table schema.
		for range 2 {
			info := st.Infos[route.Table()]
			if f.Checked(route, info.SchemaID, w) {
				break
			}
			added, err := f.Follow(ctx, route, info, w)
			if err != nil {
				return st, route, fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
			}
			if !added {
				break
			}
			st = s.state.Load()
			r, ok := st.Routes.Resolve(req.Topic)
			if !ok {
				return st, route, kafkaproto.ErrUnknownTopicOrPartition
			}
			route = r
		}
	}
	return st, route, nil
}

// produceCreating holds a batch of a route whose table does not exist yet
// (follow_schema.create): the table is created from the batch's first
// writer schema, the routes are bound again, and the batch is produced as
// any other. Queued per Kafka partition, so later batches wait for it.
func (s *Path) produceCreating(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultResolveTimeout)
	}
	c := kafkaproto.NewCompletion()
	s.pending.enqueue(mergedQueue(TopicPartition{req.Topic, req.Partition}), func() {
		jctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		stop := context.AfterFunc(s.stopped, cancel)
		defer stop()
		if err := s.createTable(jctx, spec, req); err != nil {
			s.log.Warn("produce: the route's table could not be created from the writer schema", slog.String("route", spec.Name),
				slog.String("table", spec.Table.String()), slog.String("topic", req.Topic), slog.Any("err", err))
			req.Release()
			c.Complete(answer.Failed(err))
			return
		}
		w, err := s.Produce(jctx, req) // routed now; Produce owns req
		if err != nil {
			c.Complete(answer.Failed(err))
			return
		}
		go func() {
			<-w.Done()
			c.Complete(w.Result())
		}()
	})
	return c, nil
}

// createTable creates spec's table from the first writer schema of req's
// records (and, with follow_schema.primary_key_from_key, its primary key
// from the first key's), unless it exists by now, and binds the routes
// again (schemafollow.Follower.CreateTable).
func (s *Path) createTable(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce) error {
	f := s.Follower
	if f == nil {
		return fmt.Errorf("%w: tables are not created here", kafkaproto.ErrUnknownTopicOrPartition)
	}
	exists := func() bool {
		_, ok := s.state.Load().Routes.Resolve(req.Topic)
		return ok
	}
	if exists() {
		return nil
	}
	w, err := s.firstWriterSchema(ctx, spec, req, false)
	if err != nil {
		return err
	}
	var key *schemafollow.WriterSchema
	if spec.FollowSchema.PrimaryKeyFromKey {
		kw, err := s.firstWriterSchema(ctx, spec, req, true)
		if err != nil {
			return err
		}
		key = &kw
	}
	notAdded, err := f.CreateTable(ctx, spec, w, key, exists)
	switch {
	case errors.Is(err, schemafollow.ErrCannotCreate):
		return fmt.Errorf("%w: %w", kafkaproto.ErrInvalidRecord, err)
	case err != nil:
		return fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
	}
	if r, ok := s.state.Load().Routes.Resolve(req.Topic); ok {
		f.WarnNotAdded(r, w, notAdded)
	}
	return nil
}

// firstWriterSchema is the writer schema of req's first record that has
// one: of its value, or (key) of its key.
func (s *Path) firstWriterSchema(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce, key bool) (schemafollow.WriterSchema, error) {
	what, format := "value", string(spec.Value.Format)
	if key {
		what, format = "key", string(spec.Key.Format)
	}
	if !key && spec.Value.Format == mapping.ValueConnectJSON {
		for i := range req.Records {
			if sch := mapping.ConnectEnvelopeSchema(req.Records[i].Value); sch != nil {
				return schemafollow.EnvelopeWriterSchema(sch), nil
			}
		}
		return schemafollow.WriterSchema{}, fmt.Errorf("%w: no record of the batch is a Kafka Connect envelope with a schema", kafkaproto.ErrInvalidRecord)
	}
	opts, ok := mapping.SpecFramingOptions(spec, key)
	if !ok || s.Registry == nil {
		return schemafollow.WriterSchema{}, fmt.Errorf("%w: %s.format %s has no writer schema here", kafkaproto.ErrInvalidRecord, what, format)
	}
	for i := range req.Records {
		kr := &req.Records[i]
		data := kr.Value
		if key {
			data = kr.Key
		}
		if data == nil {
			continue
		}
		ref, _, err := schemaregistry.ParseFraming(data, headerLookup(kr.Headers), opts)
		if err != nil {
			continue
		}
		sc, err := s.Registry.Resolve(ctx, ref)
		switch {
		case err == nil:
			w, err := schemafollow.RegistryWriterSchema(format, &mapping.Serialized{Ref: ref, Schema: sc})
			if err != nil {
				return schemafollow.WriterSchema{}, fmt.Errorf("%w: the %s's writer schema (id %d): %w", kafkaproto.ErrInvalidRecord, what, sc.ID, err)
			}
			return w, nil
		case errors.Is(err, schemaregistry.ErrUnknownSchema):
			continue
		default:
			return schemafollow.WriterSchema{}, fmt.Errorf("%w: %w: look up %v: %w", kafkaproto.ErrRequestTimedOut, errRegistryUnavailable, ref, err)
		}
	}
	return schemafollow.WriterSchema{}, fmt.Errorf("%w: no record of the batch names a %s writer schema the registry knows", kafkaproto.ErrInvalidRecord, what)
}
