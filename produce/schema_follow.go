package produce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemafollow"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// The produce path's side of the tables that follow writer schemas
// (package schemafollow owns the rules): one call before a batch converts,
// one to hold a batch whose route's table is still to be created from it,
// and the Kafka error each failure answers.

// followBatch is the batch as schemafollow reads it.
func followBatch(req *kafkaproto.PartitionProduce, framed []mapping.Serialized) schemafollow.Batch {
	return schemafollow.Batch{Len: len(req.Records), Framed: framed,
		Record: func(i int, key bool) ([]byte, func(string) ([]byte, bool)) {
			kr := &req.Records[i]
			if key {
				return kr.Key, kr.Header
			}
			return kr.Value, kr.Header
		}}
}

// followNeeded reports, without blocking, whether a writer schema of the
// batch has not been checked against the route's table yet.
func (s *Path) followNeeded(st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) bool {
	return s.Follower.Needed(route, st.Infos[route.Table()], followBatch(req, cb.framing.values))
}

// follow adds the columns the batch's writer schemas need and returns the
// routes to convert it with (a new generation when columns were added).
// A failure is retriable for the producer: nothing of the batch is written.
func (s *Path) follow(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*Bound, *mapping.Route, error) {
	route, err := s.Follower.FollowBatch(ctx, route, st.Infos[route.Table()], followBatch(req, cb.framing.values),
		func() (*mapping.Route, *fluss.TableInfo, bool) {
			st = s.state.Load()
			r, ok := st.Routes.Resolve(req.Topic)
			if !ok {
				return nil, nil, false
			}
			return r, st.Infos[r.Table()], true
		})
	switch {
	case errors.Is(err, schemafollow.ErrRouteGone):
		return st, route, fmt.Errorf("%w: %w", kafkaproto.ErrUnknownTopicOrPartition, err)
	case err != nil:
		return st, route, fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
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
		w, err := s.Produce(jctx, req) // routed now; Produce owns req unless it refuses it
		if err != nil {
			req.Release()
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

// createTable creates spec's table from req's first writer schema
// (schemafollow.Follower.CreateFrom) and answers its failure with the
// Kafka error a producer gets: the batch's fault is not retriable.
func (s *Path) createTable(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce) error {
	if s.Follower == nil {
		return fmt.Errorf("%w: tables are not created here", kafkaproto.ErrUnknownTopicOrPartition)
	}
	err := s.Follower.CreateFrom(ctx, spec, followBatch(req, nil), func() (*mapping.Route, bool) {
		return s.state.Load().Routes.Resolve(req.Topic)
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, schemaregistry.ErrUnavailable):
		return fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
	case errors.Is(err, schemafollow.ErrNoWriterSchema), errors.Is(err, schemafollow.ErrCannotCreate):
		return fmt.Errorf("%w: %w", kafkaproto.ErrInvalidRecord, err)
	}
	return fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
}
