package sender

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// errMissingBucket: the response had no entry for a bucket we sent.
var errMissingBucket = errors.New("sender: response has no result for the bucket")

// errSharedEntry wraps the error of a records entry that held several
// fresh sealed batches (joinFresh); they are retried alone.
var errSharedEntry = errors.New("sender: a records entry shared by several batches failed")

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
	for i, b := range req.batches {
		if err := resp.buildErr[i]; err != nil {
			s.fail(b, err, true)
			continue
		}
		sent := resp.entry[i] // index of b's entry among the buckets sent
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
		if shared := resp.entryBatches[sent]; shared > 1 {
			tm.sharedEntry.Inc()
			if err != nil {
				// Nothing of the entry was written, or its outcome is
				// unknown: each of its batches is resent on its own, where
				// its own verdict comes back.
				err = fmt.Errorf("%w (%d batches): %w", errSharedEntry, shared, err)
			} else if offset >= 0 {
				offset += resp.before[i] // Fluss answers the entry's base offset
			}
		}
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
func (s *Sender) throttle(b *batch, pressure float32, err error, now time.Time, tm *tableMetrics) {
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
	st := s.state(b.Queue())
	until := now.Add(d)
	if until.After(st.throttleUntil) {
		st.throttleUntil = until
	}
	b.Table().ThrottleTo(until)
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
func writtenBefore(err error, b *batch) bool {
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
func (s *Sender) handleBatch(req *request, i int, b *batch, offset int64, err error, now time.Time, tm *tableMetrics) bool {
	if b.Queue().Sealed() {
		s.handleSealed(b, offset, err, now, tm)
		return fluss.NeedsMetadataRefresh(err)
	}
	st := s.state(b.Queue())
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
	if final, retried := s.retryOrFail(b, st, err, retriable, now, tm); !retried {
		var fe *fluss.Error
		definite := !retriable && errors.As(err, &fe) && code != codeOutOfOrderSequence && code != codeUnknownWriterID
		s.fail(b, final, definite)
	}
	return fluss.NeedsMetadataRefresh(err)
}

// retryOrFail queues b to be resent after its bucket's back-off when err is
// retriable and b has retries and time left (retried). Otherwise it returns
// the error b fails with, saying why no retry is left.
func (s *Sender) retryOrFail(b *batch, st *bucketState, err error, retriable bool, now time.Time, tm *tableMetrics) (final error, retried bool) {
	exhausted := retriable && b.attempts > s.cfg.Retries // resent Retries times already
	if retriable && !exhausted && now.Before(b.Created().Add(s.cfg.DeliveryTimeout)) {
		st.backoffUntil = now.Add(s.retry.Delay(st.retryAttempts))
		st.retryAttempts++
		tm.retries.Inc()
		s.log.Debug("retrying batch", slog.String("table", b.Table().Path().String()),
			slog.Int("bucket", int(b.Bucket())), slog.Int64("writer_id", b.writerID),
			slog.Int("sequence", int(b.sequence)), slog.Int("attempt", b.attempts), slog.Any("err", err))
		st.retryLater(b)
		s.retrying[b.Queue()] = true
		return nil, true
	}
	switch {
	case exhausted:
		err = fmt.Errorf("no retry left after %d attempts (retries %d): %w", b.attempts, s.cfg.Retries, err)
	case retriable:
		err = fmt.Errorf("%w after %d attempts: %w", ErrDeliveryTimeout, b.attempts, err)
	}
	return err, false
}

// fail completes b with err. Under idempotence a definite rejection (the
// server did not write it) closes the sequence gap by lowering the
// sequences of the bucket's later batches; any other failure leaves the
// outcome unknown, so the writer id is reset.
func (s *Sender) fail(b *batch, err error, definite bool) {
	st := s.state(b.Queue())
	stamped := !b.Queue().Sealed() && s.idem && b.sequence != accumulator.NoSequence && b.writerID == st.writerID
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

func (s *Sender) adjustSequences(st *bucketState, failed *batch) {
	for _, x := range st.inflight {
		if x.writerID == failed.writerID && x.sequence > failed.sequence {
			x.sequence--
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

func (s *Sender) succeed(b *batch, st *bucketState, offset int64, tm *tableMetrics) {
	if !b.Queue().Sealed() && s.idem && b.writerID == st.writerID && b.sequence > st.lastAcked {
		st.lastAcked = b.sequence
	}
	st.retryAttempts = 0
	tm.batchSent(b.Batch, s.acc.Config().BatchSize)
	s.finish(b, st, offset, nil)
}

// finish removes b from the bucket's in-flight list and completes it.
func (s *Sender) finish(b *batch, st *bucketState, offset int64, err error) {
	if b.Queue().Sealed() {
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
	b.Complete(offset, err)
}

// expire fails a batch whose delivery deadline passed before it was sent
// (again).
func (s *Sender) expire(b *batch) {
	st := s.state(b.Queue())
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
