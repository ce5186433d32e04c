package sender

import (
	"context"
	"fmt"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
)

type groupKey struct {
	server  int32
	tableID int64
}

// slotKey is one bucket's slot in a request. Fluss keeps one records entry
// per bucket of a request (a second one for the same bucket replaces the
// first: ServerRpcMessageUtils.getProduceLogData), so a drain pass sends
// at most one entry per bucket: one batch, merged or sealed, or fresh
// sealed ones together (joinFresh).
type slotKey struct {
	tableID, partitionID int64
	bucket               int32
}

// drainPass is what one drain pass has taken so far.
type drainPass struct {
	now         time.Time
	force       bool      // every batch ready regardless of linger
	next        time.Time // when the loop must look again by itself
	groups      map[groupKey]*request
	order       []*request
	serverBytes map[int32]int
	slots       map[slotKey]bool
}

// candidate is a queue's head in a pass: its first retry, else its first
// queued batch.
type candidate struct {
	q       *accumulator.Queue
	st      *bucketState
	b       batch  // the head's state (a copy for a retry)
	retry   *batch // the retry itself; nil for a queued batch
	size    int
	readyAt time.Time // zero: ready now
	leader  int32
}

// drain takes at most one ready batch per bucket, groups them by (tablet
// server, table) and starts one request per group. It returns when the
// loop must look again by itself (linger, back-off, deadline), zero if only
// an event can make progress. Each gate below says why a head waits.
func (s *Sender) drain(ctx context.Context, now time.Time) time.Time {
	p := &drainPass{now: now, force: s.acc.ForceReady()}
	s.lookUpLeaderless(ctx, now, &p.next)
	queues := s.queuesWithWork()
	if len(queues) == 0 {
		return p.next
	}
	start := s.drainStart % len(queues)
	s.drainStart++
	for i := range queues {
		c, ok := s.head(queues[(start+i)%len(queues)], p)
		if !ok || s.expired(c, p) {
			continue
		}
		if s.lingering(c, p) || s.heldBack(c, p) || s.slotTaken(c, p) || !s.sealedReady(c) ||
			s.staleRetry(c) || !s.leaderKnown(ctx, &c, p) || !s.sequenceReady(ctx, c, p) || s.requestFull(c, p) {
			continue
		}
		s.take(c, p)
	}
	for _, req := range p.order {
		gk := groupKey{req.server, req.table.ID()}
		req.after = s.queuedTail[gk]
		req.queued = make(chan struct{})
		s.queuedTail[gk] = req.queued
		s.inflightReqs.Add(1)
		s.wg.Add(1)
		go s.send(ctx, req)
	}
	return p.next
}

// queuesWithWork lists the queues drain visits: those that hold batches
// and the empty ones whose retries wait in the sender. It is every queue
// with a head, without a walk over the thousands of empty ones many tables
// have. (A queue that fills after Busy looked is seen on the next pass:
// its append wakes the loop.)
func (s *Sender) queuesWithWork() []*accumulator.Queue {
	qs := s.acc.Busy(s.drainQueues[:0])
	for q := range s.retrying {
		if st := s.buckets[q]; st == nil || len(st.retries) == 0 {
			delete(s.retrying, q)
		} else if q.Empty() {
			qs = append(qs, q) // not among the busy ones
		}
	}
	s.drainQueues = qs
	return qs
}

// head returns q's candidate: the bucket's first retry, which goes before
// anything queued, else the queue's head batch.
func (s *Sender) head(q *accumulator.Queue, p *drainPass) (candidate, bool) {
	if q.Empty() {
		if st := s.buckets[q]; st == nil || len(st.retries) == 0 {
			return candidate{}, false
		}
	}
	st := s.state(q)
	if len(st.retries) > 0 {
		r := st.retries[0]
		return candidate{q: q, st: st, b: *r, retry: r, size: r.Estimated()}, true
	}
	fb, size, readyAt := q.Peek(p.force)
	if fb == nil {
		return candidate{}, false
	}
	return candidate{q: q, st: st, b: unsent(fb), size: size, readyAt: readyAt}, true
}

// expired fails the head if its delivery deadline passed.
func (s *Sender) expired(c candidate, p *drainPass) bool {
	if p.now.Before(c.b.Created().Add(s.cfg.DeliveryTimeout)) {
		return false
	}
	if c.retry != nil {
		c.st.unretry(c.retry)
		s.expire(c.retry)
	} else if c.q.Pop(c.b.Batch) {
		b := c.b
		s.expire(&b)
	}
	s.again = true
	return true
}

// lingering: latency-driven batching (franz-go's producer works this way):
// an idle bucket sends at once; while one of its batches is in flight the
// next one grows, up to Linger or full. A bucket counts as idle only once
// Linger has passed since it last sent: under steady load a bucket whose
// Fluss writes come back quickly would otherwise send a small batch every
// round trip, and Fluss's cost is mostly per batch (each append writes the
// log's index entries), so at most one non-full batch per Linger keeps the
// batches as large as the linger allows while light load still gets one
// round trip.
func (s *Sender) lingering(c candidate, p *drainPass) bool {
	if c.readyAt.IsZero() || !c.readyAt.After(p.now) {
		return false
	}
	wait := c.readyAt
	if len(c.st.inflight) == 0 {
		idleAt := c.st.lastSent.Add(c.readyAt.Sub(c.b.Created())) // last send + Linger
		if !idleAt.After(p.now) {
			return false
		}
		wait = earliest(wait, idleAt)
	}
	p.next = earliest(p.next, wait)
	return true
}

// heldBack: the bucket waits out a retry back-off or a KV throttle.
func (s *Sender) heldBack(c candidate, p *drainPass) bool {
	until := c.st.backoffUntil
	if c.st.throttleUntil.After(until) {
		until = c.st.throttleUntil
	}
	if !until.After(p.now) {
		return false
	}
	p.next = earliest(p.next, until)
	return true
}

// slotTaken: the bucket already has a batch in this pass (merged or sealed).
func (s *Sender) slotTaken(c candidate, p *drainPass) bool {
	if p.slots[c.slot()] {
		s.again = true
		return true
	}
	return false
}

func (c candidate) slot() slotKey {
	return slotKey{c.q.Table().ID(), c.q.PartitionID(), c.q.Bucket()}
}

// staleRetry: a merged retry stamped under a writer id that was reset
// cannot be resent (it could duplicate or reorder): it fails.
func (s *Sender) staleRetry(c candidate) bool {
	if c.q.Sealed() || !s.idem || c.retry == nil || c.b.writerID == s.writerID {
		return false
	}
	c.st.unretry(c.retry)
	s.finish(c.retry, c.st, -1, fmt.Errorf("resend batch: %w", ErrWriterReset))
	s.again = true
	return true
}

// leaderKnown: the bucket's leader is cached; otherwise a lookup starts
// and the loop looks again by the batch's deadline at the latest.
func (s *Sender) leaderKnown(ctx context.Context, c *candidate, p *drainPass) bool {
	leader, ok := s.leader(ctx, c.q, p.now, &p.next)
	if !ok {
		p.next = earliest(p.next, c.b.Created().Add(s.cfg.DeliveryTimeout))
		return false
	}
	c.leader = leader
	return true
}

// sequenceReady applies the per-bucket order and in-flight cap. Sealed
// batches: checked by sealedReady. Under idempotence: a writer id is known
// (else it is asked for), a retry goes only as the bucket's first
// unresolved batch, a fresh batch within the cap and only once the
// bucket's batches of an older writer id are resolved.
func (s *Sender) sequenceReady(ctx context.Context, c candidate, p *drainPass) bool {
	switch {
	case c.q.Sealed():
		return true
	case !s.idem:
		return c.retry != nil || len(c.st.inflight) < s.cfg.MaxInflightPerBucket
	case s.writerID < 0:
		s.maybeInitWriter(ctx, p.now, &p.next)
		p.next = earliest(p.next, c.b.Created().Add(s.cfg.DeliveryTimeout))
		return false
	case c.retry != nil:
		return len(c.st.inflight) > 0 && c.st.inflight[0] == c.retry
	case len(c.st.inflight) >= s.cfg.MaxInflightPerBucket:
		return false
	case c.st.writerID != s.writerID:
		if len(c.st.inflight) > 0 {
			return false // old writer's batches still unresolved
		}
		c.st.writerID, c.st.nextSeq, c.st.lastAcked = s.writerID, 0, -1
	}
	return true
}

// requestFull: the leader's request of this pass is at MaxRequestSize; the
// batch goes in the next pass.
func (s *Sender) requestFull(c candidate, p *drainPass) bool {
	if used := p.serverBytes[c.leader]; used > 0 && used+c.size > s.cfg.MaxRequestSize {
		s.again = true
		return true
	}
	return false
}

// take moves the head into this pass's request for its leader and table:
// a queued batch is popped and stamped, a retry leaves the retries.
func (s *Sender) take(c candidate, p *drainPass) {
	b := c.retry
	if b != nil {
		c.st.unretry(b)
	} else {
		if !c.q.Pop(c.b.Batch) {
			return
		}
		fresh := c.b
		b = &fresh
		c.st.lastSent = p.now
		switch {
		case c.q.Sealed():
			ss := s.sealedOf(b)
			ss.inflight = append(ss.inflight, b)
		default:
			if s.idem {
				b.writerID, b.sequence = s.writerID, c.st.nextSeq
				c.st.nextSeq++
			}
			c.st.inflight = append(c.st.inflight, b)
		}
	}
	if !c.q.Empty() || len(c.st.retries) > 0 {
		s.again = true // one batch per bucket per pass: look again at once
	}
	b.attempts++
	if p.groups == nil {
		p.groups = make(map[groupKey]*request)
		p.serverBytes = make(map[int32]int)
		p.slots = make(map[slotKey]bool)
	}
	p.slots[c.slot()] = true
	p.serverBytes[c.leader] += c.size
	gk := groupKey{c.leader, c.q.Table().ID()}
	req := p.groups[gk]
	if req == nil {
		req = &request{server: c.leader, table: c.q.Table()}
		p.groups[gk] = req
		p.order = append(p.order, req)
	}
	req.add(b, c.st.lastAcked, false)
	if c.retry == nil && b.Fresh() && !c.q.Table().IsKv() {
		s.joinFresh(c, p, req)
	}
}

// maxEntryBatches bounds the fresh sealed batches sent in one records
// entry.
const maxEntryBatches = 64

// joinFresh adds the fresh sealed batches queued behind a fresh head to
// the head's records entry (log tables: a PutKv entry holds one KV batch).
// Fluss keeps one entry per bucket per request, and its cost is mostly per
// entry appended (one log append, its index entries); many producers'
// small exactly-once batches on one bucket would otherwise go one per
// request. Only fresh batches on their first send may share an entry:
// Fluss skips a whole entry when one batch in it is a copy. Each joined
// batch keeps its writer's order and in-flight cap.
func (s *Sender) joinFresh(c candidate, p *drainPass, req *request) {
	for range maxEntryBatches - 1 {
		fb, size, _ := c.q.Peek(true)
		if fb == nil || !fb.Fresh() || p.serverBytes[c.leader]+size > s.cfg.MaxRequestSize ||
			!p.now.Before(fb.Created().Add(s.cfg.DeliveryTimeout)) {
			return
		}
		next := unsent(fb)
		if ss := s.sealed[sealedKey{c.q, next.writerID}]; ss != nil && len(ss.inflight) >= s.cfg.MaxInflightPerBucket {
			return
		}
		if !c.q.Pop(fb) {
			return
		}
		b := &next
		ss := s.sealedOf(b)
		ss.inflight = append(ss.inflight, b)
		b.attempts++
		p.serverBytes[c.leader] += size
		req.add(b, c.st.lastAcked, true)
	}
}
