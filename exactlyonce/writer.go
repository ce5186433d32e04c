package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/outage"
	"github.com/fluss-kafka/gateway/producerstate"
	"github.com/fluss-kafka/gateway/sender"
)

// WriterIDs hands out Fluss writer ids (Fluss InitWriter).
type WriterIDs interface {
	InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error)
}

// WriterAgreement is how the instances that replay the same committed
// transaction agree on a new writer id (a first_row table: the first
// proposal for a state stands). Two instances may apply one commit at once
// (the deciding one, slowed by a Fluss fault, and another's sweeper past
// the grace); starting from the same state, each would otherwise take its
// own writer id for it, and Fluss would keep both copies.
type WriterAgreement interface {
	// AgreeWriter returns the writer id that follows key's state from (its
	// writer id and version) on every instance: proposed, or the one
	// another instance proposed first.
	AgreeWriter(ctx context.Context, key producerstate.Key, from *producerstate.State, proposed int64) (int64, error)
}

// Store keeps the committed producer states (producerstate.Store; an
// in-memory one in tests).
type Store interface {
	// Open makes sure the store can be used (creating its table).
	Open(ctx context.Context) error
	Lookup(ctx context.Context, k producerstate.Key) (producerstate.State, bool, error)
	// Commit queues an upsert of k's state and returns its acknowledgement.
	Commit(ctx context.Context, k producerstate.Key, p *producerstate.State) (producerstate.Ack, error)
}

// Writer runs the exactly-once routes' write path.
type Writer struct {
	store Store
	acc   *accumulator.Accumulator
	ids   WriterIDs
	log   *slog.Logger
	// lookups logs failing producer-state lookups, rate limited: the
	// producer only sees NOT_ENOUGH_REPLICAS and retries, so without it a
	// stalled state table is silent.
	lookups *outage.Log
	// stopped ends when a shutdown runs out of time: it bounds the waits
	// for acks and commits that outlive their request (bridge.stopped).
	stopped context.Context
	m       *metrics // nil until registered

	// usable is set once the store opened: routes that leave exactly_once
	// unset write exactly once from then on.
	usable atomic.Bool

	mu        sync.Mutex // guards ps and lastSweep
	ps        map[producerstate.Key]*producerPartition
	lastSweep time.Time
}

// eoMaxTargets bounds the targets of one producer state (and the Fluss
// writer states of its writer id): beyond it the state takes a new writer
// id when it is next loaded.
const eoMaxTargets = 1024

// eoIdle is how long a producer-partition's loaded state stays in memory
// without batches; dropping it is always safe (its next batch loads it
// again from Fluss), so this only bounds memory against client churn.
const eoIdle = 10 * time.Minute

func New(stopped context.Context, store Store, acc *accumulator.Accumulator, ids WriterIDs, log *slog.Logger) *Writer {
	return &Writer{
		stopped: stopped, store: store, acc: acc, ids: ids, log: log,
		lookups: outage.New(log, "exactly once: producer-state lookups failing; producers retry",
			"exactly once: producer-state lookups recovered", 0, nil),
		ps: make(map[producerstate.Key]*producerPartition),
	}
}

// producerPartition is P's state on this instance.
type producerPartition struct {
	key producerstate.Key

	// mu serialises P's admissions and guards the fields below.
	mu       sync.Mutex
	evicted  bool // dropped from exactlyOnce.ps: look the key up again
	lastUsed time.Time
	loaded   bool
	// st is the state after every batch assigned so far (ahead of what
	// is committed while batches are in flight).
	st producerstate.State
	// recent are the batches of st.window with their completions, oldest
	// first: a re-sent batch still in flight here waits for the original.
	recent   []*eoBatch
	inflight int
	// poisoned: a batch failed after its sequences were assigned; no
	// later batch commits, and the state is loaded again once nothing is
	// in flight.
	poisoned bool
	// rotate: Fluss rejected a sequence (its writer state is gone); the
	// next load takes a new writer id.
	rotate bool
	// last is the batch assigned last: commits follow assignment order.
	last *eoBatch
	// loadedTargets are the targets' last sequences in the row P's state
	// was loaded from, nil when this instance gave P its writer id (see
	// fresh).
	loadedTargets map[producerstate.Target]int32
	// toCommit are written batches waiting for a commit, in assignment
	// order; committing says a commit of P is in flight, whose goroutine
	// commits them next, all at once (the newest one's state covers the
	// others).
	toCommit   []*eoBatch
	committing bool
}

// eoBatch is one Kafka batch of P on its way through the exactly-once path.
type eoBatch struct {
	first, last int32
	c           *kafkaproto.Completion
	// timing measures the route's produce latency, as the other routes'
	// writes do (from the Produce call to the answer).
	timing Timing
	// wrote is closed once the batch's sealed writes and those of every
	// batch of P before it are resolved; wroteOK (guarded by P's mu) says
	// whether all of them succeeded, and offset is the batch's answer then.
	wrote   chan struct{}
	wroteOK bool
	offset  int64
	// snapshot is P's state as of this batch's assignment: what its
	// commit writes.
	snapshot producerstate.State
}

// Prepare opens the producer-state store for routes before they
// are swapped in. A route with exactly_once: true cannot go without it (the
// load fails); routes that leave it unset fall back to the merged path,
// with an error logged that says what the gateway needs. Errors that may
// pass (Fluss unreachable) are returned so that the load retries.
func (e *Writer) Prepare(ctx context.Context, routes *mapping.Routes) error {
	if e == nil || e.usable.Load() {
		return nil
	}
	var required, defaulted []string
	for _, r := range routes.All() {
		switch r.Spec().ExactlyOnce {
		case mapping.ExactlyOnceOn:
			required = append(required, r.Name())
		case mapping.ExactlyOnceDefault:
			defaulted = append(defaulted, r.Name())
		}
	}
	if len(required) == 0 && len(defaulted) == 0 {
		return nil
	}
	err := e.store.Open(ctx)
	if err == nil {
		e.usable.Store(true)
		e.log.Info("exactly once on for idempotent producers", slog.Any("routes", append(required, defaulted...)))
		return nil
	}
	if fluss.IsTransient(err) {
		return fmt.Errorf("exactly once: %w", err)
	}
	if len(required) > 0 {
		return fmt.Errorf("routes %v set exactly_once: true, but the producer-state table cannot be used: %w", required, err)
	}
	e.log.Error("exactly once is off: the producer-state table cannot be used, so idempotent producers on these routes "+
		"are written at least once (a gateway crash can duplicate their in-flight batches). The gateway needs to create the "+
		"table (and its database) or find it with the expected schema; set exactly_once: false on the routes to silence this, "+
		"or fix it and reload", slog.Any("routes", defaulted), slog.Any("err", err))
	return nil
}

// Usable reports whether the producer-state store opened: routes that leave
// exactly_once unset write exactly once from then on. A nil Writer is never
// usable.
func (e *Writer) Usable() bool { return e != nil && e.usable.Load() }

// Group is the rows of one Kafka batch for one target bucket, in record
// order.
type Group struct {
	Table  *accumulator.Table
	Target producerstate.Target
	Ops    []accumulator.Op
}

// errRecovering answers batches of a producer-partition whose state is
// being recovered after a failure: retriable, and the retry is exact.
var errRecovering = fmt.Errorf("%w: exactly-once state of this producer is being recovered after a failed write; retry", kafkaproto.ErrNotEnoughReplicas)

// errWriterUnknown answers a batch Fluss refused whole because it no
// longer knows the producer-partition's writer: retriable, and the retry
// takes a new writer id.
var errWriterUnknown = fmt.Errorf("%w: Fluss no longer knows this producer's writer (expired after a long idle time, or lost); retry under a new writer id", kafkaproto.ErrNotEnoughReplicas)

// errTooManyInFlight answers a batch of a producer-partition that already
// has SequenceWindow batches in flight here, which no idempotent Kafka
// producer sends; retriable, once one of them is answered.
var errTooManyInFlight = fmt.Errorf("%w: more than %d batches of this producer-partition in flight", kafkaproto.ErrNotEnoughReplicas, kafkaproto.SequenceWindow)

// partition returns P's state holder, locked.
func (e *Writer) partition(key producerstate.Key) *producerPartition {
	for {
		e.mu.Lock()
		now := time.Now()
		if now.Sub(e.lastSweep) > eoIdle/10 {
			e.sweepLocked(now)
		}
		p := e.ps[key]
		if p == nil {
			p = &producerPartition{key: key}
			e.ps[key] = p
		}
		e.mu.Unlock()
		p.mu.Lock()
		if !p.evicted {
			p.lastUsed = now
			return p
		}
		p.mu.Unlock()
	}
}

// sweepLocked drops idle producer-partitions with nothing in flight.
func (e *Writer) sweepLocked(now time.Time) {
	e.lastSweep = now
	for k, p := range e.ps {
		if !p.mu.TryLock() {
			continue // in use
		}
		if p.inflight == 0 && now.Sub(p.lastUsed) > eoIdle {
			p.evicted = true
			delete(e.ps, k)
		}
		p.mu.Unlock()
	}
}

// Timing is when a batch's Produce call began and the route's latency
// observer.
type Timing struct {
	Start   time.Time
	Observe func(time.Duration)
}

// Admit applies Kafka's idempotence rules to the batch against P's state
// (loading it first), and for a new batch assigns its per-target
// sequences, queues its sealed Fluss batches and starts its commit. It
// returns the write that answers the batch: c itself for a new batch, the
// original's for a re-sent one, or an error.
//
// A replay (a committed transaction's batch, docs/transactions.md; replay
// not nil) differs in what its sequence means: a producer's transactions
// are applied in order, so a batch before the expected sequence (or of an
// older epoch) was applied already and is answered as done, and one past
// it follows an aborted transaction's gap and is accepted. Its new writer
// ids are agreed through replay, since other instances may replay it too.
func (e *Writer) Admit(ctx context.Context, key producerstate.Key, req *kafkaproto.PartitionProduce, table fluss.TablePath, fp int64, groups []Group, c *kafkaproto.Completion, timing Timing, replay WriterAgreement) (kafkaproto.PartitionWrite, error) {
	return e.admit(ctx, key, req, table, fp, groups, c, timing, replay, true)
}

// ErrWouldBlock: TryAdmit would have to read or write the producer state
// in Fluss first. Nothing was changed; Admit the batch instead.
var ErrWouldBlock = errors.New("exactly once: the producer state must be loaded or renewed first")

// TryAdmit is Admit for a batch that must not wait for Fluss, on a Kafka
// connection's read goroutine: when P's state is not in memory (first
// batch here, or a reload after a failure) or the batch starts a new
// writer id (an epoch bump), it returns ErrWouldBlock having changed
// nothing. It may still wait for the accumulator's memory, as every
// append does.
func (e *Writer) TryAdmit(ctx context.Context, key producerstate.Key, req *kafkaproto.PartitionProduce, table fluss.TablePath, fp int64, groups []Group, c *kafkaproto.Completion, timing Timing) (kafkaproto.PartitionWrite, error) {
	return e.admit(ctx, key, req, table, fp, groups, c, timing, nil, false)
}

func (e *Writer) admit(ctx context.Context, key producerstate.Key, req *kafkaproto.PartitionProduce, table fluss.TablePath, fp int64, groups []Group, c *kafkaproto.Completion, timing Timing, replay WriterAgreement, block bool) (kafkaproto.PartitionWrite, error) {
	p := e.partition(key)
	defer p.mu.Unlock()
	if !block && (!p.loaded || p.poisoned && p.inflight == 0) {
		return nil, ErrWouldBlock
	}
	if p.poisoned {
		if p.inflight > 0 {
			return nil, errRecovering
		}
		p.loaded, p.poisoned, p.recent, p.last = false, false, nil, nil
		e.m.recovery()
	}
	if !p.loaded {
		if err := e.load(ctx, p, table, fp, replay); err != nil {
			return nil, answer.Error(err)
		}
	}
	s := &p.st
	var window [kafkaproto.SequenceWindow]kafkaproto.SeqRange
	for i, w := range s.Window {
		window[i] = kafkaproto.SeqRange{First: w.First, Last: w.Last}
	}
	v := kafkaproto.CheckSequence(kafkaproto.SeqState{Known: s.Known, Epoch: s.Epoch, NextSeq: s.NextSeq, Window: window[:len(s.Window)]},
		req.ProducerEpoch, req.BaseSequence, int32(len(req.Records)))
	if replay != nil {
		switch {
		case v.Gap():
			v.Kind, v.Restart = kafkaproto.SeqAccept, req.ProducerEpoch != s.Epoch
		case v.Kind == kafkaproto.SeqStale || v.Kind == kafkaproto.SeqFenced:
			return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}), nil
		}
	}
	switch v.Kind {
	case kafkaproto.SeqAccept:
	case kafkaproto.SeqDuplicate:
		e.m.windowAnswer()
		if b := p.batch(v.Batch); b != nil {
			return b.c, nil // in flight or answered here: the same answer
		}
		return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: s.Window[v.Batch].Offset, LogAppendTime: -1, LogStartOffset: -1}), nil
	default:
		return nil, v.Err(key.ProducerID, key.Topic, key.Partition)
	}
	if p.inflight >= kafkaproto.SequenceWindow {
		// Kafka producers keep at most this many batches unanswered per
		// partition; the freshness of sequences (fresh) relies on it.
		return nil, errTooManyInFlight
	}
	first, last := req.BaseSequence, v.Last
	if v.Restart && s.Known {
		// The producer gave up on its unanswered batches (a bump follows
		// an unknown outcome) and numbers anew: its next batches are not
		// the ones that may sit uncommitted in Fluss, so they must not get
		// their Fluss sequences (Fluss would drop them as copies). A fresh
		// writer id, once nothing is in flight.
		if p.inflight > 0 {
			return nil, errRecovering
		}
		if !block {
			return nil, ErrWouldBlock
		}
		// Committed with the new epoch, so that a replay of this batch
		// after a crash finds the new writer and no second bump.
		bumped := s.Clone()
		bumped.Epoch, bumped.NextSeq, bumped.Window = req.ProducerEpoch, 0, nil
		if err := e.newWriter(ctx, key, &bumped, table, fp, "epoch_bump", replay); err != nil {
			return nil, answer.Error(err)
		}
		*s, p.recent, p.last, p.loadedTargets = bumped, nil, nil, nil
	}
	if v.Restart {
		s.Window, p.recent = s.Window[:0], p.recent[:0]
	}

	// A new batch: assign, in memory, what the crashed instance would have.
	seqs := make([]int32, len(groups))
	for i, g := range groups {
		seq, ok := s.Targets[g.Target]
		if ok {
			seq = kafkaproto.SeqAdd(seq, 1)
		}
		s.Targets[g.Target] = seq
		seqs[i] = seq
	}
	s.Version++
	s.Known, s.Epoch, s.NextSeq = true, req.ProducerEpoch, kafkaproto.SeqAdd(last, 1)
	b := &eoBatch{first: first, last: last, c: c, wrote: make(chan struct{}), offset: -1, timing: timing}
	s.Window = append(s.Window, producerstate.Batch{First: first, Last: last, Offset: -1})
	p.recent = append(p.recent, b)
	if len(s.Window) > kafkaproto.SequenceWindow {
		s.Window = s.Window[1:]
	}
	if n := len(p.recent) - len(s.Window); n > 0 {
		p.recent = p.recent[n:] // recent are the window's newest entries
	}
	b.snapshot = s.Clone()
	prev := p.last
	p.last = b
	p.inflight++

	handles := make([]accumulator.Handle, 0, len(groups))
	var werr error
	for i, g := range groups {
		seal := accumulator.Seal{WriterID: s.WriterID, Sequence: seqs[i], Fresh: p.fresh(g.Target, seqs[i])}
		h, err := e.acc.AppendSealed(ctx, g.Table, g.Target.PartitionID, g.Target.Bucket, seal, g.Ops)
		if err != nil {
			werr = fmt.Errorf("exactly-once write of %s/%d to table %s bucket %d: %w", key.Topic, key.Partition, g.Table.Path(), g.Target.Bucket, err)
			break
		}
		handles = append(handles, h)
	}
	if werr != nil {
		// Sealed batches already queued may still be written: only a
		// reload from the committed state replays them exactly.
		p.poisoned = true
	}
	go e.complete(p, b, prev, handles, werr)
	return c, nil
}

// fresh reports whether sequence seq for target t cannot have reached
// Fluss before (accumulator.Seal.Fresh). Under a writer id this instance
// took, nothing was written before its own batches. Under a loaded one, an
// instance that crashed may have written up to SequenceWindow batches of
// P beyond the committed row, one sequence per target each (an instance
// has at most that many batches of P in flight: admit), and the replay
// gives the re-sent batches exactly those sequences; what comes after them
// is fresh.
func (p *producerPartition) fresh(t producerstate.Target, seq int32) bool {
	if p.loadedTargets == nil {
		return true
	}
	last, ok := p.loadedTargets[t]
	if !ok {
		last = -1
	}
	return int64(seq) > int64(last)+kafkaproto.SequenceWindow
}

// batch returns the in-flight record of window entry i, or nil if the
// entry was loaded from the committed row.
func (p *producerPartition) batch(i int) *eoBatch {
	off := len(p.st.Window) - len(p.recent)
	if i < off {
		return nil
	}
	return p.recent[i-off]
}

// load reads P's committed state, or starts a new one with its own writer
// id, committed before any data is written under it (agreed through agree
// when not nil).
func (e *Writer) load(ctx context.Context, p *producerPartition, table fluss.TablePath, fp int64, agree WriterAgreement) error {
	st, ok, err := e.store.Lookup(ctx, p.key)
	if err != nil {
		e.m.load("error")
		e.lookups.Fail(err, slog.String("topic", p.key.Topic), slog.Int("partition", int(p.key.Partition)),
			slog.Int64("producer_id", p.key.ProducerID))
		return fmt.Errorf("%w: %w", kafkaproto.ErrNotEnoughReplicas, err)
	}
	e.lookups.OK()
	e.m.load(map[bool]string{true: "found", false: "missing"}[ok])
	why := ""
	switch {
	case !ok:
		why = "new"
		st = producerstate.State{Targets: map[producerstate.Target]int32{}}
	case st.Fingerprint != fp:
		// The route changed since the state was written: batches in flight
		// then may have gone elsewhere; do not replay them (at least once).
		why = "route_changed"
	case p.rotate:
		why = "failed_write"
	case len(st.Targets) > eoMaxTargets:
		// Nothing of P is in flight (it is loading): a fresh writer id
		// drops the targets of e.g. old partitions, and the tablet
		// servers' writer states with them after their expiry.
		why = "too_many_targets"
	}
	var loadedTargets map[producerstate.Target]int32
	if why != "" {
		if err := e.newWriter(ctx, p.key, &st, table, fp, why, agree); err != nil {
			return err
		}
	} else {
		loadedTargets = maps.Clone(st.Targets)
		if loadedTargets == nil {
			loadedTargets = map[producerstate.Target]int32{}
		}
	}
	p.st, p.loaded, p.rotate, p.recent, p.last, p.loadedTargets = st, true, false, nil, nil, loadedTargets
	return nil
}

// newWriter gives st a fresh Fluss writer id with every target unseen, and
// commits it before any data goes out under it. Batches written under the
// old id and not committed are not replayed under the new one. With agree,
// every instance that starts from st takes the same id.
func (e *Writer) newWriter(ctx context.Context, key producerstate.Key, st *producerstate.State, table fluss.TablePath, fp int64, why string, agree WriterAgreement) error {
	id, err := e.ids.InitWriter(ctx, table)
	if err == nil && agree != nil {
		id, err = agree.AgreeWriter(ctx, key, st, id)
	}
	if err != nil {
		return fmt.Errorf("exactly-once writer id for %s/%d: %w", key.Topic, key.Partition, err)
	}
	next := st.Clone()
	next.Version++
	next.WriterID, next.Fingerprint = id, fp
	next.Targets = map[producerstate.Target]int32{}
	h, err := e.store.Commit(ctx, key, &next)
	if err != nil {
		return fmt.Errorf("%w: commit producer state: %w", kafkaproto.ErrNotEnoughReplicas, err)
	}
	if _, err := h.Wait(ctx); err != nil {
		return fmt.Errorf("%w: commit producer state: %w", kafkaproto.ErrNotEnoughReplicas, err)
	}
	*st = next
	e.m.writerID(why)
	e.log.Debug("exactly-once writer id assigned", slog.String("topic", key.Topic), slog.Int("partition", int(key.Partition)),
		slog.Int64("producer_id", key.ProducerID), slog.Int64("writer_id", id), slog.String("reason", why))
	return nil
}

// complete waits for the batch's sealed writes and for those of the batches
// of P before it, then has the batch committed: a committed row never
// claims a write that has not happened.
func (e *Writer) complete(p *producerPartition, b *eoBatch, prev *eoBatch, handles []accumulator.Handle, err error) {
	offset := int64(-1)
	written := false // some part of the batch is in Fluss
	for i, h := range handles {
		off, herr := h.Wait(e.stopped) // the writer completes every batch
		if herr != nil && err == nil {
			err = herr
		}
		written = written || herr == nil
		if i == 0 {
			offset = off
		}
	}
	if prev != nil {
		<-prev.wrote
	}
	p.mu.Lock()
	if err == nil && prev != nil && !prev.wroteOK {
		err = errRecovering
	}
	if errors.Is(err, sender.ErrSequenceRejected) && prev != nil && !prev.wroteOK {
		// Fluss refused the sequence because an earlier batch of P failed
		// unwritten (a gap), not because it lost the writer's state: the
		// reload replays from the committed state under the same writer,
		// where Fluss drops what it holds. A new writer id would write
		// the batches written since the last commit a second time.
		err = fmt.Errorf("%w: an earlier batch of the producer-partition failed first: %v", errRecovering, err)
	}
	b.wroteOK, b.offset = err == nil, offset
	if err == nil {
		// Queued before wrote closes, so that the next batch of P is
		// always queued after this one.
		p.toCommit = append(p.toCommit, b)
	}
	p.mu.Unlock()
	close(b.wrote)
	if err != nil {
		e.settle(p, []*eoBatch{b}, err, written)
		return
	}
	e.commit(p)
}

// commit commits the queued batches' state, unless a commit of P is in
// flight: its goroutine commits every batch queued meanwhile at once when
// it is acknowledged, so a producer-partition with several batches in
// flight pays one state write per commit round trip, not one per batch.
func (e *Writer) commit(p *producerPartition) {
	p.mu.Lock()
	if p.committing {
		p.mu.Unlock()
		return
	}
	p.committing = true
	for len(p.toCommit) > 0 {
		group := p.toCommit
		p.toCommit = nil
		// Committed even when P failed meanwhile (poisoned): a batch is
		// queued only once its writes and those of every batch of P
		// before it succeeded, so its state claims nothing unwritten. Left
		// uncommitted, it would be replayed after the reload, under a new
		// writer id when the failure takes one, and stored twice.
		newest := group[len(group)-1]
		snapshot := newest.snapshot
		// Every window entry before the newest was answered or is in this
		// group: its offset is known.
		for i := range snapshot.Window {
			if w := &snapshot.Window[i]; w.Offset < 0 {
				w.Offset = p.writtenOffset(w.First, w.Last)
			}
		}
		p.mu.Unlock()
		start := time.Now()
		h, err := e.store.Commit(e.stopped, p.key, &snapshot)
		if err == nil {
			_, err = h.Wait(e.stopped)
		}
		e.m.committed(time.Since(start), len(group))
		if err != nil {
			err = fmt.Errorf("%w: commit producer state: %w", kafkaproto.ErrNotEnoughReplicas, err)
		}
		e.settle(p, group, err, true)
		p.mu.Lock()
		for _, b := range group {
			// Committed (or failed): only its answer stays in recent.
			// Idle producer-partitions stay loaded for eoIdle; with 500
			// tables these copies were 12.5 of the 56 MiB they held.
			b.snapshot = producerstate.State{}
		}
	}
	p.committing = false
	p.mu.Unlock()
}

// writtenOffset returns the answer of a batch of P whose writes succeeded,
// or -1; p.mu is held.
func (p *producerPartition) writtenOffset(first, last int32) int64 {
	for _, b := range p.recent {
		if b.first == first && b.last == last && b.wroteOK {
			return b.offset
		}
	}
	return -1
}

// settle answers batches of P that are done: committed (err nil) or
// failed, in which case P is poisoned (its state reloads once nothing is
// in flight) and, when Fluss lost the writer's state or a batch that fails
// for good is partly written (written), takes a new writer id then.
func (e *Writer) settle(p *producerPartition, batches []*eoBatch, err error, written bool) {
	var failure error
	if err != nil {
		failure = eoError(err)
		if errors.Is(err, sender.ErrSequenceRejected) && !written {
			// Fluss no longer knows P's writer in a bucket (its state
			// expired after server.writer-id.expiration-time without
			// writes, or went with a truncated log) and wrote none of the
			// batch: the producer's retry writes it under a new writer id
			// (rotate, below), exactly, as a Kafka broker's
			// UNKNOWN_PRODUCER_ID lets a client carry on.
			failure = fmt.Errorf("%w: %w", errWriterUnknown, err)
		}
	}
	p.mu.Lock()
	p.inflight -= len(batches)
	if err != nil {
		p.poisoned = true
		var ke *kafkaproto.Error
		definite := errors.As(failure, &ke) && !ke.Retriable
		if errors.Is(err, sender.ErrSequenceRejected) || (definite && written) {
			// The producer will number its next batches anew: their
			// content must not meet the used sequences.
			p.rotate = true
		}
	}
	p.mu.Unlock()
	for _, b := range batches {
		if b.timing.Observe != nil {
			b.timing.Observe(time.Since(b.timing.Start))
		}
		if err != nil {
			e.log.Debug("exactly-once batch failed; state reloads on the retry", slog.String("topic", p.key.Topic),
				slog.Int("partition", int(p.key.Partition)), slog.Int64("producer_id", p.key.ProducerID), slog.Any("err", err))
			b.c.Complete(answer.Failed(failure))
			continue
		}
		b.c.Complete(kafkaproto.PartitionResult{BaseOffset: b.offset, LogAppendTime: -1, LogStartOffset: -1})
	}
}

// eoError is the Kafka answer to a failed exactly-once batch. A definite
// Fluss rejection keeps its code; Fluss refusing a sequence is
// OUT_OF_ORDER_SEQUENCE_NUMBER (its writer state is gone: the producer must
// reset); anything else is retriable, since the retry replays exactly.
func eoError(err error) error {
	if errors.Is(err, sender.ErrSequenceRejected) {
		return fmt.Errorf("%w: %w", kafkaproto.ErrOutOfOrderSequenceNumber, err)
	}
	k := answer.Error(err)
	var ke *kafkaproto.Error
	if errors.As(k, &ke) && ke.Retriable {
		return k
	}
	var fe *fluss.Error
	if errors.As(err, &fe) && !fe.Retriable {
		return k
	}
	return fmt.Errorf("%w: %w", kafkaproto.ErrNotEnoughReplicas, err)
}

// Queued is how many written batches of key wait for their producer-state
// commit (behind one in flight); 0 when key has no state here.
func (e *Writer) Queued(key producerstate.Key) int {
	e.mu.Lock()
	p := e.ps[key]
	e.mu.Unlock()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.toCommit)
}
