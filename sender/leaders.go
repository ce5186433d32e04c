package sender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// leader returns the cached leader of q's bucket, starting a refresh
// goroutine when it is unknown.
func (s *Sender) leader(ctx context.Context, q *accumulator.Queue, now time.Time, next *time.Time) (int32, bool) {
	k := tableKey{q.Table().ID(), q.PartitionID()}
	lc := s.leaders[k]
	if lc == nil {
		lc = &leaderCache{}
		s.leaders[k] = lc
	}
	if lc.valid && int(q.Bucket()) < len(lc.leaders) {
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
	lc.buckets = int(q.RoutingBuckets())
	s.lookUp(ctx, k, lc)
	return 0, false
}

// lookUp starts a goroutine that asks for the leader of every bucket of k
// and posts the result to the loop.
func (s *Sender) lookUp(ctx context.Context, k tableKey, lc *leaderCache) {
	lc.refreshing = true
	n := lc.buckets
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
}

// lookUpLeaderless looks the leaderless keys up again on their back-off,
// whether or not batches wait for them.
func (s *Sender) lookUpLeaderless(ctx context.Context, now time.Time, next *time.Time) {
	for k := range s.leaderlessKeys {
		lc := s.leaders[k]
		switch {
		case lc.refreshing:
		case lc.retryAt.After(now):
			*next = earliest(*next, lc.retryAt)
		default:
			s.lookUp(ctx, k, lc)
		}
	}
}

// leaderLogEvery is how many failed leader lookups of a table share one
// WARN line after the first.
const leaderLogEvery = 30

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
		lc.retryAt = now.Add(s.retry.Delay(lc.attempts))
		lc.attempts++
		if lc.unknownSince.IsZero() {
			lc.unknownSince = now
		}
		if now.Sub(lc.unknownSince) >= s.cfg.LeaderWait {
			s.noLeader(r.key, lc, r.err)
		}
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
	lc.attempts, lc.unknownSince = 0, time.Time{}
	if s.leaderlessKeys[r.key] {
		delete(s.leaderlessKeys, r.key)
		s.setLeaderless(r.key, false)
	}
}

// noLeader fails the batches queued for k's buckets without a leader
// (never sent: retriable without risk) and marks k leaderless until a
// lookup finds every leader.
func (s *Sender) noLeader(k tableKey, lc *leaderCache, lookupErr error) {
	if !s.leaderlessKeys[k] {
		s.leaderlessKeys[k] = true
		s.setLeaderless(k, true)
		s.log.Warn("bucket leaders unknown for too long: queued batches fail and the table is reported leaderless",
			slog.Int64("table_id", k.tableID), slog.Int64("partition_id", k.partitionID),
			slog.Duration("leader_wait", s.cfg.LeaderWait), slog.Any("err", lookupErr))
	}
	err := fmt.Errorf("%w for %v: %w", ErrNoLeader, s.cfg.LeaderWait, lookupErr)
	for _, q := range s.acc.Queues() {
		if q.Table().ID() != k.tableID || q.PartitionID() != k.partitionID || q.Empty() {
			continue
		}
		if b := int(q.Bucket()); b < len(lc.leaders) && lc.leaders[b] >= 0 {
			continue
		}
		s.failUnsent(q, s.state(q), err)
	}
}

// failUnsent fails every batch still in q (never sent) and returns how
// many.
func (s *Sender) failUnsent(q *accumulator.Queue, st *bucketState, err error) int {
	bs := q.DrainAll()
	for _, qb := range bs {
		b := unsent(qb)
		s.finish(&b, st, -1, err)
	}
	return len(bs)
}

// setLeaderless publishes a non-partitioned table's leader state for
// Leaderless.
func (s *Sender) setLeaderless(k tableKey, on bool) {
	if k.partitionID != accumulator.NoPartition {
		return
	}
	m := map[int64]bool{}
	if old := s.leaderless.Load(); old != nil {
		maps.Copy(m, *old)
	}
	if on {
		m[k.tableID] = true
	} else {
		delete(m, k.tableID)
	}
	s.leaderless.Store(&m)
}

// failQueued fails every queued batch of one table (partition), and the
// retries waiting for it.
func (s *Sender) failQueued(k tableKey, err error) {
	n := 0
	for _, q := range s.acc.Queues() {
		if q.Table().ID() != k.tableID || q.PartitionID() != k.partitionID {
			continue
		}
		st := s.buckets[q]
		if q.Empty() && (st == nil || len(st.retries) == 0) {
			continue
		}
		st = s.state(q)
		retries := st.retries
		st.retries = nil
		for _, b := range retries {
			s.finish(b, st, -1, err)
			n++
		}
		n += s.failUnsent(q, st, err)
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
		s.initRetryAt = now.Add(s.retry.Delay(s.initAttempts))
		s.initAttempts++
		s.log.Warn("init writer failed", slog.Any("err", r.err), slog.Int("attempt", s.initAttempts))
		return
	}
	s.writerID, s.initErr, s.initAttempts = r.writerID, nil, 0
	s.log.Info("writer id assigned", slog.Int64("writer_id", r.writerID))
}
