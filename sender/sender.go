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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/backoff"
)

// Sender drains ready batches from an Accumulator and writes them to the
// tablet servers: one request per (tablet server, table), concurrently, so
// a slow table never delays another. Create it with New, run it with Run,
// stop it with Close.
type Sender struct {
	cfg  Config
	idem bool
	acc  *accumulator.Accumulator
	tr   Transport
	log  *slog.Logger
	m    *metrics

	// Loop-owned state: touched only by the goroutine running Run.
	buckets map[*accumulator.Queue]*bucketState
	// retrying: the queues whose state may hold retries (dropped lazily
	// by drain); with the accumulator's busy queues, what drain visits.
	retrying map[*accumulator.Queue]bool
	// drainQueues is drain's list of queues, reused between passes.
	drainQueues []*accumulator.Queue
	sealed      map[sealedKey]*sealedState
	leaders     map[tableKey]*leaderCache
	// leaderlessKeys are looked up again on their back-off even without
	// batches to send, so that a leaderless table is seen to recover.
	leaderlessKeys map[tableKey]bool
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
	// retry is the back-off of batch resends, leader lookups and writer-id
	// requests, by their own attempt counts.
	retry backoff.Policy

	inflightReqs atomic.Int64

	// leaderless holds the non-partitioned tables whose buckets had no
	// leader for LeaderWait: written by the loop (copy on write, rarely),
	// read by Leaderless on every Produce without a lock.
	leaderless atomic.Pointer[map[int64]bool]

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

// batch is the sender's state of one batch it popped: the stamp it is sent
// with and the sends so far. The accumulator's Batch holds only records
// and bytes.
type batch struct {
	*accumulator.Batch
	writerID int64 // accumulator.NoSequence without idempotence
	sequence int32 // accumulator.NoSequence without idempotence
	attempts int   // sends so far
}

// unsent is the sender's state of a batch not popped yet: no sends, and
// the caller's stamp if sealed (accumulator.NoSequence otherwise).
func unsent(b *accumulator.Batch) batch {
	writerID, seq := b.SealedStamp()
	return batch{Batch: b, writerID: writerID, sequence: seq}
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
	// lastSent is when the bucket's last fresh batch was drained (see
	// lingering).
	lastSent time.Time
	// inflight: batches drained and not completed (sent, or waiting for a
	// retry), in sequence order under idempotence.
	inflight []*batch
	// retries: batches of inflight waiting to be resent, in the order they
	// go (by sequence within a writer id); they go before any fresh batch
	// of the queue.
	retries   []*batch
	writerID  int64 // the writer id nextSeq/lastAcked belong to
	nextSeq   int32
	lastAcked int32
}

type leaderCache struct {
	leaders    []int32 // -1: unknown
	buckets    int     // how many to look up
	valid      bool
	refreshing bool
	gen        int
	retryAt    time.Time
	attempts   int
	// unknownSince is when lookups began to fail (zero: the last one
	// succeeded); after Config.LeaderWait the key is leaderless.
	unknownSince time.Time
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

// New returns a Sender draining acc and writing through tr (a
// *fluss.Client). It starts nothing: Run does.
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
	if o.reg == nil {
		o.reg = prometheus.NewRegistry()
	}
	s := &Sender{
		cfg:            cfg,
		idem:           !cfg.DisableIdempotence,
		acc:            acc,
		tr:             tr,
		log:            o.logger,
		buckets:        make(map[*accumulator.Queue]*bucketState),
		retrying:       make(map[*accumulator.Queue]bool),
		sealed:         make(map[sealedKey]*sealedState),
		queuedTail:     make(map[groupKey]chan struct{}),
		leaders:        make(map[tableKey]*leaderCache),
		leaderlessKeys: make(map[tableKey]bool),
		writerID:       accumulator.NoSequence,
		evWake:         make(chan struct{}, 1),
		done:           make(chan struct{}),
		retry: backoff.Policy{
			Initial: cfg.RetryBackoff,
			Max:     cfg.RetryBackoffMax,
			Jitter:  0.2, // ±20%, as Config.RetryBackoff says
			Rand:    rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)).Float64,
		},
	}
	m, err := newMetrics(o.reg, s)
	if err != nil {
		return nil, err
	}
	s.m = m
	return s, nil
}

// Run drains and sends until the accumulator is closed and every batch has
// completed (then it returns nil), or until ctx ends (then it stops every
// request, fails every batch not yet acknowledged with ErrStopped and returns
// ctx's error). It starts one goroutine per write request in flight and per
// metadata or writer-id lookup, and waits for all of them before returning.
// Run may be called once.
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
	stopped := func(b *batch) {
		if b.Complete(-1, fmt.Errorf("write to table %s bucket %d: %w", b.Table().Path(), b.Bucket(), ErrStopped)) {
			n++
		}
	}
	for _, st := range s.buckets {
		for _, b := range st.inflight {
			stopped(b)
		}
		st.inflight, st.retries = nil, nil
	}
	for k, ss := range s.sealed {
		for _, b := range ss.inflight {
			stopped(b)
		}
		delete(s.sealed, k)
	}
	if n > 0 {
		s.log.Warn("sender stopped with batches not acknowledged", slog.Int("batches", n))
	}
	return context.Cause(ctx)
}

// Close closes the accumulator (no new records) and waits until Run has
// sent everything and returned, or until ctx ends: then it stops Run,
// which fails whatever was not acknowledged with ErrStopped, and returns an
// error. Close is idempotent; without Run it only fails what is queued.
func (s *Sender) Close(ctx context.Context) error {
	defer s.acc.WaitEncodings() // every batch is complete by then: they end at once
	s.acc.Close()
	s.runMu.Lock()
	started := s.started
	s.runMu.Unlock()
	if !started {
		if n := s.acc.Abort(ErrStopped); n > 0 {
			return fmt.Errorf("sender: close before run: %d batches failed with %w", n, ErrStopped)
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

// Leaderless reports whether a non-partitioned table's buckets have had no
// leader for Config.LeaderWait (its queued batches fail with ErrNoLeader):
// the gateway then reports its topic as leaderless and refuses its batches
// with a retriable error. It is safe to call from any goroutine.
func (s *Sender) Leaderless(tableID int64) bool {
	m := s.leaderless.Load()
	return m != nil && (*m)[tableID]
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

// retryLater queues b to be resent after its bucket's back-off: in sequence
// order among the bucket's retries (responses may come back out of order).
func (st *bucketState) retryLater(b *batch) {
	i := 0
	for ; i < len(st.retries); i++ {
		x := st.retries[i]
		if b.sequence != accumulator.NoSequence && x.writerID == b.writerID && x.sequence > b.sequence {
			break
		}
	}
	st.retries = append(st.retries, nil)
	copy(st.retries[i+1:], st.retries[i:])
	st.retries[i] = b
}

// unretry removes b from the bucket's retries, if there.
func (st *bucketState) unretry(b *batch) {
	for j, x := range st.retries {
		if x == b {
			st.retries = append(st.retries[:j], st.retries[j+1:]...)
			return
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
