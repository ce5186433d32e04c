package sender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

var errAccClosed = accumulator.ErrClosed

// Sender drains ready batches from an Accumulator and writes them to Fluss.
// Create it with New, run it with Run, stop it with Close.
type Sender struct {
	cfg  Config
	idem bool
	acc  *accumulator.Accumulator
	tr   Transport
	log  *slog.Logger
	m    *metrics

	// Loop-owned state: touched only by the goroutine running Run.
	buckets map[*accumulator.Queue]*bucketState
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
	backoffUntil  time.Time
	retryAttempts int
	// inflight: batches drained and not completed (sent, or waiting for a
	// retry), in sequence order under idempotence.
	inflight  []*accumulator.Batch
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
	table   *accumulator.Table
	batches []*accumulator.Batch
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

// New returns a Sender for acc writing through tr. It starts nothing.
func New(cfg Config, acc *accumulator.Accumulator, tr Transport, opts ...Option) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{seed: uint64(time.Now().UnixNano())}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	s := &Sender{
		cfg:        cfg,
		idem:       !cfg.DisableIdempotence,
		acc:        acc,
		tr:         tr,
		log:        o.logger,
		buckets:    make(map[*accumulator.Queue]*bucketState),
		queuedTail: make(map[groupKey]chan struct{}),
		leaders:    make(map[tableKey]*leaderCache),
		writerID:   accumulator.NoSequence,
		rng:        rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)),
		evWake:     make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	m, err := newMetrics(o.reg, s)
	if err != nil {
		return nil, err
	}
	s.m = m
	return s, nil
}

// InflightRequests returns the number of write requests sent and not yet
// answered.
func (s *Sender) InflightRequests() int { return int(s.inflightReqs.Load()) }

// Run drains and sends until the accumulator is closed and every batch has
// completed (then it returns nil), or until ctx ends (then it stops every
// request, fails every batch not yet acknowledged with ErrStopped and returns
// ctx's error). It starts one goroutine per write request in flight and per
// metadata or writer-id lookup, and waits for all of them before returning.
func (s *Sender) Run(ctx context.Context) error {
	s.runMu.Lock()
	if s.started {
		s.runMu.Unlock()
		return errors.New("sender: Run called twice")
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
		if s.acc.Closed() && s.acc.Incomplete() == 0 && s.inflightReqs.Load() == 0 {
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
		case <-s.acc.Wakeup():
		case <-s.evWake:
		case <-timer.C:
		}
	}
}

// stop fails everything after the run context ended.
func (s *Sender) stop(ctx context.Context) error {
	s.wg.Wait() // request goroutines see the cancelled context and return
	s.evMu.Lock()
	for _, ev := range s.events {
		if ev.resp != nil { // answered or cancelled: its batches fail below
			s.inflightReqs.Add(-1)
		}
	}
	s.events = nil
	s.evMu.Unlock()
	n := s.acc.Abort(ErrStopped)
	for _, st := range s.buckets {
		for _, b := range st.inflight {
			if b.Complete(-1, fmt.Errorf("write to table %s bucket %d: %w", b.Table().Path(), b.Bucket(), ErrStopped)) {
				n++
			}
		}
		st.inflight = nil
	}
	if n > 0 {
		s.log.Warn("sender stopped with batches not acknowledged", slog.Int("batches", n))
	}
	return context.Cause(ctx)
}

// Close closes the accumulator (no new records) and waits until Run has sent
// everything and returned, or until ctx ends: then it stops Run, which fails
// whatever was not acknowledged with ErrStopped, and returns an error. Close
// is idempotent; without Run it only fails what is queued.
func (s *Sender) Close(ctx context.Context) error {
	s.acc.Close()
	s.runMu.Lock()
	started := s.started
	s.runMu.Unlock()
	if !started {
		if n := s.acc.Abort(ErrStopped); n > 0 {
			return fmt.Errorf("sender: close before run: %d batches failed", n)
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
		return fmt.Errorf("sender: close: %w; batches not acknowledged failed with %w", ctx.Err(), ErrStopped)
	}
}

func (s *Sender) selfWake() {
	select {
	case s.evWake <- struct{}{}:
	default:
	}
}

func (s *Sender) post(ev event) {
	s.evMu.Lock()
	s.events = append(s.events, ev)
	s.evMu.Unlock()
	s.selfWake()
}

// processEvents handles what the goroutines posted. Once ctx has ended it
// leaves them to stop: a request cancelled by ctx posts its event after the
// cancellation, so checking ctx under evMu cannot miss one.
func (s *Sender) processEvents(ctx context.Context) {
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

func (s *Sender) state(q *accumulator.Queue) *bucketState {
	st := s.buckets[q]
	if st == nil {
		st = &bucketState{writerID: accumulator.NoSequence, lastAcked: -1}
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

// drain pops at most one ready batch per bucket, groups them by (tablet
// server, table) and starts one request per group. It returns when the
// loop must look again by itself (linger, back-off, deadline), zero if only
// an event can make progress.
func (s *Sender) drain(ctx context.Context, now time.Time) time.Time {
	queues := s.acc.Queues()
	if len(queues) == 0 {
		return time.Time{}
	}
	force := s.acc.ForceReady()
	var next time.Time
	var groups map[groupKey]*request
	var order []*request
	var serverBytes map[int32]int
	start := s.drainStart % len(queues)
	s.drainStart++
	for i := range queues {
		q := queues[(start+i)%len(queues)]
		if q.Empty() {
			continue
		}
		b, size, readyAt := q.Peek(force)
		if b == nil {
			continue
		}
		deadline := b.Created().Add(s.cfg.DeliveryTimeout)
		if !now.Before(deadline) {
			if q.Pop(b) {
				s.expire(b)
				s.again = true
			}
			continue
		}
		if !readyAt.IsZero() && readyAt.After(now) {
			next = earliest(next, readyAt)
			continue
		}
		st := s.state(q)
		if st.backoffUntil.After(now) {
			next = earliest(next, st.backoffUntil)
			continue
		}
		retry := b.Attempts() > 0
		if s.idem && retry && b.WriterID() != s.writerID {
			// Stamped under a writer id that was reset: resending it could
			// duplicate or reorder.
			if q.Pop(b) {
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
		if s.idem {
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
		if !q.Pop(b) {
			continue
		}
		if !q.Empty() {
			s.again = true // one batch per bucket per pass: look again at once
		}
		if !retry {
			if s.idem {
				b.Stamp(s.writerID, st.nextSeq)
				st.nextSeq++
			}
			st.inflight = append(st.inflight, b)
		}
		b.AddAttempt()
		if groups == nil {
			groups = make(map[groupKey]*request)
			serverBytes = make(map[int32]int)
		}
		serverBytes[leader] += size
		gk := groupKey{leader, q.Table().ID()}
		req := groups[gk]
		if req == nil {
			req = &request{server: leader, table: q.Table()}
			groups[gk] = req
			order = append(order, req)
		}
		req.batches = append(req.batches, b)
		req.writerID = append(req.writerID, b.WriterID())
		req.seq = append(req.seq, b.Sequence())
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
func (s *Sender) send(ctx context.Context, req *request) {
	defer s.wg.Done()
	var once sync.Once
	queued := func() { once.Do(func() { close(req.queued) }) }
	defer queued() // never leave the next request waiting
	resp := &response{req: req, buildErr: make([]error, len(req.batches))}
	buckets := make([]fluss.BucketRecords, 0, len(req.batches))
	for i, b := range req.batches {
		data, err := b.Build(req.writerID[i], req.seq[i])
		if err != nil {
			resp.buildErr[i] = err
			continue
		}
		buckets = append(buckets, fluss.BucketRecords{PartitionID: b.PartitionID(), Bucket: b.Bucket(), Records: data})
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
				TargetColumns: req.table.TargetColumns(),
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

func (s *Sender) handleResponse(resp *response, now time.Time) {
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
		if err == nil {
			err = errMissingBucket
			match := func(r *fluss.BucketResult) bool {
				return r.Bucket == b.Bucket() && r.PartitionID == b.PartitionID()
			}
			if sent < len(resp.results) && match(&resp.results[sent]) {
				// fast path: results come in request order
				err, offset = resp.results[sent].Err, resp.results[sent].Offset
			} else {
				for j := range resp.results {
					if match(&resp.results[j]) {
						err, offset = resp.results[j].Err, resp.results[j].Offset
						break
					}
				}
			}
		}
		sent++
		if s.handleBatch(req, i, b, offset, err, now, tm) {
			refresh = true
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

func errCode(err error) int32 {
	var fe *fluss.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return 0
}

const (
	codeOutOfOrderSequence = 31
	codeDuplicateSequence  = 32
	codeUnknownWriterID    = 33
)

// handleBatch applies the per-bucket decision table (fluss-wire.md §6,
// fluss-writer.md §3.6) and reports whether leaders should be refreshed.
func (s *Sender) handleBatch(req *request, i int, b *accumulator.Batch, offset int64, err error, now time.Time, tm *tableMetrics) bool {
	st := s.state(b.Queue())
	if err == nil {
		s.succeed(b, st, offset, tm)
		return false
	}
	code := errCode(err)
	if s.idem && b.WriterID() >= 0 {
		switch {
		case code == codeDuplicateSequence:
			s.succeed(b, st, -1, tm) // written before; its response was lost
			return false
		case code == codeOutOfOrderSequence && b.WriterID() == st.writerID && b.Sequence() <= st.lastAcked:
			s.succeed(b, st, -1, tm) // a later batch was acked after it
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
			retriable = b.Sequence() != st.lastAcked+1 || b.Sequence() != req.seq[i] ||
				st.lastAcked != req.lastAckedAtSend[i]
		case codeUnknownWriterID:
			retriable = b.Sequence() != req.seq[i]
		}
		if b.WriterID() != s.writerID {
			s.finish(b, st, -1, fmt.Errorf("%w: %w", ErrWriterReset, err))
			return false
		}
	}
	if retriable && now.Before(b.Created().Add(s.cfg.DeliveryTimeout)) {
		st.backoffUntil = now.Add(s.backoff(st.retryAttempts))
		st.retryAttempts++
		tm.retries.Inc()
		s.log.Debug("retrying batch", slog.String("table", b.Table().Path().String()),
			slog.Int("bucket", int(b.Bucket())), slog.Int("attempt", b.Attempts()), slog.Any("err", err))
		b.Queue().Reenqueue(b)
		return fluss.NeedsMetadataRefresh(err)
	}
	if retriable {
		err = fmt.Errorf("%w after %d attempts: %w", ErrDeliveryTimeout, b.Attempts(), err)
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
func (s *Sender) fail(b *accumulator.Batch, err error, definite bool) {
	st := s.state(b.Queue())
	stamped := s.idem && b.Sequence() != accumulator.NoSequence && b.WriterID() == st.writerID
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

func (s *Sender) adjustSequences(st *bucketState, failed *accumulator.Batch) {
	for _, x := range st.inflight {
		if x.WriterID() == failed.WriterID() && x.Sequence() > failed.Sequence() {
			x.Stamp(x.WriterID(), x.Sequence()-1)
		}
	}
	st.nextSeq--
}

func (s *Sender) resetWriter(why string) {
	if s.writerID < 0 {
		return
	}
	s.log.Warn("resetting writer id", slog.Int64("writer_id", s.writerID), slog.String("reason", why))
	s.m.writerResets.Inc()
	s.writerID = accumulator.NoSequence
	for _, st := range s.buckets {
		st.writerID = accumulator.NoSequence
	}
}

func (s *Sender) succeed(b *accumulator.Batch, st *bucketState, offset int64, tm *tableMetrics) {
	if s.idem && b.WriterID() == st.writerID && b.Sequence() > st.lastAcked {
		st.lastAcked = b.Sequence()
	}
	st.retryAttempts = 0
	tm.batchSent(b, s.acc.Config().BatchSize)
	s.finish(b, st, offset, nil)
}

// finish removes b from the bucket's in-flight list and completes it.
func (s *Sender) finish(b *accumulator.Batch, st *bucketState, offset int64, err error) {
	for j, x := range st.inflight {
		if x == b {
			st.inflight = append(st.inflight[:j], st.inflight[j+1:]...)
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("write to table %s bucket %d: %w", b.Table().Path(), b.Bucket(), err)
	}
	b.Complete(offset, err)
}

// expire fails a batch whose delivery deadline passed while queued.
func (s *Sender) expire(b *accumulator.Batch) {
	st := s.state(b.Queue())
	cause := "not sent"
	if b.Attempts() > 0 {
		cause = fmt.Sprintf("after %d attempts", b.Attempts())
	}
	err := fmt.Errorf("%w: %s within %v", ErrDeliveryTimeout, cause, s.cfg.DeliveryTimeout)
	if s.idem && s.initErr != nil && b.Attempts() == 0 {
		err = fmt.Errorf("%w (writer id: %w)", err, s.initErr)
	}
	s.m.table(b.Table()).errorCode(0)
	if b.Attempts() == 0 {
		s.finish(b, st, -1, err)
		return
	}
	s.fail(b, err, false)
}

// backoff returns base·2^attempt capped at max, with ±20% jitter.
func (s *Sender) backoff(attempt int) time.Duration {
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
func (s *Sender) leader(ctx context.Context, q *accumulator.Queue, now time.Time, next *time.Time) (int32, bool) {
	k := tableKey{q.Table().ID(), q.PartitionID()}
	lc := s.leaders[k]
	if lc == nil {
		lc = &leaderCache{}
		s.leaders[k] = lc
	}
	if lc.valid {
		if l := lc.leaders[q.Bucket()]; l >= 0 {
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
	n := q.Table().NumBuckets()
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

func (s *Sender) handleLeaders(r *leaderResult, now time.Time) {
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
		s.log.Warn("bucket leaders unknown", slog.Int64("table_id", r.key.tableID), slog.Any("err", r.err))
		return
	}
	lc.attempts = 0
}

// failQueued fails every queued batch of one table (partition).
func (s *Sender) failQueued(k tableKey, err error) {
	n := 0
	for _, q := range s.acc.Queues() {
		if q.Table().ID() != k.tableID || q.PartitionID() != k.partitionID || q.Empty() {
			continue
		}
		st := s.state(q)
		for _, b := range q.TakeAll() {
			s.finish(b, st, -1, err)
			n++
		}
	}
	s.log.Warn("table dropped: queued batches failed", slog.Int64("table_id", k.tableID), slog.Int("batches", n), slog.Any("err", err))
}

func (s *Sender) maybeInitWriter(ctx context.Context, now time.Time, next *time.Time) {
	if s.initRunning {
		return
	}
	if s.initRetryAt.After(now) {
		*next = earliest(*next, s.initRetryAt)
		return
	}
	seen := make(map[int64]bool)
	var paths []fluss.TablePath
	for _, q := range s.acc.Queues() {
		if t := q.Table(); !seen[t.ID()] {
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

func (s *Sender) handleInit(r *initResult, now time.Time) {
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
