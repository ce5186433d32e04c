package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/fluss"
)

// sender drains ready batches from the accumulator and writes them to
// Fluss: the per-broker sink side of the Writer.
type sender struct {
	cfg  Config
	idem bool
	acc  *accumulator
	tr   Transport
	log  *slog.Logger
	m    *sendMetrics

	// Loop-owned state: touched only by the goroutine running run.
	buckets map[*bucketQueue]*bucketState
	sealed  map[sealedKey]*sealedState
	leaders map[tableKey]*leaderCache
	// queuedTail is, per (server, table), the queued signal of the request
	// sent last: the next one is written after it (see request.after).
	queuedTail   map[groupKey]chan struct{}
	writerID     int64
	initRunning  bool
	initRetryAt  time.Time
	initAttempts int
	initErr      error
	drainStart   int
	again        bool
	rng          *rand.Rand

	inflightReqs atomic.Int64

	// Events from the goroutines the loop starts.
	evMu   sync.Mutex
	events []event
	evWake chan struct{}
	wg     sync.WaitGroup

	runMu   sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

type tableKey struct {
	tableID, partitionID int64
}

// bucketState is the sender's view of one queue (table, partition, bucket).
type bucketState struct {
	backoffUntil time.Time
	// throttleUntil holds the bucket back after its server reported KV
	// storage pressure (not a retry: no attempt is counted).
	throttleUntil time.Time
	retryAttempts int
	// inflight: batches drained and not completed (sent, or waiting for a
	// retry), in sequence order under idempotence.
	inflight  []*Batch
	writerID  int64 // the writer id nextSeq/lastAcked belong to
	nextSeq   int32
	lastAcked int32
}

type leaderCache struct {
	leaders    []int32 // -1: unknown
	valid      bool
	refreshing bool
	gen        int
	retryAt    time.Time
	attempts   int
}

// request is one ProduceLog/PutKv call: one table on one tablet server.
type request struct {
	server  int32
	table   *Table
	batches []*Batch
	// per batch, captured at drain time by the loop
	writerID        []int64
	seq             []int32
	lastAckedAtSend []int32
	// Requests to one (server, table) are built concurrently but queued on
	// the connection in drain order, so a bucket's batch sequences reach the
	// server in order: after is closed once the previous request was queued
	// (nil for none), and queued is closed once this one is.
	after, queued chan struct{}
}

type response struct {
	req      *request
	results  []fluss.BucketResult
	err      error
	buildErr []error
	latency  time.Duration
	sent     bool
}

type leaderResult struct {
	key     tableKey
	gen     int
	leaders []int32
	err     error
}

type initResult struct {
	writerID int64
	err      error
}

type event struct {
	resp    *response
	leaders *leaderResult
	init    *initResult
}

// newSender returns a sender for acc writing through tr, for a validated
// cfg with defaults applied. It starts nothing.
func newSender(cfg Config, acc *accumulator, tr Transport, o options, reg prometheus.Registerer) (*sender, error) {
	s := &sender{
		cfg:        cfg,
		idem:       !cfg.DisableIdempotence,
		acc:        acc,
		tr:         tr,
		log:        o.logger,
		buckets:    make(map[*bucketQueue]*bucketState),
		sealed:     make(map[sealedKey]*sealedState),
		queuedTail: make(map[groupKey]chan struct{}),
		leaders:    make(map[tableKey]*leaderCache),
		writerID:   noSequence,
		rng:        rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)),
		evWake:     make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	m, err := newSendMetrics(reg, s)
	if err != nil {
		return nil, err
	}
	s.m = m
	return s, nil
}

// run drains and sends until the accumulator is closed and every batch has
// completed (then it returns nil), or until ctx ends (then it stops every
// request, fails every batch not yet acknowledged with ErrStopped and returns
// ctx's error). It starts one goroutine per write request in flight and per
// metadata or writer-id lookup, and waits for all of them before returning.
func (s *sender) run(ctx context.Context) error {
	s.runMu.Lock()
	if s.started {
		s.runMu.Unlock()
		return errors.New("writer: Run called twice")
	}
	s.started = true
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.runMu.Unlock()
	defer close(s.done)
	defer cancel()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		s.processEvents(ctx)
		if ctx.Err() != nil {
			return s.stop(ctx)
		}
		if s.acc.closed.Load() && s.acc.incompleteCount() == 0 && s.inflightReqs.Load() == 0 {
			cancel()
			s.wg.Wait()
			s.log.Info("sender stopped: all batches completed")
			return nil
		}
		next := s.drain(ctx, time.Now())
		if s.again {
			s.again = false
			s.selfWake()
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
		case <-s.acc.wakeCh:
		case <-s.evWake:
		case <-timer.C:
		}
	}
}

// stop fails everything after the run context ended.
func (s *sender) stop(ctx context.Context) error {
	s.wg.Wait() // request goroutines see the cancelled context and return
	s.evMu.Lock()
	for _, ev := range s.events {
		if ev.resp != nil { // answered or cancelled: its batches fail below
			s.inflightReqs.Add(-1)
		}
	}
	s.events = nil
	s.evMu.Unlock()
	n := s.acc.abort(ErrStopped)
	for _, st := range s.buckets {
		for _, b := range st.inflight {
			if b.complete(-1, fmt.Errorf("write to table %s bucket %d: %w", b.Table().Path(), b.Bucket(), ErrStopped)) {
				n++
			}
		}
		st.inflight = nil
	}
	for k, ss := range s.sealed {
		for _, b := range ss.inflight {
			if b.complete(-1, fmt.Errorf("write to table %s bucket %d: %w", b.Table().Path(), b.Bucket(), ErrStopped)) {
				n++
			}
		}
		delete(s.sealed, k)
	}
	if n > 0 {
		s.log.Warn("sender stopped with batches not acknowledged", slog.Int("batches", n))
	}
	return context.Cause(ctx)
}

// close closes the accumulator (no new records) and waits until run has
// sent everything and returned, or until ctx ends: then it stops run, which
// fails whatever was not acknowledged with ErrStopped, and returns an error.
// close is idempotent; without run it only fails what is queued.
func (s *sender) close(ctx context.Context) error {
	defer s.acc.prebuilding.Wait() // every batch is complete by then: they end at once
	s.acc.close()
	s.runMu.Lock()
	started := s.started
	s.runMu.Unlock()
	if !started {
		if n := s.acc.abort(ErrStopped); n > 0 {
			return fmt.Errorf("writer: close before run: %d batches failed with %w", n, ErrStopped)
		}
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		select {
		case <-s.done: // both ready: everything was sent after all
			return nil
		default:
		}
		s.cancel()
		<-s.done
		return fmt.Errorf("writer: close: %w; batches not acknowledged failed with %w", ctx.Err(), ErrStopped)
	}
}

func (s *sender) selfWake() {
	select {
	case s.evWake <- struct{}{}:
	default:
	}
}

func (s *sender) post(ev event) {
	s.evMu.Lock()
	s.events = append(s.events, ev)
	s.evMu.Unlock()
	s.selfWake()
}

// processEvents handles what the goroutines posted. Once ctx has ended it
// leaves them to stop: a request cancelled by ctx posts its event after the
// cancellation, so checking ctx under evMu cannot miss one.
func (s *sender) processEvents(ctx context.Context) {
	s.evMu.Lock()
	if ctx.Err() != nil {
		s.evMu.Unlock()
		return
	}
	evs := s.events
	s.events = nil
	s.evMu.Unlock()
	now := time.Now()
	for _, ev := range evs {
		switch {
		case ev.resp != nil:
			s.handleResponse(ev.resp, now)
		case ev.leaders != nil:
			s.handleLeaders(ev.leaders, now)
		case ev.init != nil:
			s.handleInit(ev.init, now)
		}
	}
}

func (s *sender) state(q *bucketQueue) *bucketState {
	st := s.buckets[q]
	if st == nil {
		st = &bucketState{writerID: noSequence, lastAcked: -1}
		s.buckets[q] = st
	}
	return st
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

type groupKey struct {
	server  int32
	tableID int64
}

// slotKey is one bucket's slot in a request. Fluss keeps one records entry
// per bucket of a request (a second one for the same bucket replaces the
// first: ServerRpcMessageUtils.getProduceLogData), so a drain pass sends
// at most one batch per bucket, merged or sealed.
type slotKey struct {
	tableID, partitionID int64
	bucket               int32
}

// drain pops at most one ready batch per bucket, groups them by (tablet
// server, table) and starts one request per group. It returns when the
// loop must look again by itself (linger, back-off, deadline), zero if only
// an event can make progress.
func (s *sender) drain(ctx context.Context, now time.Time) time.Time {
	queues := s.acc.queueList()
	if len(queues) == 0 {
		return time.Time{}
	}
	force := s.acc.forceReady()
	var next time.Time
	var groups map[groupKey]*request
	var order []*request
	var serverBytes map[int32]int
	var slots map[slotKey]bool
	start := s.drainStart % len(queues)
	s.drainStart++
	for i := range queues {
		q := queues[(start+i)%len(queues)]
		if q.empty() {
			continue
		}
		b, size, readyAt := q.peek(force)
		if b == nil {
			continue
		}
		deadline := b.created.Add(s.cfg.DeliveryTimeout)
		if !now.Before(deadline) {
			if q.pop(b) {
				s.expire(b)
				s.again = true
			}
			continue
		}
		st := s.state(q)
		if !readyAt.IsZero() && readyAt.After(now) && len(st.inflight) > 0 {
			// Latency-driven batching (franz-go's producer works this
			// way): an idle bucket sends at once; while one of its batches
			// is in flight the next one grows, up to Linger or full.
			next = earliest(next, readyAt)
			continue
		}
		if st.backoffUntil.After(now) {
			next = earliest(next, st.backoffUntil)
			continue
		}
		if st.throttleUntil.After(now) {
			next = earliest(next, st.throttleUntil)
			continue
		}
		retry := b.attempts > 0
		slot := slotKey{q.table.ID(), q.partitionID, q.bucket}
		if slots[slot] {
			s.again = true // the bucket's slot is taken in this pass
			continue
		}
		if q.sealed && !s.sealedReady(b) {
			continue
		}
		if !q.sealed && s.idem && retry && b.writerID != s.writerID {
			// Stamped under a writer id that was reset: resending it could
			// duplicate or reorder.
			if q.pop(b) {
				s.finish(b, st, -1, fmt.Errorf("resend batch: %w", ErrWriterReset))
				s.again = true
			}
			continue
		}
		leader, ok := s.leader(ctx, q, now, &next)
		if !ok {
			next = earliest(next, deadline)
			continue
		}
		if q.sealed {
			// stamped by the caller; sealedReady checked order and cap
		} else if s.idem {
			if s.writerID < 0 {
				s.maybeInitWriter(ctx, now, &next)
				next = earliest(next, deadline)
				continue
			}
			if retry {
				if len(st.inflight) == 0 || st.inflight[0] != b {
					continue // an earlier batch of the bucket is unresolved
				}
			} else {
				if len(st.inflight) >= s.cfg.MaxInflightPerBucket {
					continue
				}
				if st.writerID != s.writerID {
					if len(st.inflight) > 0 {
						continue // old writer's batches still unresolved
					}
					st.writerID, st.nextSeq, st.lastAcked = s.writerID, 0, -1
				}
			}
		} else if !retry && len(st.inflight) >= s.cfg.MaxInflightPerBucket {
			continue
		}
		if serverBytes[leader] > 0 && serverBytes[leader]+size > s.cfg.MaxRequestSize {
			s.again = true // next pass, another request
			continue
		}
		if !q.pop(b) {
			continue
		}
		if !q.empty() {
			s.again = true // one batch per bucket per pass: look again at once
		}
		switch {
		case retry:
		case q.sealed:
			ss := s.sealedOf(b)
			ss.inflight = append(ss.inflight, b)
		default:
			if s.idem {
				b.stamp(s.writerID, st.nextSeq)
				st.nextSeq++
			}
			st.inflight = append(st.inflight, b)
		}
		b.attempts++
		if groups == nil {
			groups = make(map[groupKey]*request)
			serverBytes = make(map[int32]int)
			slots = make(map[slotKey]bool)
		}
		slots[slot] = true
		serverBytes[leader] += size
		gk := groupKey{leader, q.table.ID()}
		req := groups[gk]
		if req == nil {
			req = &request{server: leader, table: q.table}
			groups[gk] = req
			order = append(order, req)
		}
		req.batches = append(req.batches, b)
		req.writerID = append(req.writerID, b.writerID)
		req.seq = append(req.seq, b.sequence)
		req.lastAckedAtSend = append(req.lastAckedAtSend, st.lastAcked)
	}
	for _, req := range order {
		gk := groupKey{req.server, req.table.ID()}
		req.after = s.queuedTail[gk]
		req.queued = make(chan struct{})
		s.queuedTail[gk] = req.queued
		s.inflightReqs.Add(1)
		s.wg.Add(1)
		go s.send(ctx, req)
	}
	return next
}

// send builds the request's batches (outside every lock) and writes them.
type built struct {
	data []byte
	err  error
}

// buildAll builds the request's batches, the ones not built yet (the
// first attempt: encoding and compression, the costly part) in parallel
// on up to GOMAXPROCS goroutines, so that a request of several buckets
// does not compress them one after the other on one core. Retries only
// re-patch their header.
func buildAll(req *request) []built {
	out := make([]built, len(req.batches))
	fresh := 0
	for _, b := range req.batches {
		if !b.built() {
			fresh++
		}
	}
	if fresh < 2 {
		for i, b := range req.batches {
			out[i].data, out[i].err = b.build(req.writerID[i], req.seq[i])
		}
		return out
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, b := range req.batches {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i].data, out[i].err = b.build(req.writerID[i], req.seq[i])
		})
	}
	wg.Wait()
	return out
}

func (s *sender) send(ctx context.Context, req *request) {
	defer s.wg.Done()
	var once sync.Once
	queued := func() { once.Do(func() { close(req.queued) }) }
	defer queued() // never leave the next request waiting
	resp := &response{req: req, buildErr: make([]error, len(req.batches))}
	buckets := make([]fluss.BucketRecords, 0, len(req.batches))
	datas := buildAll(req)
	for i, b := range req.batches {
		data, err := datas[i].data, datas[i].err
		if err != nil {
			resp.buildErr[i] = err
			continue
		}
		buckets = append(buckets, fluss.BucketRecords{
			PartitionID: b.PartitionID(), Bucket: b.Bucket(), Records: data,
			// Fluss 1.0 wire: the count the rows were bucketed with; a server
			// that knows another count for the partition answers
			// INVALID_BUCKET_ROUTING instead of storing misrouted rows.
			RoutingBucketCount: b.queue.buckets,
		})
	}
	if len(buckets) > 0 && req.after != nil {
		select {
		case <-req.after:
		case <-ctx.Done():
		}
	}
	if len(buckets) > 0 {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout+s.cfg.RequestTimeoutOverhead)
		start := time.Now()
		api := "produce_log"
		var pw *fluss.PendingWrite
		if req.table.IsKv() {
			api = "put_kv"
			pw, resp.err = s.tr.SendPutKv(rctx, req.server, &fluss.PutKvRequest{
				TableID:       req.table.ID(),
				Acks:          s.cfg.Acks,
				Timeout:       s.cfg.RequestTimeout,
				TargetColumns: req.table.spec.TargetColumns,
				Buckets:       buckets,
			})
		} else {
			pw, resp.err = s.tr.SendProduceLog(rctx, req.server, &fluss.ProduceLogRequest{
				TableID: req.table.ID(),
				Acks:    s.cfg.Acks,
				Timeout: s.cfg.RequestTimeout,
				Buckets: buckets,
			})
		}
		queued() // queued, or failed to be: the next request may go
		if resp.err == nil {
			resp.results, resp.err = pw.Wait(rctx)
		}
		if resp.err != nil {
			resp.err = fmt.Errorf("%s to tablet server %d: %w", api, req.server, resp.err)
		}
		resp.latency = time.Since(start)
		resp.sent = true
		if resp.err != nil && rctx.Err() != nil && ctx.Err() == nil {
			// Our own per-request deadline, not the caller giving up: a
			// request timeout (retriable; the outcome is unknown).
			resp.err = fmt.Errorf("%w: no answer from tablet server %d within %v (%v)",
				fluss.ErrRequestTimeout, req.server, s.cfg.RequestTimeout+s.cfg.RequestTimeoutOverhead, resp.err)
		}
		cancel()
	}
	s.post(event{resp: resp})
}

func (s *sender) handleResponse(resp *response, now time.Time) {
	s.inflightReqs.Add(-1)
	req := resp.req
	if gk := (groupKey{req.server, req.table.ID()}); s.queuedTail[gk] == req.queued {
		delete(s.queuedTail, gk)
	}
	tm := s.m.table(req.table)
	if resp.sent {
		s.m.requestDone(req.server, req.table.IsKv(), resp.latency)
		tm.latency.Observe(resp.latency.Seconds())
	}
	refresh := false
	sent := 0 // index of b among the buckets sent
	for i, b := range req.batches {
		if err := resp.buildErr[i]; err != nil {
			s.fail(b, err, true)
			continue
		}
		err, offset := resp.err, int64(-1)
		var pressure float32
		if err == nil {
			err = errMissingBucket
			match := func(r *fluss.BucketResult) bool {
				return r.Bucket == b.Bucket() && r.PartitionID == b.PartitionID()
			}
			if sent < len(resp.results) && match(&resp.results[sent]) {
				// fast path: results come in request order
				r := &resp.results[sent]
				err, offset, pressure = r.Err, r.Offset, r.Pressure
			} else {
				for j := range resp.results {
					if r := &resp.results[j]; match(r) {
						err, offset, pressure = r.Err, r.Offset, r.Pressure
						break
					}
				}
			}
		}
		sent++
		s.throttle(b, pressure, err, now, tm)
		if s.handleBatch(req, i, b, offset, err, now, tm) {
			refresh = true
		}
		if errors.Is(err, fluss.ErrInvalidBucketRouting) {
			// The partition has another bucket count than the rows were
			// bucketed with: nothing was stored; the owner re-buckets
			// (Table.ForgetPartition) and the metadata is read anew.
			refresh = true
			s.tr.InvalidatePartitionMetadata(req.table.ID(), b.PartitionID())
		}
	}
	if refresh {
		s.tr.InvalidateTableMetadata(req.table.ID())
		for k, lc := range s.leaders {
			if k.tableID == req.table.ID() {
				lc.valid = false
				lc.gen++
			}
		}
	}
}

// throttle holds a primary-key bucket back after its tablet server
// reported storage pressure: by KvMaxThrottle·p² in the delayed zone
// p ∈ (0,1), and by the whole KvMaxThrottle when the write was refused
// with STORAGE_BACKPRESSURE (Fluss 1.0 KV back-pressure, the rule Fluss's
// own clients apply). The table's throttle is what the Kafka side reports
// to producers as throttle time.
func (s *sender) throttle(b *Batch, pressure float32, err error, now time.Time, tm *tableMetrics) {
	if errors.Is(err, fluss.ErrStorageBackpressure) {
		pressure = 1
	}
	if pressure <= 0 || !b.Table().IsKv() {
		return
	}
	p := float64(min(pressure, 1))
	d := time.Duration(float64(s.cfg.KvMaxThrottle) * p * p)
	tm.pressure(p, d)
	if d <= 0 {
		return
	}
	st := s.state(b.queue)
	until := now.Add(d)
	if until.After(st.throttleUntil) {
		st.throttleUntil = until
	}
	b.Table().throttleTo(until)
}

func errCode(err error) int32 {
	var fe *fluss.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return 0
}

// writtenBefore reports whether an OUT_OF_ORDER_SEQUENCE answer to b says
// the server already holds b: its current sequence for b's writer is at or
// past b's. Sequences of a writer id are contiguous, so the server wrote b.
// This is the answer to a resent batch after a tablet server restart or a
// leader change: writer state comes back from a snapshot holding only each
// writer's last batch, so older batches are no longer recognised as
// duplicates.
func writtenBefore(err error, b *Batch) bool {
	st, ok := fluss.OutOfOrderState(err)
	return ok && b.writerID >= 0 && st.WriterID == b.writerID && st.Incoming == b.sequence && st.Current >= b.sequence
}

const (
	codeOutOfOrderSequence = 31
	codeDuplicateSequence  = 32
	codeUnknownWriterID    = 33
)

// handleBatch applies the per-bucket decision table of Fluss's idempotent
// writer (as the Java client's sender reacts to each error) and reports
// whether leaders should be refreshed.
func (s *sender) handleBatch(req *request, i int, b *Batch, offset int64, err error, now time.Time, tm *tableMetrics) bool {
	if b.queue.sealed {
		s.handleSealed(b, offset, err, now, tm)
		return fluss.NeedsMetadataRefresh(err)
	}
	st := s.state(b.queue)
	if err == nil {
		s.succeed(b, st, offset, tm)
		return false
	}
	code := errCode(err)
	if s.idem && b.writerID >= 0 {
		switch {
		case code == codeDuplicateSequence:
			s.succeed(b, st, -1, tm) // written before; its response was lost
			return false
		case code == codeOutOfOrderSequence && b.writerID == st.writerID && b.sequence <= st.lastAcked:
			s.succeed(b, st, -1, tm) // a later batch was acked after it
			return false
		case code == codeOutOfOrderSequence && writtenBefore(err, b):
			s.succeed(b, st, -1, tm) // resent after a restart that kept only the server's last batch
			return false
		}
	}
	tm.errorCode(code)
	retriable := fluss.IsRetriable(err)
	if s.idem {
		switch code {
		case codeOutOfOrderSequence:
			// Retry while an earlier batch is unresolved, or when the
			// sequence or the acked state moved since this attempt was sent.
			retriable = b.sequence != st.lastAcked+1 || b.sequence != req.seq[i] ||
				st.lastAcked != req.lastAckedAtSend[i]
		case codeUnknownWriterID:
			retriable = b.sequence != req.seq[i]
		}
		if b.writerID != s.writerID {
			s.finish(b, st, -1, fmt.Errorf("%w: %w", ErrWriterReset, err))
			return false
		}
	}
	exhausted := retriable && b.attempts > s.cfg.Retries // resent Retries times already
	if retriable && !exhausted && now.Before(b.created.Add(s.cfg.DeliveryTimeout)) {
		st.backoffUntil = now.Add(s.backoff(st.retryAttempts))
		st.retryAttempts++
		tm.retries.Inc()
		s.log.Debug("retrying batch", slog.String("table", b.Table().Path().String()),
			slog.Int("bucket", int(b.Bucket())), slog.Int("attempt", b.attempts), slog.Any("err", err))
		b.queue.reenqueue(b)
		return fluss.NeedsMetadataRefresh(err)
	}
	switch {
	case exhausted:
		err = fmt.Errorf("no retry left after %d attempts (retries %d): %w", b.attempts, s.cfg.Retries, err)
	case retriable:
		err = fmt.Errorf("%w after %d attempts: %w", ErrDeliveryTimeout, b.attempts, err)
	}
	var fe *fluss.Error
	definite := !retriable && errors.As(err, &fe) && code != codeOutOfOrderSequence && code != codeUnknownWriterID
	s.fail(b, err, definite)
	return fluss.NeedsMetadataRefresh(err)
}

// fail completes b with err. Under idempotence a definite rejection (the
// server did not write it) closes the sequence gap by lowering the
// sequences of the bucket's later batches; any other failure leaves the
// outcome unknown, so the writer id is reset.
func (s *sender) fail(b *Batch, err error, definite bool) {
	st := s.state(b.queue)
	stamped := !b.queue.sealed && s.idem && b.sequence != noSequence && b.writerID == st.writerID
	s.finish(b, st, -1, err)
	if !stamped {
		return
	}
	if definite {
		s.adjustSequences(st, b)
		return
	}
	s.resetWriter(fmt.Sprintf("batch of table %s bucket %d failed with unknown outcome", b.Table().Path(), b.Bucket()))
}

func (s *sender) adjustSequences(st *bucketState, failed *Batch) {
	for _, x := range st.inflight {
		if x.writerID == failed.writerID && x.sequence > failed.sequence {
			x.stamp(x.writerID, x.sequence-1)
		}
	}
	st.nextSeq--
}

func (s *sender) resetWriter(why string) {
	if s.writerID < 0 {
		return
	}
	s.log.Warn("resetting writer id", slog.Int64("writer_id", s.writerID), slog.String("reason", why))
	s.m.writerResets.Inc()
	s.writerID = noSequence
	for _, st := range s.buckets {
		st.writerID = noSequence
	}
}

func (s *sender) succeed(b *Batch, st *bucketState, offset int64, tm *tableMetrics) {
	if !b.queue.sealed && s.idem && b.writerID == st.writerID && b.sequence > st.lastAcked {
		st.lastAcked = b.sequence
	}
	st.retryAttempts = 0
	tm.batchSent(b, s.cfg.BatchSize)
	s.finish(b, st, offset, nil)
}

// finish removes b from the bucket's in-flight list and completes it.
func (s *sender) finish(b *Batch, st *bucketState, offset int64, err error) {
	if b.queue.sealed {
		s.forgetSealed(b)
	}
	for j, x := range st.inflight {
		if x == b {
			st.inflight = append(st.inflight[:j], st.inflight[j+1:]...)
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("write to table %s bucket %d: %w", b.Table().Path(), b.Bucket(), err)
	}
	b.complete(offset, err)
}

// expire fails a batch whose delivery deadline passed while queued.
func (s *sender) expire(b *Batch) {
	st := s.state(b.queue)
	cause := "not sent"
	if b.attempts > 0 {
		cause = fmt.Sprintf("after %d attempts", b.attempts)
	}
	err := fmt.Errorf("%w: %s within %v", ErrDeliveryTimeout, cause, s.cfg.DeliveryTimeout)
	if s.idem && s.initErr != nil && b.attempts == 0 {
		err = fmt.Errorf("%w (writer id: %w)", err, s.initErr)
	}
	s.m.table(b.Table()).errorCode(0)
	if b.attempts == 0 {
		s.finish(b, st, -1, err)
		return
	}
	s.fail(b, err, false)
}

// backoff returns base·2^attempt capped at max, with ±20% jitter.
func (s *sender) backoff(attempt int) time.Duration {
	d := s.cfg.RetryBackoff
	for range min(attempt, 30) {
		d *= 2
		if d >= s.cfg.RetryBackoffMax {
			d = s.cfg.RetryBackoffMax
			break
		}
	}
	return time.Duration(float64(d) * (0.8 + 0.4*s.rng.Float64()))
}

// leader returns the cached leader of q's bucket, starting a refresh
// goroutine when it is unknown.
func (s *sender) leader(ctx context.Context, q *bucketQueue, now time.Time, next *time.Time) (int32, bool) {
	k := tableKey{q.table.ID(), q.partitionID}
	lc := s.leaders[k]
	if lc == nil {
		lc = &leaderCache{}
		s.leaders[k] = lc
	}
	if lc.valid && int(q.bucket) < len(lc.leaders) {
		if l := lc.leaders[q.bucket]; l >= 0 {
			return l, true
		}
	}
	if lc.refreshing {
		return 0, false
	}
	if lc.retryAt.After(now) {
		*next = earliest(*next, lc.retryAt)
		return 0, false
	}
	lc.refreshing = true
	n := int(q.buckets)
	gen := lc.gen
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		res := &leaderResult{key: k, gen: gen, leaders: make([]int32, n)}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
		for bucket := range n {
			node, err := s.tr.BucketLeader(rctx, k.tableID, k.partitionID, int32(bucket))
			if err != nil {
				res.leaders[bucket] = -1
				if res.err == nil {
					res.err = fmt.Errorf("leader of table %d bucket %d: %w", k.tableID, bucket, err)
				}
				continue
			}
			res.leaders[bucket] = node.ID
		}
		s.post(event{leaders: res})
	}()
	return 0, false
}

// leaderLogEvery is how many failed leader lookups of a table share one
// WARN line after the first.
const leaderLogEvery = 30

func (s *sender) handleLeaders(r *leaderResult, now time.Time) {
	lc := s.leaders[r.key]
	lc.refreshing = false
	if r.gen != lc.gen {
		return // invalidated meanwhile; the next drain refreshes again
	}
	lc.leaders, lc.valid = r.leaders, true
	if errors.Is(r.err, fluss.ErrTableNotExist) {
		// Dropped: fail what is queued now rather than at the delivery
		// deadline (apache/fluss #4141). Batches in flight fail on their own.
		s.failQueued(r.key, r.err)
	}
	if r.err != nil {
		lc.retryAt = now.Add(s.backoff(lc.attempts))
		lc.attempts++
		// Once when it starts, then a summary every leaderLogEvery
		// attempts (about half a minute at the back-off cap): a Fluss
		// outage must not write a line a second per table.
		if lc.attempts == 1 || lc.attempts%leaderLogEvery == 0 {
			s.log.Warn("bucket leaders unknown; retrying", slog.Int64("table_id", r.key.tableID),
				slog.Int64("partition_id", r.key.partitionID), slog.Int("attempts", lc.attempts), slog.Any("err", r.err))
		} else {
			s.log.Debug("bucket leaders still unknown", slog.Int64("table_id", r.key.tableID), slog.Int("attempts", lc.attempts), slog.Any("err", r.err))
		}
		return
	}
	if lc.attempts > 0 {
		s.log.Info("bucket leaders known again", slog.Int64("table_id", r.key.tableID),
			slog.Int64("partition_id", r.key.partitionID), slog.Int("failed_attempts", lc.attempts))
	}
	lc.attempts = 0
}

// failQueued fails every queued batch of one table (partition).
func (s *sender) failQueued(k tableKey, err error) {
	n := 0
	for _, q := range s.acc.queueList() {
		if q.table.ID() != k.tableID || q.partitionID != k.partitionID || q.empty() {
			continue
		}
		st := s.state(q)
		for _, b := range q.drainAll() {
			s.finish(b, st, -1, err)
			n++
		}
	}
	s.log.Warn("table dropped: queued batches failed", slog.Int64("table_id", k.tableID), slog.Int("batches", n), slog.Any("err", err))
}

func (s *sender) maybeInitWriter(ctx context.Context, now time.Time, next *time.Time) {
	if s.initRunning {
		return
	}
	if s.initRetryAt.After(now) {
		*next = earliest(*next, s.initRetryAt)
		return
	}
	seen := make(map[int64]bool)
	var paths []fluss.TablePath
	for _, q := range s.acc.queueList() {
		if t := q.table; !seen[t.ID()] {
			seen[t.ID()] = true
			paths = append(paths, t.Path())
		}
	}
	s.initRunning = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout+s.cfg.RequestTimeoutOverhead)
		defer cancel()
		id, err := s.tr.InitWriter(rctx, paths...)
		if err == nil && id < 0 {
			err = fmt.Errorf("init_writer returned writer id %d", id)
		}
		s.post(event{init: &initResult{writerID: id, err: err}})
	}()
}

func (s *sender) handleInit(r *initResult, now time.Time) {
	s.initRunning = false
	if r.err != nil {
		s.initErr = fmt.Errorf("init writer: %w", r.err)
		s.initRetryAt = now.Add(s.backoff(s.initAttempts))
		s.initAttempts++
		s.log.Warn("init writer failed", slog.Any("err", r.err), slog.Int("attempt", s.initAttempts))
		return
	}
	s.writerID, s.initErr, s.initAttempts = r.writerID, nil, 0
	s.log.Info("writer id assigned", slog.Int64("writer_id", r.writerID))
}
