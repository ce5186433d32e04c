package produce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/exactlyonce"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemafollow"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Path connects the Kafka front to the write path: it resolves a topic to
// its route, converts each record into a row, sends rows that do not
// convert to the dead-letter table (or rejects their batch), resolves Fluss
// partitions, appends the rows to the writer and turns the Fluss acks
// into the Kafka answer. With the transaction coordinator it is what the
// gateway's Kafka listeners serve (kafkaproto.Backend).
type Path struct {
	state    atomic.Pointer[Bound]
	acc      *accumulator.Accumulator
	parts    *PartitionCache
	pending  *pendingWrites
	ids      WriterIDs
	Registry *schemaregistry.Client // nil: no schema_registry configured
	eo       *exactlyonce.Writer    // nil: no Fluss client to keep producer states in
	// Transactions stages transactional producers' batches (nil: they are refused).
	Transactions TxnStager
	// Follower adds the columns writer schemas need (nil: none added).
	Follower *schemafollow.Follower
	log      *slog.Logger
	m        *Metrics

	// stopped ends when a shutdown runs out of time: it bounds the appends
	// that no longer follow the request's deadline (see appendAll).
	stopped context.Context
	stop    context.CancelFunc

	batches sync.Pool // *convBatch

	// Appending bounds each table's batches being appended at once (nil:
	// no bound).
	Appending *TableAppends

	// Leaderless reports a table whose buckets have had no leader for a
	// while (the sender's Leaderless; nil: never).
	Leaderless func(tableID int64) bool
}

// TxnStager stages a batch of an open transaction (the transaction
// coordinator); the Path hands it every transactional producer's batch once
// the route is resolved. Stage owns req.
type TxnStager interface {
	Stage(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error)
}

// WriterIDs hands out cluster-wide unique ids (Fluss InitWriter).
type WriterIDs interface {
	InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error)
}

// convBatch holds the converted rows of one Kafka batch until they are all
// appended: a batch is converted whole first, so a record rejected in
// reject mode leaves the whole batch unwritten, as Kafka batches are atomic.
//
// The rows come from the route's converter (mapping.Rows, warm across
// garbage collections); convert takes them and putBatch gives them back.
type convBatch struct {
	convs   []mapping.Converted // rows.Converted once convert ran, else nil
	rows    *mapping.Rows
	conv    *mapping.Converter // what rows came from
	dead    []bool             // record goes to the dead-letter table
	partIDs []int64
	headers []mapping.Header
	rec     mapping.Record
	handles []accumulator.Handle
	framing framing // registry formats only
	// The exactly-once path's split by target (eoGroups), reused.
	groups     []exactlyonce.Group
	groupSizes []int
	groupOf    []int
	ops        []accumulator.Op
}

func New(acc *accumulator.Accumulator, parts *PartitionCache, ids WriterIDs, m *Metrics, log *slog.Logger) *Path {
	stopped, stop := context.WithCancel(context.Background())
	return &Path{acc: acc, parts: parts, pending: newPendingWrites(), ids: ids, m: m, log: log, stopped: stopped, stop: stop}
}

var _ kafkaproto.Backend = (*Path)(nil)

// Loaded reports whether routes have been bound.
func (s *Path) Loaded() bool { return s.state.Load() != nil }

// Current is the generation of bound routes in force (nil before the
// first load).
func (s *Path) Current() *Bound { return s.state.Load() }

// SetState swaps in a new generation of bound routes.
func (s *Path) SetState(st *Bound) { s.state.Store(st) }

// StopAppends ends appends that outlive their request's deadline, and the
// partition resolutions still queued: a shutdown ran out of time.
func (s *Path) StopAppends() { s.stop() }

// Drain waits until every batch queued for partition resolution has been
// appended (or has failed), or until ctx ends.
func (s *Path) Drain(ctx context.Context) error { return s.pending.wait(ctx) }

// Topic implements kafkaproto.Topics: a routed topic has as many partitions
// as its table has buckets.
func (s *Path) Topic(name string) (int32, bool) {
	st := s.state.Load()
	if st == nil {
		return 0, false
	}
	r, ok := st.Routes.Resolve(name)
	if !ok {
		if spec, ok := st.Creating[name]; ok {
			return int32(spec.FollowSchema.Buckets), true // the table it creates gets as many buckets
		}
		return 0, false
	}
	return kafkaPartitions(st, r), true
}

// TopicLeaderless implements kafkaproto.TopicAvailability: the topic's
// table has had buckets without leader for the sender's LeaderWait.
func (s *Path) TopicLeaderless(name string) bool {
	st := s.state.Load()
	if st == nil {
		return false
	}
	r, ok := st.Routes.Resolve(name)
	return ok && s.tableLeaderless(st, r)
}

func (s *Path) tableLeaderless(st *Bound, r *mapping.Route) bool {
	t := st.Tables[r.Table()]
	return t != nil && s.Leaderless != nil && s.Leaderless(t.ID())
}

// kafkaPartitions is a routed topic's partition count: the table's bucket
// count when the gateway first bound it. It stays put across reloads even
// when the table's count is altered (Fluss 1.0 applies a new count only to
// partitions created afterwards): a Kafka producer must never see its
// topic's partition count change. Rows of a log table without bucket key
// go to bucket (Kafka partition mod the Fluss partition's count); keyed
// rows go where their key hashes for that count.
func kafkaPartitions(st *Bound, r *mapping.Route) int32 {
	if t := st.Tables[r.Table()]; t != nil {
		return int32(t.NumBuckets())
	}
	return int32(r.Converter().NumBuckets())
}

// AllTopics implements kafkaproto.Topics. Pattern routes cannot be listed;
// their topics answer when asked by name.
func (s *Path) AllTopics() []kafkaproto.TopicInfo {
	st := s.state.Load()
	if st == nil {
		return nil
	}
	var out []kafkaproto.TopicInfo
	for _, r := range st.Routes.All() {
		if t := r.Spec().Topic; t != "" {
			out = append(out, kafkaproto.TopicInfo{Name: t, Partitions: kafkaPartitions(st, r)})
		}
	}
	for t, spec := range st.Creating {
		out = append(out, kafkaproto.TopicInfo{Name: t, Partitions: int32(spec.FollowSchema.Buckets)})
	}
	return out
}

// NextProducerID implements kafkaproto.ProducerIDs with Fluss writer ids,
// which Fluss allocates cluster-wide, so every gateway instance sharing the
// cluster hands out distinct producer ids without talking to the others.
// In the gateway s.ids is a producerIDs (producer_ids.go): a bounded wait,
// a back-off while Fluss keeps failing, and failures that already carry
// their Kafka code (kafkaError passes them through).
func (s *Path) NextProducerID(ctx context.Context) (int64, error) {
	st := s.state.Load()
	var tables []fluss.TablePath
	if st != nil {
		tables = st.Routes.Tables()
	}
	id, err := s.ids.InitWriter(ctx, tables...)
	if err != nil {
		return 0, answer.Error(fmt.Errorf("allocate producer id: %w", err))
	}
	return id, nil
}

// Produce implements kafkaproto.Sink. It runs on the Kafka connection's
// read goroutine: it converts the batch, and when every writer schema
// (schema-registry formats) and every Fluss partition it needs is known it
// appends the rows at once. Otherwise (a schema to fetch from the
// registry, a partition to look up or create: up to three Fluss calls and
// a poll) the batch waits in its Kafka partition's queue, in arrival
// order, and a goroutine fetches, converts, resolves and appends it, so the
// connection keeps reading. A batch refused with an error is released by
// kafkaproto (see kafkaproto.Sink), so the refusals here just return.
func (s *Path) Produce(ctx context.Context, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	st := s.state.Load()
	if st == nil {
		return nil, fmt.Errorf("%w: routes not loaded yet", kafkaproto.ErrLeaderNotAvailable)
	}
	route, ok := st.Routes.Resolve(req.Topic)
	if !ok {
		if spec, ok := st.Creating[req.Topic]; ok {
			return s.produceCreating(ctx, spec, req)
		}
		return nil, kafkaproto.ErrUnknownTopicOrPartition
	}
	if s.tableLeaderless(st, route) {
		// Refused before anything is queued: held, its records would wait
		// for a leader that may not come back soon.
		return nil, fmt.Errorf("%w: table %s has no leader", kafkaproto.ErrLeaderNotAvailable, route.Table())
	}
	if req.TransactionalID != "" {
		if s.Transactions == nil {
			return nil, fmt.Errorf("%w: transactions are not served for route %s", kafkaproto.ErrTransactionalIDAuthorizationFailed, route.Name())
		}
		return s.Transactions.Stage(ctx, st, route, req)
	}
	if req.ProducerID >= 0 && s.WritesExactlyOnce(route) {
		if w, done, err := s.admitCached(ctx, st, route, req); done {
			return w, err
		}
		return s.produceExactlyOnce(ctx, st, route, req, nil)
	}
	cb := s.getBatch(len(req.Records))
	queue := mergedQueue(TopicPartition{req.Topic, req.Partition})
	prepared, err := s.prepareCached(st, route, req, cb)
	if err != nil {
		s.putBatch(cb)
		return nil, err
	}
	if prepared && !s.pending.busy(queue) && s.resolveCached(st, route, req, cb) {
		// The writer copies the rows: the decoded records can go back
		// once they are appended.
		defer req.Release()
		defer s.putBatch(cb)
		return s.write(ctx, st, route, req, cb)
	}

	// The request's context ends when the handler returns; keep its deadline.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultResolveTimeout)
	}
	c := kafkaproto.NewCompletion()
	s.pending.enqueue(queue, func() {
		defer req.Release()
		defer s.putBatch(cb)
		jctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		stop := context.AfterFunc(s.stopped, cancel)
		defer stop()
		if !prepared {
			var err error
			if st, route, err = s.prepareFramed(jctx, st, route, req, cb); err != nil {
				c.Complete(answer.Failed(err))
				return
			}
		}
		if err := s.resolvePartitions(jctx, st, route, req, cb); err != nil {
			s.log.Warn("produce: partition resolution failed", slog.String("topic", req.Topic),
				slog.Int("partition", int(req.Partition)), slog.Any("err", err))
			c.Complete(answer.Failed(answer.Error(err)))
			return
		}
		w, err := s.write(jctx, st, route, req, cb)
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

// defaultResolveTimeout bounds a queued batch's partition resolution when
// its request has no deadline (kafkaproto always sets one).
const defaultResolveTimeout = 30 * time.Second

// write appends a converted batch whose partitions are resolved and returns
// its completion.
func (s *Path) write(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (kafkaproto.PartitionWrite, error) {
	leave, err := s.enterTable(st, route, req)
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := s.appendAll(ctx, st, route, cb); err != nil {
		// Rows appended before the failure (only possible when the
		// writer closes, its own wait limit ends or a shutdown runs out
		// of time) are still written: Kafka has no partial success, and a
		// retry may duplicate them.
		if s.stopped.Err() != nil {
			// The client should retry on another instance.
			err = fmt.Errorf("%w: gateway stopping: %w", kafkaproto.ErrNotLeaderOrFollower, err)
		}
		s.log.Warn("produce: append failed", slog.String("topic", req.Topic),
			slog.Int("partition", int(req.Partition)), slog.Int("appended", len(cb.handles)),
			slog.Int("records", len(req.Records)), slog.Any("err", err))
		return nil, answer.Error(err)
	}
	s.m.recordsIn(route.Name(), len(req.Records))
	if req.Acks == 0 {
		return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}), nil
	}
	return awaitHandles(cb.handles, s.writeDone(route.Name())), nil
}

// convert converts every record of the batch. In reject mode the first
// rejected records fail the whole batch with record_errors (counted as
// rejected); in dlq mode they are marked for the dead-letter table.
func (s *Path) convert(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) error {
	conv := route.Converter()
	dlq := route.DLQ()
	if cb.rows == nil {
		cb.rows, cb.conv = conv.GetRows(len(req.Records)), conv
	}
	cb.convs = cb.rows.Converted
	var rejects []kafkaproto.RecordError
	for i := range req.Records {
		kr := &req.Records[i]
		rec := &cb.rec
		*rec = mapping.Record{
			Topic:     req.Topic,
			Partition: req.Partition,
			Offset:    int64(kr.OffsetDelta),
			Index:     kr.Index,
			Timestamp: kr.Timestamp,
			Key:       kr.Key,
			Value:     kr.Value,
		}
		if len(cb.framing.values) > i {
			rec.SerializedValue, rec.SerializedKey = cb.framing.values[i], cb.framing.keys[i]
		}
		if len(kr.Headers) > 0 {
			start := len(cb.headers)
			for _, h := range kr.Headers {
				cb.headers = append(cb.headers, mapping.Header{Key: h.Key, Value: h.Value})
			}
			rec.Headers = cb.headers[start:len(cb.headers):len(cb.headers)]
		}
		err := conv.Convert(rec, &cb.convs[i])
		if err == nil {
			continue
		}
		var re *mapping.RecordError
		if !errors.As(err, &re) {
			return answer.Error(fmt.Errorf("convert record %d of %s/%d: %w", kr.Index, req.Topic, req.Partition, err))
		}
		if dlq != nil {
			dlq.Build(rec, route.Name(), re.Message(), &cb.convs[i])
			cb.dead[i] = true
			s.m.deadLettered(route.Name())
			s.log.Debug("record to dead-letter table", slog.String("route", route.Name()),
				slog.String("topic", req.Topic), slog.Int("partition", int(req.Partition)),
				slog.Int("index", int(kr.Index)), slog.String("reason", re.Message()))
			continue
		}
		rejects = append(rejects, kafkaproto.RecordError{Index: kr.Index, Message: re.Message()})
	}
	if len(rejects) > 0 {
		s.m.rejected(route.Name(), len(req.Records))
		s.log.Info("batch rejected", slog.String("route", route.Name()), slog.String("table", route.Table().String()), slog.String("topic", req.Topic),
			slog.Int("partition", int(req.Partition)), slog.Int("rejected", len(rejects)),
			slog.Int("first_index", int(rejects[0].Index)), slog.String("reason", rejects[0].Message))
		return &kafkaproto.RecordsError{Records: rejects}
	}
	return nil
}

// resolveCached fills the batch's partition ids from the cache alone and
// reports whether every one was there.
func (s *Path) resolveCached(st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) bool {
	return s.fillPartitionIDs(route, req, cb, func(name string) (int64, int, error) {
		if id, n, ok := s.parts.cached(st.Infos[route.Table()].TableID, name); ok {
			return id, n, nil
		}
		return 0, 0, errNotCached
	}) == nil
}

// resolvePartitions fills the batch's partition ids, looking up (and
// creating) partitions not cached yet. It may block on Fluss, honouring ctx.
// A failure leaves the whole batch unwritten.
func (s *Path) resolvePartitions(ctx context.Context, st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) error {
	info := st.Infos[route.Table()]
	return s.fillPartitionIDs(route, req, cb, func(name string) (int64, int, error) {
		return s.parts.id(ctx, info, name)
	})
}

// errNotCached stops resolveCached at the first partition not cached.
var errNotCached = errors.New("partition not cached")

// fillPartitionIDs sets each row's partition id and, where the partition's
// bucket count differs from the table's (Fluss 1.0 per-partition counts),
// chooses its bucket again for that count.
func (s *Path) fillPartitionIDs(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch, id func(name string) (int64, int, error)) error {
	conv := route.Converter()
	partID, partName, buckets := int64(accumulator.NoPartition), "", 0
	for i := range cb.convs {
		c := &cb.convs[i]
		if cb.dead[i] {
			cb.partIDs[i] = accumulator.NoPartition
			continue
		}
		if c.Partition != partName {
			partName, partID, buckets = c.Partition, accumulator.NoPartition, 0
			if partName != "" {
				var err error
				if partID, buckets, err = id(partName); err != nil {
					return err
				}
			}
		}
		if buckets > 0 && buckets != conv.NumBuckets() {
			conv.Rebucket(c, req.Partition, buckets)
		}
		cb.partIDs[i] = partID
	}
	return nil
}

// appendAll appends every converted row to the writer; the batch's
// partition ids are resolved already.
//
// Only the first append honours the request's deadline: once a row of the
// batch is accepted, the rest must follow, or a failed batch would still be
// partly written and the producer's retry would duplicate that part. Later
// appends still end on the writer's own buffer wait limit, on close,
// and when a shutdown runs out of time.
// The request then answers late; an idempotent producer's retry meanwhile
// waits for this write in kafkaproto instead of writing again.
func (s *Path) appendAll(ctx context.Context, st *Bound, route *mapping.Route, cb *convBatch) error {
	table := st.Tables[route.Table()]
	var dlqTable *accumulator.Table
	if d := route.DLQ(); d != nil {
		dlqTable = st.Tables[d.Table()]
	}
	for i := range cb.convs {
		if i == 1 {
			ctx = s.stopped
		}
		c := &cb.convs[i]
		var (
			h   accumulator.Handle
			err error
		)
		if cb.dead[i] {
			h, err = s.acc.Append(ctx, dlqTable, accumulator.NoPartition, accumulator.StickyBucket, fluss.WriteAppend, nil, c.Row)
		} else {
			h, err = s.acc.Append(ctx, table, cb.partIDs[i], c.Bucket, c.Op, c.Key, c.Row)
		}
		if err != nil {
			return fmt.Errorf("append record %d of route %s: %w", i, route.Name(), err)
		}
		cb.handles = append(cb.handles, h)
	}
	return nil
}

func (s *Path) getBatch(n int) *convBatch {
	cb, _ := s.batches.Get().(*convBatch)
	if cb == nil {
		cb = &convBatch{}
	}
	cb.convs = nil
	cb.dead = slices.Grow(cb.dead[:0], n)[:n]
	clear(cb.dead)
	cb.partIDs = slices.Grow(cb.partIDs[:0], n)[:n]
	cb.headers = cb.headers[:0]
	cb.handles = slices.Grow(cb.handles[:0], n)
	return cb
}

func (s *Path) putBatch(cb *convBatch) {
	if cb.rows != nil {
		cb.conv.PutRows(cb.rows)
		cb.rows, cb.conv, cb.convs = nil, nil, nil
	}
	// Very large batches would pin their buffers; let the GC have them.
	if cap(cb.dead) > 4096 {
		return
	}
	cb.rec = mapping.Record{}
	// awaitHandles keeps the handles slice only when the rows span several
	// Fluss batches (its goroutine reads it); for one batch it copies the
	// first handle. Reuse the slice only when it is not retained.
	retained := false
	for i := 1; i < len(cb.handles) && !retained; i++ {
		retained = cb.handles[i].Batch() != cb.handles[0].Batch()
	}
	if retained {
		cb.handles = nil
	} else {
		clear(cb.handles) // they point to Fluss batches and their bytes
		cb.handles = cb.handles[:0]
	}
	clear(cb.headers)
	// The groups' ops point to the rows and the tables.
	clear(cb.ops)
	clear(cb.groups)
	cb.ops, cb.groups = cb.ops[:0], cb.groups[:0]
	// The payloads point into the request frame: do not pin it.
	clear(cb.framing.values)
	clear(cb.framing.keys)
	cb.framing.values, cb.framing.keys = cb.framing.values[:0], cb.framing.keys[:0]
	s.batches.Put(cb)
}

// writeDone returns what runs once when a Kafka batch's rows are all
// acknowledged or one failed: it observes the latency, and when Fluss says
// a partition no longer exists (dropped by retention, or re-created) it
// forgets the cached partition id, so the producer's retry resolves it anew.
func (s *Path) writeDone(route string) func(time.Duration, *accumulator.Batch, error) {
	observe := s.m.produceDone(route)
	return func(d time.Duration, failed *accumulator.Batch, err error) {
		observe(d)
		if failed == nil {
			return
		}
		switch {
		case errors.Is(err, fluss.ErrPartitionNotExists):
			s.parts.forget(failed.Table().ID(), failed.PartitionID())
		case errors.Is(err, fluss.ErrInvalidBucketRouting) && failed.PartitionID() != accumulator.NoPartition:
			// The partition has another bucket count than we bucketed
			// with (nothing of it was stored): forget the count and the
			// writer's layout, so the producer's retry (a retriable error
			// to Kafka) is bucketed with the count read anew.
			s.parts.forget(failed.Table().ID(), failed.PartitionID())
			failed.Table().ForgetPartition(failed.PartitionID())
			s.log.Warn("produce: partition bucket count changed; re-bucketing on the producer's retry",
				slog.String("table", failed.Table().Path().String()), slog.Int64("partition_id", failed.PartitionID()))
		}
	}
}

// awaitHandles completes once every record's batch is acknowledged: with the
// first record's offset on success, or the first error. done runs once then,
// with the time from the Produce call and the first failed batch.
func awaitHandles(handles []accumulator.Handle, done func(time.Duration, *accumulator.Batch, error)) kafkaproto.PartitionWrite {
	start := time.Now()
	// Records of one Kafka batch share few Fluss batches, consecutively.
	batches := make([]accumulator.Handle, 0, 1)
	for i, h := range handles {
		if i == 0 || h.Batch() != handles[i-1].Batch() {
			batches = append(batches, h)
		}
	}
	if len(batches) == 1 {
		return newHandleWrite(handles[0], start, done)
	}
	c := kafkaproto.NewCompletion()
	go func() {
		var (
			err    error
			failed *accumulator.Batch
		)
		for _, h := range batches {
			<-h.Done()
			if e := h.Err(); e != nil && err == nil {
				err, failed = e, h.Batch()
			}
		}
		done(time.Since(start), failed, err)
		c.Complete(result(handles[0], err))
	}()
	return c
}

// handleWrite is the PartitionWrite of a Kafka batch that landed in a single
// Fluss batch: no goroutine needed. kafkaproto keeps every write in its
// producer's idempotence window (the last five batches of each producer id
// and partition, up to ProducerStateTTL), so the write must not pin the
// Fluss batch and its encoded bytes: the first Result keeps the outcome and
// drops the handle.
type handleWrite struct {
	done    <-chan struct{}
	start   time.Time
	observe func(time.Duration, *accumulator.Batch, error)

	mu    sync.Mutex         // guards first, res, taken
	first accumulator.Handle // zero once taken
	res   kafkaproto.PartitionResult
	taken bool
}

func newHandleWrite(first accumulator.Handle, start time.Time, observe func(time.Duration, *accumulator.Batch, error)) *handleWrite {
	return &handleWrite{done: first.Done(), start: start, observe: observe, first: first}
}

func (w *handleWrite) Done() <-chan struct{} { return w.done }

func (w *handleWrite) Result() kafkaproto.PartitionResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.taken {
		w.taken = true
		err := w.first.Err()
		var failed *accumulator.Batch
		if err != nil {
			failed = w.first.Batch()
		}
		w.observe(time.Since(w.start), failed, err)
		w.res = result(w.first, err)
		w.first = accumulator.Handle{}
	}
	return w.res
}

// result is a Kafka batch's answer. While the table's tablet server reports
// KV storage pressure the answer carries the writer's hold-back as throttle
// time, so producers slow down the Kafka way instead of filling the buffer.
func result(first accumulator.Handle, err error) kafkaproto.PartitionResult {
	throttle := answer.Throttle(err)
	if b := first.Batch(); b != nil {
		throttle = max(throttle, b.Table().Throttle())
	}
	if err != nil {
		return kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: answer.Error(err), ThrottleTime: throttle}
	}
	return kafkaproto.PartitionResult{BaseOffset: first.Offset(), LogAppendTime: -1, LogStartOffset: -1, ThrottleTime: throttle}
}
