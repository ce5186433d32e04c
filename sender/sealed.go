package sender

import (
	"errors"
	"fmt"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// Sealed batches (accumulator.AppendSealed) carry a writer id and batch
// sequence chosen by the caller. The sender keeps their order and
// in-flight state per (writer id, bucket) instead of under its own writer
// id, and never resets anything for them: the caller owns those sequences.

// sealedKey is one (writer id, bucket) of sealed batches.
type sealedKey struct {
	q        *accumulator.Queue
	writerID int64
}

// sealedState holds the sealed batches of one (writer id, bucket) drained
// and not completed, in sequence order.
type sealedState struct {
	inflight []*batch
}

func (s *Sender) sealedOf(b *batch) *sealedState {
	k := sealedKey{b.Queue(), b.writerID}
	ss := s.sealed[k]
	if ss == nil {
		ss = &sealedState{}
		s.sealed[k] = ss
	}
	return ss
}

// sealedReady reports whether a sealed head may be sent now: a retry only
// as its writer's first unresolved batch, a fresh batch within the
// in-flight cap. Merged heads pass.
func (s *Sender) sealedReady(c candidate) bool {
	if !c.q.Sealed() {
		return true
	}
	ss := s.sealed[sealedKey{c.q, c.b.writerID}]
	if c.retry != nil {
		return ss != nil && len(ss.inflight) > 0 && ss.inflight[0] == c.retry
	}
	return ss == nil || len(ss.inflight) < s.cfg.MaxInflightPerBucket
}

// forgetSealed removes b from its writer's in-flight list.
func (s *Sender) forgetSealed(b *batch) {
	k := sealedKey{b.Queue(), b.writerID}
	ss := s.sealed[k]
	if ss == nil {
		return
	}
	for j, x := range ss.inflight {
		if x == b {
			ss.inflight = append(ss.inflight[:j], ss.inflight[j+1:]...)
			break
		}
	}
	if len(ss.inflight) == 0 {
		delete(s.sealed, k) // bounded by the batches in flight
	}
}

// handleSealed decides a sealed batch's outcome: a Fluss duplicate answer
// (or out-of-order with the server already past it) is a success;
// OUT_OF_ORDER_SEQUENCE at the head of its writer's batches
// (ErrSequenceRejected) and unknown outcomes fail it alone. Unlike merged
// batches it never touches the sender's writer id or other batches'
// sequences.
func (s *Sender) handleSealed(b *batch, offset int64, err error, now time.Time, tm *tableMetrics) {
	st := s.state(b.Queue())
	code := errCode(err)
	if err == nil || code == codeDuplicateSequence || (code == codeOutOfOrderSequence && writtenBefore(err, b)) {
		if err != nil {
			offset = -1 // a copy of a batch written before
		}
		s.succeed(b, st, offset, tm)
		return
	}
	tm.errorCode(code)
	retriable := fluss.IsRetriable(err)
	switch {
	case errors.Is(err, errSharedEntry):
		retriable = true // resent alone: no longer fresh, its own answer
	case code == codeOutOfOrderSequence:
		// Expected while an earlier batch of the writer is unresolved (it
		// failed retriably and is resent first); final at the head.
		ss := s.sealed[sealedKey{b.Queue(), b.writerID}]
		retriable = ss != nil && len(ss.inflight) > 0 && ss.inflight[0] != b
		if !retriable {
			err = fmt.Errorf("%w: writer %d sequence %d: %w", ErrSequenceRejected, b.writerID, b.sequence, err)
		}
	}
	if final, retried := s.retryOrFail(b, st, err, retriable, now, tm); !retried {
		s.finish(b, st, -1, final)
	}
}
