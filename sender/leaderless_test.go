package sender

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A table whose buckets have no leader affects only itself: its queued
// batches fail with ErrNoLeader after LeaderWait (never sent, so a retry
// cannot duplicate them), not at the delivery timeout; the table is
// reported leaderless, and seen to recover by lookups of its own, without
// traffic. Another table on the same server is written all along.
func TestLeaderlessTableFailsQueuedAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) { c.Linger = 0 },
			tableDef{id: 1, buckets: 2, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
		h.fake.mu.Lock()
		delete(h.fake.leaders, 1)
		h.fake.mu.Unlock()
		ctx := context.Background()

		start := time.Now()
		stuck := h.append(t, 1, 0, 1)
		_, err := h.append(t, 2, 0, 2).Wait(ctx)
		require.NoError(t, err, "the other table is written")
		_, err = stuck.Wait(ctx)
		require.ErrorIs(t, err, ErrNoLeader)
		waited := time.Since(start)
		assert.GreaterOrEqual(t, waited, h.snd.cfg.LeaderWait)
		assert.Less(t, waited, h.snd.cfg.LeaderWait+2*h.snd.cfg.RetryBackoffMax, "failed at LeaderWait, not the delivery timeout")
		assert.True(t, h.snd.Leaderless(1))
		assert.False(t, h.snd.Leaderless(2))
		assert.Empty(t, h.fake.logValues(1, 0), "nothing of it was sent")

		// A batch queued while the table is leaderless fails at the next
		// lookup, within the back-off.
		start = time.Now()
		_, err = h.append(t, 1, 1, 3).Wait(ctx)
		require.ErrorIs(t, err, ErrNoLeader)
		assert.LessOrEqual(t, time.Since(start), 2*h.snd.cfg.RetryBackoffMax)

		h.fake.mu.Lock()
		h.fake.leaders[1] = 1
		h.fake.mu.Unlock()
		time.Sleep(2 * h.snd.cfg.RetryBackoffMax) // fake clock: the next lookups
		synctest.Wait()
		assert.False(t, h.snd.Leaderless(1), "recovered without traffic")
		_, err = h.append(t, 1, 0, 4).Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, []int64{4}, h.fake.logValues(1, 0))
		h.close(t)
	})
}
