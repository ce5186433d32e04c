package main

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
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// sink connects the Kafka front to the write path: it resolves a topic to
// its route, converts each record into a row, and appends the rows to the
// accumulator. It implements kafkaproto.Sink, kafkaproto.Topics and
// kafkaproto.ProducerIDs.
type sink struct {
	state atomic.Pointer[routeState]
	acc   *accumulator.Accumulator
	parts *partitionCache
	ids   writerIDs
	log   *slog.Logger
	m     *gatewayMetrics

	// stopped ends when a shutdown runs out of time: it bounds the appends
	// that no longer follow the request's deadline (see appendAll).
	stopped context.Context
	stop    context.CancelFunc

	batches sync.Pool // *convBatch
}

// writerIDs hands out cluster-wide unique ids (Fluss InitWriter).
type writerIDs interface {
	InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error)
}

// convBatch holds the converted rows of one Kafka batch until they are all
// appended: a batch is converted whole first, so a record rejected in
// reject mode leaves the whole batch unwritten, as Kafka batches are atomic.
type convBatch struct {
	convs   []mapping.Converted
	dead    []bool // record goes to the dead-letter table
	partIDs []int64
	headers []mapping.Header
	rec     mapping.Record
	handles []accumulator.Handle
}

func newSink(acc *accumulator.Accumulator, parts *partitionCache, ids writerIDs, m *gatewayMetrics, log *slog.Logger) *sink {
	stopped, stop := context.WithCancel(context.Background())
	return &sink{acc: acc, parts: parts, ids: ids, m: m, log: log, stopped: stopped, stop: stop}
}

// Topic implements kafkaproto.Topics: a routed topic has as many partitions
// as its table has buckets.
func (s *sink) Topic(name string) (int32, bool) {
	st := s.state.Load()
	if st == nil {
		return 0, false
	}
	r, ok := st.routes.Resolve(name)
	if !ok {
		return 0, false
	}
	return int32(r.Converter().NumBuckets()), true
}

// AllTopics implements kafkaproto.Topics. Pattern routes cannot be listed;
// their topics answer when asked by name.
func (s *sink) AllTopics() []kafkaproto.TopicInfo {
	st := s.state.Load()
	if st == nil {
		return nil
	}
	var out []kafkaproto.TopicInfo
	for _, r := range st.routes.All() {
		if t := r.Spec().Topic; t != "" {
			out = append(out, kafkaproto.TopicInfo{Name: t, Partitions: int32(r.Converter().NumBuckets())})
		}
	}
	return out
}

// NextProducerID implements kafkaproto.ProducerIDs with Fluss writer ids,
// which Fluss allocates cluster-wide, so every gateway instance sharing the
// cluster hands out distinct producer ids without talking to the others.
func (s *sink) NextProducerID(ctx context.Context) (int64, error) {
	st := s.state.Load()
	var tables []fluss.TablePath
	if st != nil {
		tables = st.routes.Tables()
	}
	id, err := s.ids.InitWriter(ctx, tables...)
	if err != nil {
		return 0, kafkaError(fmt.Errorf("allocate producer id: %w", err))
	}
	return id, nil
}

// Produce implements kafkaproto.Sink.
func (s *sink) Produce(ctx context.Context, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	st := s.state.Load()
	if st == nil {
		return nil, fmt.Errorf("%w: routes not loaded yet", kafkaproto.ErrLeaderNotAvailable)
	}
	route, ok := st.routes.Resolve(req.Topic)
	if !ok {
		return nil, kafkaproto.ErrUnknownTopicOrPartition
	}
	cb := s.getBatch(len(req.Records))
	defer s.putBatch(cb)

	if err := s.convert(route, req, cb); err != nil {
		s.m.rejected(route.Name(), len(req.Records))
		return nil, err
	}
	if err := s.appendAll(ctx, st, route, cb); err != nil {
		// Rows appended before the failure (only possible when the
		// accumulator closes, its own wait limit ends or a shutdown runs out
		// of time) are still written: Kafka has no partial success, and a
		// retry may duplicate them.
		if s.stopped.Err() != nil {
			// The client should retry on another instance.
			err = fmt.Errorf("%w: gateway stopping: %w", kafkaproto.ErrNotLeaderOrFollower, err)
		}
		s.log.Warn("produce: append failed", slog.String("topic", req.Topic),
			slog.Int("partition", int(req.Partition)), slog.Int("appended", len(cb.handles)),
			slog.Int("records", len(req.Records)), slog.Any("err", err))
		return nil, kafkaError(err)
	}
	s.m.recordsIn(route.Name(), len(req.Records))
	if req.Acks == 0 {
		return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}), nil
	}
	return awaitHandles(cb.handles, s.writeDone(route.Name())), nil
}

// convert converts every record of the batch. In reject mode the first
// rejected records fail the whole batch with record_errors; in dlq mode
// they are marked for the dead-letter table.
func (s *sink) convert(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) error {
	conv := route.Converter()
	dlq := route.DLQ()
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
			return kafkaError(fmt.Errorf("convert record %d of %s/%d: %w", kr.Index, req.Topic, req.Partition, err))
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
		s.log.Info("batch rejected", slog.String("route", route.Name()), slog.String("topic", req.Topic),
			slog.Int("partition", int(req.Partition)), slog.Int("rejected", len(rejects)),
			slog.Int("first_index", int(rejects[0].Index)), slog.String("reason", rejects[0].Message))
		return &kafkaproto.RecordsError{Records: rejects}
	}
	return nil
}

// appendAll appends every converted row to the accumulator.
//
// Partitions are resolved (created if need be) for every row before the
// first append, under the request's deadline, so that a failure to resolve
// one leaves the whole batch unwritten. Only the first append honours the
// request's deadline: once a row of the batch is accepted, the rest must
// follow, or a failed batch would still be partly written and the
// producer's retry would duplicate that part. Later appends still end on
// the accumulator's own buffer wait limit, on close, and when a shutdown
// runs out of time.
// The request then answers late; an idempotent producer's retry meanwhile
// waits for this write in kafkaproto instead of writing again.
func (s *sink) appendAll(ctx context.Context, st *routeState, route *mapping.Route, cb *convBatch) error {
	table := st.tables[route.Table()]
	info := st.infos[route.Table()]
	var dlqTable *accumulator.Table
	if d := route.DLQ(); d != nil {
		dlqTable = st.tables[d.Table()]
	}
	// Resolve (and create) every partition first: a failure must leave the
	// whole batch unwritten.
	partID, partName := int64(accumulator.NoPartition), ""
	for i := range cb.convs {
		c := &cb.convs[i]
		if !cb.dead[i] && c.Partition != partName {
			partName, partID = c.Partition, accumulator.NoPartition
			if partName != "" {
				var err error
				if partID, err = s.parts.id(ctx, info, partName); err != nil {
					return err
				}
			}
		}
		cb.partIDs[i] = partID
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
			h, err = s.acc.Append(ctx, dlqTable, accumulator.NoPartition, accumulator.StickyBucket, c.Row)
		} else {
			partID := cb.partIDs[i]
			switch c.Op {
			case mapping.OpAppend:
				h, err = s.acc.Append(ctx, table, partID, c.Bucket, c.Row)
			case mapping.OpUpsert:
				h, err = s.acc.Upsert(ctx, table, partID, c.Bucket, c.Key, c.Row)
			case mapping.OpDelete:
				h, err = s.acc.Delete(ctx, table, partID, c.Bucket, c.Key)
			default:
				err = fmt.Errorf("unexpected op %v", c.Op)
			}
		}
		if err != nil {
			return fmt.Errorf("append record %d of route %s: %w", i, route.Name(), err)
		}
		cb.handles = append(cb.handles, h)
	}
	return nil
}

func (s *sink) getBatch(n int) *convBatch {
	cb, _ := s.batches.Get().(*convBatch)
	if cb == nil {
		cb = &convBatch{}
	}
	if cap(cb.convs) < n {
		cb.convs = append(cb.convs[:cap(cb.convs)], make([]mapping.Converted, n-cap(cb.convs))...)
	}
	cb.convs = cb.convs[:n]
	cb.dead = slices.Grow(cb.dead[:0], n)[:n]
	clear(cb.dead)
	cb.partIDs = slices.Grow(cb.partIDs[:0], n)[:n]
	cb.headers = cb.headers[:0]
	cb.handles = make([]accumulator.Handle, 0, n) // handed to the completion
	return cb
}

func (s *sink) putBatch(cb *convBatch) {
	// Very large batches would pin their row buffers; let the GC have them.
	if cap(cb.convs) > 4096 {
		return
	}
	cb.rec = mapping.Record{}
	cb.handles = nil
	clear(cb.headers)
	s.batches.Put(cb)
}

// writeDone returns what runs once when a Kafka batch's rows are all
// acknowledged or one failed: it observes the latency, and when Fluss says
// a partition no longer exists (dropped by retention, or re-created) it
// forgets the cached partition id, so the producer's retry resolves it anew.
func (s *sink) writeDone(route string) func(time.Duration, *accumulator.Batch, error) {
	observe := s.m.produceDone(route)
	return func(d time.Duration, failed *accumulator.Batch, err error) {
		observe(d)
		if failed != nil && errors.Is(err, fluss.ErrPartitionNotExists) {
			s.parts.forget(failed.Table().ID(), failed.PartitionID())
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

func result(first accumulator.Handle, err error) kafkaproto.PartitionResult {
	if err != nil {
		return kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: kafkaError(err)}
	}
	return kafkaproto.PartitionResult{BaseOffset: first.Offset(), LogAppendTime: -1, LogStartOffset: -1}
}
