package transactions

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/clocktest"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

func newTestLedger() (*txnLedger, *memTxnRows, *clocktest.Clock) {
	rows := newMemTxnRows()
	clock := clocktest.New(time.Unix(1_800_000_000, 0))
	claims := newTxnClaims(rows, &countingIDs{}, time.Hour, clock.Now)
	return &txnLedger{claims: claims, rows: rows, now: clock.Now}, rows, clock
}

func initTxn(t *testing.T, l *txnLedger, id string, timeoutMs int32) kafkaproto.TxnProducer {
	t.Helper()
	pid, epoch, err := l.claims.init(context.Background(), id, timeoutMs, -1, -1)
	require.NoError(t, err)
	return kafkaproto.TxnProducer{TransactionalID: id, ProducerID: pid, Epoch: epoch}
}

func TestTxnLedgerCommitAbortAndRetries(t *testing.T) {
	ctx := t.Context()
	l, _, _ := newTestLedger()
	p := initTxn(t, l, "tx", 60_000)

	_, _, err := l.end(ctx, p, true, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrInvalidTxnState, "EndTxn with no transaction")

	pos, err := l.begin(ctx, p, nil, noStaging)
	require.NoError(t, err)
	assert.Equal(t, int64(0), pos.n)
	again, err := l.begin(ctx, p, nil, noStaging)
	require.NoError(t, err)
	assert.Equal(t, pos.begin.writtenBy, again.begin.writtenBy, "more partitions, same transaction")

	out, _, err := l.end(ctx, p, true, noStaging)
	require.NoError(t, err)
	assert.Equal(t, outcomeCommit, out.outcome)
	retry, _, err := l.end(ctx, p, true, noStaging)
	require.NoError(t, err, "a repeated commit (Flink's committer after a restart)")
	assert.Equal(t, out.writtenBy, retry.writtenBy)
	_, _, err = l.end(ctx, p, false, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrInvalidTxnState, "an abort of the committed transaction")

	pos, err = l.begin(ctx, p, nil, noStaging)
	require.NoError(t, err)
	assert.Equal(t, int64(1), pos.n, "the next transaction of the same epoch")
	out, _, err = l.end(ctx, p, false, noStaging)
	require.NoError(t, err)
	assert.Equal(t, outcomeAbort, out.outcome)
	_, _, err = l.end(ctx, p, true, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrInvalidTxnState, "a commit after the abort")
}

func TestTxnLedgerFencing(t *testing.T) {
	ctx := t.Context()
	l, _, _ := newTestLedger()
	old := initTxn(t, l, "tx", 60_000)
	_, err := l.begin(ctx, old, nil, noStaging)
	require.NoError(t, err)
	cur := initTxn(t, l, "tx", 60_000)
	require.Equal(t, old.Epoch+1, cur.Epoch)

	_, err = l.begin(ctx, old, nil, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced)
	_, _, err = l.end(ctx, old, true, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced)
	stranger := cur
	stranger.ProducerID++
	_, _, err = l.end(ctx, stranger, true, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrInvalidProducerIDMapping)

	// The new claim settles the old one's open transaction: aborted.
	oldClaim, err := l.claims.claim(ctx, "tx", 0)
	require.NoError(t, err)
	settled, err := l.settle(ctx, oldClaim)
	require.NoError(t, err)
	require.NotNil(t, settled)
	assert.Equal(t, outcomeAbort, settled.outcome)
	nothing, err := l.settle(ctx, oldClaim)
	require.NoError(t, err)
	assert.Nil(t, nothing, "nothing open any more")
}

func TestTxnLedgerTimeoutAborts(t *testing.T) {
	ctx := t.Context()
	l, _, clock := newTestLedger()
	p := initTxn(t, l, "slow", 1_000)
	_, err := l.begin(ctx, p, nil, noStaging)
	require.NoError(t, err)
	clock.Advance(999 * time.Millisecond)
	_, err = l.begin(ctx, p, nil, noStaging)
	require.NoError(t, err, "within the timeout")
	clock.Advance(2 * time.Millisecond)
	_, _, err = l.end(ctx, p, true, noStaging)
	require.ErrorIs(t, err, kafkaproto.ErrProducerFenced)
	assert.ErrorIs(t, err, errTxnTimedOut)
	_, _, err = l.end(ctx, p, true, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced, "a retried commit after the timeout's abort")

	q := initTxn(t, l, "slower", 1_000)
	_, err = l.begin(ctx, q, nil, noStaging)
	require.NoError(t, err)
	clock.Advance(5 * time.Second)
	_, err = l.begin(ctx, q, nil, noStaging)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced, "adding partitions past the timeout")
	assert.ErrorIs(t, err, errTxnTimedOut)
	out, _, err := l.end(ctx, q, false, noStaging)
	require.NoError(t, err, "the producer's abort of a transaction the timeout aborted")
	assert.Equal(t, "timeout", out.reason)
}

// A commit and a newer claim's abort race for one outcome: whichever row
// lands first stands, for both.
func TestTxnLedgerCommitRacesSettle(t *testing.T) {
	ctx := t.Context()

	t.Run("abort first", func(t *testing.T) {
		l, rows, _ := newTestLedger()
		p := initTxn(t, l, "tx", 60_000)
		_, err := l.begin(ctx, p, nil, noStaging)
		require.NoError(t, err)
		oldClaim, err := l.claims.claim(ctx, "tx", 0)
		require.NoError(t, err)
		rows.beforeInsert = func(r *txnRow) {
			if r.outcome != outcomeCommit {
				return
			}
			rows.beforeInsert = nil
			settled, err := l.settle(ctx, oldClaim)
			require.NoError(t, err)
			assert.Equal(t, outcomeAbort, settled.outcome)
		}
		_, _, err = l.end(ctx, p, true, noStaging)
		assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced)
	})

	t.Run("commit first", func(t *testing.T) {
		l, _, _ := newTestLedger()
		p := initTxn(t, l, "tx", 60_000)
		_, err := l.begin(ctx, p, nil, noStaging)
		require.NoError(t, err)
		out, _, err := l.end(ctx, p, true, noStaging)
		require.NoError(t, err)
		oldClaim, err := l.claims.claim(ctx, "tx", 0)
		require.NoError(t, err)
		// The commit's outcome row exists: the next transaction is the
		// open one, and it has not begun, so nothing is left to settle.
		settled, err := l.settle(ctx, oldClaim)
		require.NoError(t, err)
		assert.Nil(t, settled)
		assert.Equal(t, outcomeCommit, out.outcome)
	})
}

func noStaging(context.Context) (int64, error) { return 0, nil }
