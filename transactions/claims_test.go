package transactions

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// memTxnRows is the transactions table in memory with first_row's rule: a
// row whose key exists is ignored. beforeInsert, when set, runs before
// each insert (a racing instance's write lands first).
type memTxnRows struct {
	mu           sync.Mutex
	rows         map[string]map[txnKey]txnRow
	lookups      int
	beforeInsert func(r *txnRow)
}

func newMemTxnRows() *memTxnRows { return &memTxnRows{rows: map[string]map[txnKey]txnRow{}} }

func (m *memTxnRows) insert(_ context.Context, r *txnRow) error {
	if m.beforeInsert != nil {
		m.beforeInsert(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows[r.id] == nil {
		m.rows[r.id] = map[txnKey]txnRow{}
	}
	if _, ok := m.rows[r.id][r.key]; !ok {
		m.rows[r.id][r.key] = *r
	}
	return nil
}

func (m *memTxnRows) get(_ context.Context, id string, keys []txnKey) ([]*txnRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lookups++
	out := make([]*txnRow, len(keys))
	for i, k := range keys {
		if r, ok := m.rows[id][k]; ok {
			out[i] = &r
		}
	}
	return out, nil
}

// addClaims writes claims 0..n-1 of id directly.
func (m *memTxnRows) addClaims(id string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows[id] == nil {
		m.rows[id] = map[txnKey]txnRow{}
	}
	for c := range n {
		k := txnKey{claim: c, txn: txnClaimRow}
		m.rows[id][k] = txnRow{id: id, key: k, producerID: 1000 + c, epoch: int16(c % 7)}
	}
}

func (m *memTxnRows) claimCount(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.rows[id] {
		if k.txn == txnClaimRow {
			n++
		}
	}
	return n
}

type countingIDs struct {
	mu   sync.Mutex
	next int64
}

func (c *countingIDs) InitWriter(context.Context, ...fluss.TablePath) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return 500 + c.next, nil
}

// The highest claim is found with few lookups wherever it is, including
// around the probe boundaries and past the first 2^15.
func TestTxnClaimsCurrentFindsTheHighestClaim(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3, 16, 17, 18, 100, 1000, 32768, 32769, 40000, 65535} {
		rows := newMemTxnRows()
		rows.addClaims("t", n)
		c := newTxnClaims(rows, &countingIDs{}, time.Hour, nil)
		cur, err := c.current(t.Context(), "t")
		require.NoError(t, err, n)
		if n == 0 {
			assert.Nil(t, cur)
		} else {
			require.NotNil(t, cur, n)
			assert.Equal(t, n-1, cur.key.claim, "claims 0..%d", n-1)
		}
		assert.LessOrEqual(t, rows.lookups, 6, "lookups for %d claims", n)
	}
}

func TestTxnClaimsCurrentRefusesAGap(t *testing.T) {
	rows := newMemTxnRows()
	rows.addClaims("t", 5)
	rows.rows["t"][txnKey{claim: 15, txn: txnClaimRow}] = txnRow{id: "t"} // a probe point past a missing one
	_, err := newTxnClaims(rows, &countingIDs{}, time.Hour, nil).current(t.Context(), "t")
	assert.ErrorContains(t, err, "not contiguous")
}

func TestTxnClaimsInit(t *testing.T) {
	ctx := t.Context()
	rows := newMemTxnRows()
	ids := &countingIDs{}
	c := newTxnClaims(rows, ids, time.Hour, nil)

	pid, epoch, err := c.init(ctx, "a", 60_000, -1, -1)
	require.NoError(t, err)
	assert.Equal(t, int64(501), pid)
	assert.Equal(t, int16(0), epoch, "a never-seen id gets epoch 0")

	pid2, epoch2, err := c.init(ctx, "a", 60_000, -1, -1)
	require.NoError(t, err)
	assert.Equal(t, pid, pid2, "the producer id stays")
	assert.Equal(t, int16(1), epoch2, "each init bumps the epoch")

	other, otherEpoch, err := c.init(ctx, "b", 60_000, -1, -1)
	require.NoError(t, err)
	assert.NotEqual(t, pid, other)
	assert.Equal(t, int16(0), otherEpoch)

	// KIP-360: the current pair bumps, the previous pair (a retry) gets
	// the current claim back, anything else is fenced.
	_, epoch3, err := c.init(ctx, "a", 60_000, pid, 1)
	require.NoError(t, err)
	assert.Equal(t, int16(2), epoch3)
	p, e, err := c.init(ctx, "a", 60_000, pid, 1)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{pid, 2}, [2]int64{p, int64(e)}, "a retry of the last bump")
	assert.Equal(t, 3, rows.claimCount("a"), "a retry claims nothing")
	_, _, err = c.init(ctx, "a", 60_000, pid, 0)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced)
	_, _, err = c.init(ctx, "new", 60_000, 42, 0)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced, "a pair for an id with no claim")

	for _, bad := range []int32{0, -1, 3_600_001} {
		_, _, err = c.init(ctx, "a", bad, -1, -1)
		assert.ErrorIs(t, err, kafkaproto.ErrInvalidTransactionTimeout, bad)
	}
	_, _, err = c.init(ctx, "a", 3_600_000, -1, -1)
	assert.NoError(t, err, "Flink's default timeout of 1 h")
}

func TestTxnClaimsEpochExhaustionTakesANewProducerID(t *testing.T) {
	rows := newMemTxnRows()
	rows.rows["x"] = map[txnKey]txnRow{}
	k := txnKey{claim: 0, txn: txnClaimRow}
	rows.rows["x"][k] = txnRow{id: "x", key: k, producerID: 7, epoch: maxTxnEpoch}
	pid, epoch, err := newTxnClaims(rows, &countingIDs{}, time.Hour, nil).init(t.Context(), "x", 1000, -1, -1)
	require.NoError(t, err)
	assert.Equal(t, int64(501), pid)
	assert.Equal(t, int16(0), epoch)
}

// An init that loses its claim to another instance's is told to retry;
// the retry claims the next epoch, fencing the winner.
func TestTxnClaimsLostRaceIsConcurrentTransactions(t *testing.T) {
	ctx := t.Context()
	rows := newMemTxnRows()
	c := newTxnClaims(rows, &countingIDs{}, time.Hour, nil)
	_, _, err := c.init(ctx, "r", 1000, -1, -1)
	require.NoError(t, err)
	rows.beforeInsert = func(r *txnRow) {
		rows.beforeInsert = nil // the other instance's write: once
		other := *r
		other.writtenBy = r.writtenBy + 1
		require.NoError(t, rows.insert(ctx, &other))
	}
	_, _, err = c.init(ctx, "r", 1000, -1, -1)
	require.ErrorIs(t, err, kafkaproto.ErrConcurrentTransactions)
	_, epoch, err := c.init(ctx, "r", 1000, -1, -1)
	require.NoError(t, err)
	assert.Equal(t, int16(2), epoch)
}

// Concurrent inits of one id: every success holds its own epoch, and the
// claims are exactly the successes.
func TestTxnClaimsConcurrentInitsNeverShareAnEpoch(t *testing.T) {
	rows := newMemTxnRows()
	c := newTxnClaims(rows, &countingIDs{}, time.Hour, nil)
	const racers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	epochs := map[int16]int{}
	for range racers {
		wg.Go(func() {
			for {
				_, e, err := c.init(context.Background(), "z", 1000, -1, -1)
				if errors.Is(err, kafkaproto.ErrConcurrentTransactions) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				epochs[e]++
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	assert.Len(t, epochs, racers)
	for e, n := range epochs {
		assert.Equal(t, 1, n, "epoch %d", e)
	}
	assert.Equal(t, racers, rows.claimCount("z"))
}
