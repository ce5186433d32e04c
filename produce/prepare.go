package produce

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
func (s *Path) prepare(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*Bound, *mapping.Route, error) {
	s.frame(route, req, cb)
	return s.prepareFramed(ctx, st, route, req, cb)
}

// prepareFramed is prepare once frame has run (the merged path frames on
// the connection's read goroutine, to see whether anything must be
// fetched first).
func (s *Path) prepareFramed(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*Bound, *mapping.Route, error) {
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
func (s *Path) prepareCached(st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (done bool, err error) {
	if s.frame(route, req, cb) || s.followNeeded(st, route, req, cb) {
		return false, nil
	}
	return true, s.convert(route, req, cb)
}

// Check prepares a batch as any other and drops its rows: a transaction's
// batch is refused at once for a record its route refuses, while the
// producer can still abort; the apply prepares it again at the commit.
func (s *Path) Check(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce) error {
	cb := s.getBatch(len(req.Records))
	defer s.putBatch(cb)
	_, _, err := s.prepare(ctx, st, route, req, cb)
	return err
}
