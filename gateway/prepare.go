package gateway

import (
	"context"
	"log/slog"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// prepare turns a Kafka batch into rows, the same way on every path (the
// merged path, exactly once, a transaction's staging and its apply): it
// parses the registry framings of values and keys, fetches the writer
// schemas not cached, lets the route's table follow them
// (follow_schema.add_columns) and converts every record (a record the
// route refuses fails the batch, or goes to the dead-letter table). It
// returns the routes to write with: a new generation when columns were
// added. A failure leaves the whole batch unwritten.
func (s *bridge) prepare(ctx context.Context, st *routeState, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*routeState, *mapping.Route, error) {
	s.frame(route, req, cb)
	return s.prepareFramed(ctx, st, route, req, cb)
}

// prepareFramed is prepare once frame has run (the merged path frames on
// the connection's read goroutine, to see whether anything must be
// fetched first).
func (s *bridge) prepareFramed(ctx context.Context, st *routeState, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*routeState, *mapping.Route, error) {
	if err := s.resolveSchemas(ctx, route.Name(), cb); err != nil {
		s.log.Warn("produce: schema lookup failed; the producer will retry", slog.String("topic", req.Topic),
			slog.Int("partition", int(req.Partition)), slog.Any("err", err))
		return st, route, err
	}
	if s.followNeeded(st, route, req, cb) {
		var err error
		if st, route, err = s.follow(ctx, st, route, req, cb); err != nil {
			s.log.Warn("produce: columns for a writer schema not added; the producer will retry", slog.String("topic", req.Topic),
				slog.Int("partition", int(req.Partition)), slog.Any("err", err))
			return st, route, err
		}
	}
	return st, route, s.convert(route, req, cb)
}

// prepareCached is prepare without blocking, on the connection's read
// goroutine: done is false when a writer schema must be fetched or
// followed first (prepareFramed then, off that goroutine).
func (s *bridge) prepareCached(st *routeState, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (done bool, err error) {
	if s.frame(route, req, cb) || s.followNeeded(st, route, req, cb) {
		return false, nil
	}
	return true, s.convert(route, req, cb)
}
