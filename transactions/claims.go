package transactions

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/produce"
)

// txnClaims hands out the producer id and epoch of transactional ids
// (InitProducerId with a transactional id), agreed by every instance
// through the transactions table (docs/transactions.md, "Claims").
//
// The claims of an id are rows numbered 0, 1, 2, … without gaps: claim c+1
// is written only by someone who read claim c, with insert-if-absent. The
// highest claim is the id's current producer id and epoch; every older one
// is fenced.
type txnClaims struct {
	rows       txnRows
	pids       produce.WriterIDs // producer ids unique across instances
	maxTimeout time.Duration
	now        func() time.Time
}

// claimProbes is how many claim keys one lookup asks for.
const claimProbes = 16

// maxTxnEpoch is the last epoch a producer id is bumped to; the next claim
// takes a new producer id at epoch 0, as Kafka does
// (Short.MaxValue - 1 is exhausted there).
const maxTxnEpoch = math.MaxInt16 - 2

func newTxnClaims(rows txnRows, pids produce.WriterIDs, maxTimeout time.Duration, now func() time.Time) *txnClaims {
	if now == nil {
		now = time.Now
	}
	return &txnClaims{rows: rows, pids: pids, maxTimeout: maxTimeout, now: now}
}

// current returns the id's highest claim, nil if it has none.
func (t *txnClaims) current(ctx context.Context, id string) (*txnRow, error) {
	_, row, err := highestRow(ctx, t.rows, id, func(c int64) txnKey { return txnKey{claim: c, txn: txnClaimRow} })
	return row, err
}

// highestRow finds the highest i whose row keyOf(i) exists, for a family
// of rows written without gaps (claims; a claim's outcomes): -1 and nil if
// there is none. The rows are a prefix 0..C of the numbers, so a 16-ary
// search finds C: first probes at lo+1, lo+2, lo+4, … lo+2^15 until one is
// missing, then 16 evenly spaced probes between the highest present and
// the lowest missing, in one lookup each (C below 65,536 takes at most 5).
func highestRow(ctx context.Context, rows txnRows, id string, keyOf func(int64) txnKey) (int64, *txnRow, error) {
	lo, hi := int64(-1), int64(-1) // hi < 0: no row known to be missing
	var loRow *txnRow
	probes := make([]int64, 0, claimProbes)
	keys := make([]txnKey, 0, claimProbes)
	for {
		probes = probes[:0]
		switch span := hi - lo; {
		case hi < 0:
			for i := range claimProbes {
				probes = append(probes, lo+1<<i)
			}
		case span <= 1:
			return lo, loRow, nil
		case span-1 <= claimProbes:
			for c := lo + 1; c < hi; c++ {
				probes = append(probes, c)
			}
		default:
			for i := range int64(claimProbes) {
				probes = append(probes, lo+span*(i+1)/(claimProbes+1))
			}
		}
		keys = keys[:0]
		for _, c := range probes {
			keys = append(keys, keyOf(c))
		}
		got, err := rows.get(ctx, id, keys)
		if err != nil {
			return -1, nil, err
		}
		missing := -1
		for i, r := range got {
			switch {
			case r != nil && missing >= 0:
				return -1, nil, fmt.Errorf("rows of transactional id %q are not contiguous: %+v is missing, %+v is not", id, keys[missing], keys[i])
			case r != nil:
				lo, loRow = probes[i], r
			case missing < 0:
				missing = i
			}
		}
		if missing >= 0 {
			hi = probes[missing]
		}
	}
}

// init answers InitProducerId for a transactional id: the next claim's
// producer id and epoch, which fences every older epoch. expectedPID and
// expectedEpoch are the v3+ fields (-1 when the producer has none): the
// current claim's pair bumps it, the previous claim's pair (a retry whose
// answer was lost) gets the current claim back, any other pair is fenced.
//
// Errors are kafkaproto sentinels: ErrInvalidTransactionTimeout,
// ErrProducerFenced, ErrConcurrentTransactions when another instance
// claimed the same epoch first (every client retries it, and its retry
// claims the next one), and ErrCoordinatorLoadInProgress, wrapping the
// cause, when Fluss cannot be read or written.
func (t *txnClaims) init(ctx context.Context, id string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (int64, int16, error) {
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > t.maxTimeout {
		return -1, -1, fmt.Errorf("%w: transaction.timeout.ms %d of %q is not in (0, %d]",
			kafkaproto.ErrInvalidTransactionTimeout, timeoutMs, id, t.maxTimeout.Milliseconds())
	}
	cur, err := t.current(ctx, id)
	if err != nil {
		return -1, -1, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	if expectedPID >= 0 {
		switch {
		case cur == nil:
			return -1, -1, fmt.Errorf("%w: %q has no producer id, the producer names %d epoch %d",
				kafkaproto.ErrProducerFenced, id, expectedPID, expectedEpoch)
		case cur.producerID == expectedPID && cur.epoch == expectedEpoch:
			// bump below
		default:
			prev, err := t.claim(ctx, id, cur.key.claim-1)
			if err != nil {
				return -1, -1, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
			}
			if prev != nil && prev.producerID == expectedPID && prev.epoch == expectedEpoch {
				return cur.producerID, cur.epoch, nil
			}
			return -1, -1, fmt.Errorf("%w: %q is at producer id %d epoch %d, the producer names %d epoch %d",
				kafkaproto.ErrProducerFenced, id, cur.producerID, cur.epoch, expectedPID, expectedEpoch)
		}
	}
	next := &txnRow{id: id, key: txnKey{claim: 0, txn: txnClaimRow}, timeoutMs: timeoutMs,
		writtenBy: randomInt63(), writtenAtMs: t.now().UnixMilli()}
	if cur != nil {
		next.key.claim = cur.key.claim + 1
		next.producerID, next.epoch = cur.producerID, cur.epoch+1
	}
	if cur == nil || cur.epoch >= maxTxnEpoch {
		pid, err := t.pids.InitWriter(ctx)
		if err != nil {
			return -1, -1, fmt.Errorf("producer id for transactional id %q: %w", id, err)
		}
		next.producerID, next.epoch = pid, 0
	}
	if err := t.rows.insert(ctx, next); err != nil {
		return -1, -1, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	won, err := t.claim(ctx, id, next.key.claim)
	switch {
	case err != nil:
		return -1, -1, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	case won == nil:
		return -1, -1, fmt.Errorf("%w: claim %d of %q is not readable after its write", kafkaproto.ErrCoordinatorLoadInProgress, next.key.claim, id)
	case won.writtenBy != next.writtenBy:
		return -1, -1, fmt.Errorf("%w: another InitProducerId of %q took claim %d first", kafkaproto.ErrConcurrentTransactions, id, next.key.claim)
	}
	return won.producerID, won.epoch, nil
}

// claim reads claim c of id; nil if it does not exist (or c < 0).
func (t *txnClaims) claim(ctx context.Context, id string, c int64) (*txnRow, error) {
	if c < 0 {
		return nil, nil
	}
	rows, err := t.rows.get(ctx, id, []txnKey{{claim: c, txn: txnClaimRow}})
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}

// randomInt63 names a writer of a row: two racers never share one.
func randomInt63() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}
