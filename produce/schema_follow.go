package produce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemafollow"
)

// The produce path's side of the tables that follow writer schemas
// (package schemafollow): which writer schemas a batch names, following
// them before the batch converts, and holding a batch whose route's table
// is still to be created from it.

// writerSchemas returns the distinct writer schemas of the batch
// (schemafollow.BatchWriterSchemas).
func writerSchemas(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) []schemafollow.WriterSchema {
	return schemafollow.BatchWriterSchemas(route.Spec().Value.Format, len(req.Records),
		func(i int) []byte { return req.Records[i].Value }, cb.framing.values)
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
// one: of its value, or (key) of its key (schemafollow.FirstWriterSchema),
// with the Kafka error a producer gets when there is none.
func (s *Path) firstWriterSchema(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce, key bool) (schemafollow.WriterSchema, error) {
	w, err := schemafollow.FirstWriterSchema(ctx, s.Registry, spec, key, len(req.Records), func(i int) ([]byte, func(string) ([]byte, bool)) {
		kr := &req.Records[i]
		if key {
			return kr.Key, headerLookup(kr.Headers)
		}
		return kr.Value, headerLookup(kr.Headers)
	})
	switch {
	case err == nil:
		return w, nil
	case errors.Is(err, schemafollow.ErrRegistryUnavailable):
		return w, fmt.Errorf("%w: %w: %w", kafkaproto.ErrRequestTimedOut, errRegistryUnavailable, err)
	}
	return w, fmt.Errorf("%w: %w", kafkaproto.ErrInvalidRecord, err)
}
