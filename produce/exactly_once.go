package produce

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/exactlyonce"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/producerstate"
	"github.com/prometheus/client_golang/prometheus"
)

// The produce path's side of exactly once: which batches take it, their
// rows split by target bucket, and the queue per producer-partition in
// front of package exactlyonce's Writer.

// OwnsIdempotence implements kafkaproto.IdempotenceOwner: exactly-once
// routes admit idempotent batches from the Fluss-held state, not from one
// instance's memory.
func (s *Path) OwnsIdempotence(topic string) bool {
	st := s.state.Load()
	if st == nil || s.eo == nil {
		return false
	}
	r, ok := st.Routes.Resolve(topic)
	return ok && s.WritesExactlyOnce(r)
}

// WritesExactlyOnce reports whether route writes idempotent producers' batches
// exactly once: set so, or left unset while the producer-state store is
// usable. The store only ever becomes usable, so a batch admitted by the
// in-memory window may go on to the exactly-once path (its state is then
// new there, which accepts it), never the reverse.
func (s *Path) WritesExactlyOnce(route *mapping.Route) bool {
	switch route.Spec().ExactlyOnce {
	case mapping.ExactlyOnceOn:
		return true
	case mapping.ExactlyOnceOff:
		return false
	}
	return s.eo.Usable()
}

// PrepareExactlyOnce opens the producer-state store for routes before they
// are swapped in (Writer.Prepare).
func (s *Path) PrepareExactlyOnce(ctx context.Context, routes *mapping.Routes) error {
	return s.eo.Prepare(ctx, routes)
}

var _ kafkaproto.IdempotenceOwner = (*Path)(nil)

// produceExactlyOnce queues the batch of an idempotent producer on an
// exactly-once route behind its producer's earlier batches of the Kafka
// partition (its first batch on this instance looks the producer state up, which
// blocks on Fluss) and returns its completion. replay, when not nil, marks
// a committed transaction's batch (see exactlyonce.Writer.Admit).
func (s *Path) produceExactlyOnce(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, replay exactlyonce.WriterAgreement) (kafkaproto.PartitionWrite, error) {
	start := time.Now()
	if s.eo == nil {
		return nil, fmt.Errorf("%w: exactly-once routes are not available in this gateway", kafkaproto.ErrUnknownServerError)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultResolveTimeout)
	}
	// Queued batches pin their decoded records while the connection reads
	// on: bounded per table as the other routes' appends are (see write).
	leave, err := s.enterTable(st, route, req)
	if err != nil {
		return nil, err
	}
	c := kafkaproto.NewCompletion()
	s.pending.enqueue(pendingKey{TopicPartition{req.Topic, req.Partition}, req.ProducerID}, func() {
		defer leave()
		jctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		stop := context.AfterFunc(s.stopped, cancel)
		defer stop()
		s.writeExactlyOnce(jctx, st, route, req, c, start, replay)
	})
	return c, nil
}

// admitCached writes an exactly-once batch on the connection's read
// goroutine, as the merged path appends, when nothing makes it wait for
// Fluss: no earlier batch of its producer-partition is queued, its
// producer state is in memory (exactlyonce.Writer.TryAdmit), and no
// writer schema or partition must be fetched. done is false when it left
// the batch untouched for produceExactlyOnce. Batches that take it need no
// goroutine, and convert one at a time per connection, so the converted
// rows of thousands of producer-partitions are not all held at once.
func (s *Path) admitCached(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce) (w kafkaproto.PartitionWrite, done bool, err error) {
	if s.eo == nil {
		return nil, false, nil
	}
	if s.pending.busy(pendingKey{TopicPartition{req.Topic, req.Partition}, req.ProducerID}) {
		return nil, false, nil
	}
	start := time.Now()
	cb := s.getBatch(len(req.Records))
	defer s.putBatch(cb)
	prepared, err := s.prepareCached(st, route, req, cb)
	if err != nil {
		return nil, true, err // refused: a record the route refuses
	}
	if !prepared || !s.resolveCached(st, route, req, cb) {
		return nil, false, nil
	}
	leave, err := s.enterTable(st, route, req)
	if err != nil {
		return nil, true, err
	}
	defer leave()
	c := kafkaproto.NewCompletion()
	key := producerstate.Key{ProducerID: req.ProducerID, Topic: req.Topic, Partition: req.Partition}
	w, err = s.eo.TryAdmit(ctx, key, req, route.Table(), routeFingerprint(st, route), eoGroups(st, route, req, cb), c,
		exactlyonce.Timing{Start: start, Observe: s.m.produceDone(route.Name())})
	switch {
	case errors.Is(err, exactlyonce.ErrWouldBlock):
		return nil, false, nil
	case err != nil:
		return nil, true, err
	}
	if w == c {
		s.m.recordsIn(route.Name(), len(req.Records))
	}
	// The rows are copied into Fluss batches: the decoded records can go.
	req.Release()
	return w, true, nil
}

// writeExactlyOnce converts, admits, writes and (in a goroutine) commits
// one batch; c gets its answer.
func (s *Path) writeExactlyOnce(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, c *kafkaproto.Completion, start time.Time, replay exactlyonce.WriterAgreement) {
	// The writer copies the rows when they are written; the decoded records
	// (and their charge to the read budget) go back once this returns.
	defer req.Release()
	cb := s.getBatch(len(req.Records))
	defer s.putBatch(cb)
	// Converted before any sequence is assigned: a rejected batch uses
	// none, and the producer's next batch reuses its sequence.
	var err error
	if st, route, err = s.prepare(ctx, st, route, req, cb); err != nil {
		c.Complete(answer.Failed(err))
		return
	}
	// Partition names resolve to the ids that exist (or are created), so a
	// replay finds the targets the original write used.
	if !s.resolveCached(st, route, req, cb) {
		if err := s.resolvePartitions(ctx, st, route, req, cb); err != nil {
			s.log.Warn("produce: partition resolution failed", slog.String("topic", req.Topic),
				slog.Int("partition", int(req.Partition)), slog.Any("err", err))
			c.Complete(answer.Failed(answer.Error(err)))
			return
		}
	}
	groups := eoGroups(st, route, req, cb)
	key := producerstate.Key{ProducerID: req.ProducerID, Topic: req.Topic, Partition: req.Partition}
	w, err := s.eo.Admit(ctx, key, req, route.Table(), routeFingerprint(st, route), groups, c, exactlyonce.Timing{Start: start, Observe: s.m.produceDone(route.Name())}, replay)
	if err != nil {
		c.Complete(answer.Failed(err))
		return
	}
	if w != c {
		go func() { // a re-sent batch: the original's answer
			<-w.Done()
			c.Complete(w.Result())
		}()
		return
	}
	s.m.recordsIn(route.Name(), len(req.Records))
}

// eoGroups splits the converted batch by target bucket, in order of first
// appearance. Dead-letter rows go to the bucket of their Kafka partition
// (never a sticky one: a replay must find the same target). The groups and
// their ops live in cb and are reused by its next batch: Admit copies the
// rows into Fluss batches before it returns.
func eoGroups(st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) []exactlyonce.Group {
	table := st.Tables[route.Table()]
	var dlqTable *accumulator.Table
	if d := route.DLQ(); d != nil {
		dlqTable = st.Tables[d.Table()]
	}
	target := func(i int) (*accumulator.Table, accumulator.Op, producerstate.Target) {
		cv := &cb.convs[i]
		if cb.dead[i] {
			op := accumulator.Op{Kind: fluss.WriteAppend, Row: cv.Row}
			return dlqTable, op, producerstate.Target{TableID: dlqTable.ID(), PartitionID: accumulator.NoPartition, Bucket: req.Partition % int32(dlqTable.NumBuckets())}
		}
		op := accumulator.Op{Kind: cv.Op, Key: cv.Key, Row: cv.Row}
		return table, op, producerstate.Target{TableID: table.ID(), PartitionID: cb.partIDs[i], Bucket: cv.Bucket}
	}
	// First pass: each record's group, and the size of each group.
	groups, sizes := cb.groups[:0], cb.groupSizes[:0]
	cb.groupOf = slices.Grow(cb.groupOf[:0], len(cb.convs))[:len(cb.convs)]
	for i := range cb.convs {
		t, _, tk := target(i)
		j := 0
		for j < len(groups) && groups[j].Target != tk {
			j++
		}
		if j == len(groups) {
			groups = append(groups, exactlyonce.Group{Table: t, Target: tk})
			sizes = append(sizes, 0)
		}
		cb.groupOf[i] = j
		sizes[j]++
	}
	// Each group's ops are a slice of one buffer, in record order.
	cb.ops = slices.Grow(cb.ops[:0], len(cb.convs))[:len(cb.convs)]
	at := 0
	for j, n := range sizes {
		groups[j].Ops = cb.ops[at : at : at+n]
		at += n
	}
	for i := range cb.convs {
		_, op, _ := target(i)
		g := &groups[cb.groupOf[i]]
		g.Ops = append(g.Ops, op)
	}
	cb.groups, cb.groupSizes = groups, sizes
	return groups
}

// routeFingerprint identifies what decides where and how a route writes:
// its spec and the ids and schema ids of its tables. A state written under
// another fingerprint is not replayed (docs/exactly-once.md, 5.2).
func routeFingerprint(st *Bound, route *mapping.Route) int64 {
	if fp, ok := st.fingerprints.Load(route.Name()); ok {
		return fp.(int64)
	}
	fp := computeFingerprint(st, route)
	st.fingerprints.Store(route.Name(), fp)
	return fp
}

func computeFingerprint(st *Bound, route *mapping.Route) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%+v", route.Spec())
	paths := []fluss.TablePath{route.Table()}
	if d := route.DLQ(); d != nil {
		paths = append(paths, d.Table())
	}
	for _, path := range paths {
		if info := st.Infos[path]; info != nil {
			fmt.Fprintf(h, "|%d/%d/%d", info.TableID, info.SchemaID, info.Descriptor.BucketCount)
		}
	}
	return int64(h.Sum64() &^ (1 << 63))
}

// EnableExactlyOnce lets routes with exactly_once keep their producers'
// state in store (the producer-state table) and registers the exactly-once
// metrics with reg. Without it such routes are refused.
func (s *Path) EnableExactlyOnce(store exactlyonce.Store, reg prometheus.Registerer) error {
	s.eo = exactlyonce.New(s.stopped, store, s.acc, s.ids, s.log)
	return s.RegisterExactlyOnce(reg)
}

// RegisterExactlyOnce registers the exactly-once metrics with reg; until
// it is called they are not recorded.
func (s *Path) RegisterExactlyOnce(reg prometheus.Registerer) error {
	if s.eo == nil {
		return nil
	}
	return s.eo.Register(reg)
}

// Replay writes a committed transaction's batch through the exactly-once
// path (see exactlyonce.Writer.Admit for what its sequence means); the
// instances that replay it agree on new writer ids through agree.
func (s *Path) Replay(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, agree exactlyonce.WriterAgreement) (kafkaproto.PartitionWrite, error) {
	if agree == nil {
		return nil, fmt.Errorf("%w: a replay needs a writer agreement", kafkaproto.ErrUnknownServerError)
	}
	return s.produceExactlyOnce(ctx, st, route, req, agree)
}

// ExactlyOnceUsable reports whether the producer-state store opened.
func (s *Path) ExactlyOnceUsable() bool { return s.eo.Usable() }
