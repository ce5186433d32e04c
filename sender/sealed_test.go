package sender

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func sealedOps(vals ...int64) []Op {
	ops := make([]Op, len(vals))
	for i, v := range vals {
		ops[i] = Op{Kind: fluss.WriteAppend, Row: fluss.Row{fluss.IntDatum(v)}}
	}
	return ops
}

func (h *harness) sealed(t *testing.T, table int64, bucket int32, writerID int64, seq int32, vals ...int64) Handle {
	t.Helper()
	hd, err := h.w.WriteSealed(context.Background(), h.tables[table], NoPartition, bucket, writerID, seq, sealedOps(vals...))
	require.NoError(t, err)
	return hd
}

// Sealed batches keep the caller's stamp and their own records, go out in
// order per (writer, bucket), and never share a bucket's slot in a request
// with the merged batch of the same bucket or another sealed batch.
func TestSealedBatchesKeepStampAndOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Everything is queued before the sender runs, and the merged path
		// needs no writer id, so its first pass sees the merged and the
		// sealed queues of bucket 0 ready together.
		h := newIdleHarness(t, func(c *writerConfig) { c.DisableIdempotence = true }, tableDef{id: 1, buckets: 2, server: 1})
		merged := h.append(t, 1, 0, 100)
		var hs []Handle
		for seq := range int32(3) {
			hs = append(hs, h.sealed(t, 1, 0, 7, seq, int64(10*seq), int64(10*seq+1)))
		}
		hs = append(hs, h.sealed(t, 1, 0, 8, 0, 80))
		hs = append(hs, h.sealed(t, 1, 1, 7, 0, 90))
		h.start()
		for _, hd := range append(hs, merged) {
			_, err := hd.Wait(context.Background())
			require.NoError(t, err)
		}
		var w7 []int32
		for i, c := range h.fake.callsFor(1) {
			seen := map[[2]int64]bool{}
			for _, b := range c.Buckets {
				k := [2]int64{b.PartitionID, int64(b.Bucket)}
				assert.False(t, seen[k], "bucket %v twice in request %d", k, i)
				seen[k] = true
				if b.WriterID == 7 && b.Bucket == 0 {
					w7 = append(w7, b.Seq)
					assert.Equal(t, []int64{int64(10 * b.Seq), int64(10*b.Seq + 1)}, b.Values, "sealed content")
				}
			}
		}
		assert.Equal(t, []int32{0, 1, 2}, w7, "writer 7 in sequence order")
		assert.ElementsMatch(t, []int64{100, 0, 1, 10, 11, 20, 21, 80}, h.fake.logValues(1, 0))
		assert.Equal(t, []int64{90}, h.fake.logValues(1, 1))
		h.close(t)
	})
}

// A copy of a sealed batch Fluss already holds (another instance wrote it)
// is answered as a success with the original offset and not written twice.
func TestSealedDuplicateIsSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, tableDef{id: 1, buckets: 1, server: 1})
		off, err := h.sealed(t, 1, 0, 9, 0, 1, 2).Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(0), off)
		_, err = h.sealed(t, 1, 0, 9, 1, 3).Wait(context.Background())
		require.NoError(t, err)
		off, err = h.sealed(t, 1, 0, 9, 0, 1, 2).Wait(context.Background()) // the replay
		require.NoError(t, err)
		assert.Equal(t, int64(0), off, "the original offset")
		assert.Equal(t, []int64{1, 2, 3}, h.fake.logValues(1, 0))
		h.close(t)
	})
}

// A lost response is retried with the same stamp (the copy is dropped by
// Fluss); OUT_OF_ORDER at the head of a writer's batches fails that batch
// with ErrSequenceRejected and resets nothing: the merged path keeps its
// writer id.
func TestSealedRetryAndRejectedSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.RetryBackoff = time.Millisecond
			c.RetryBackoffMax = time.Millisecond
		}, tableDef{id: 1, buckets: 1, server: 1})
		var mu sync.Mutex
		lose := true
		h.fake.setHook(func(c fakeCall) hookResult {
			mu.Lock()
			defer mu.Unlock()
			if lose {
				lose = false
				return hookResult{CallErr: fluss.ErrConnectionClosed, ApplyThenFail: true}
			}
			return hookResult{}
		})
		off, err := h.sealed(t, 1, 0, 5, 0, 42).Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(0), off)
		assert.Equal(t, []int64{42}, h.fake.logValues(1, 0), "written once")

		_, err = h.append(t, 1, 0, 1).Wait(context.Background())
		require.NoError(t, err)
		_, err = h.sealed(t, 1, 0, 5, 3, 43).Wait(context.Background()) // a gap
		require.ErrorIs(t, err, ErrSequenceRejected)
		require.ErrorIs(t, err, fluss.ErrOutOfOrderSequence)
		_, err = h.append(t, 1, 0, 2).Wait(context.Background())
		require.NoError(t, err)
		h.fake.mu.Lock()
		assert.Equal(t, 1, h.fake.inits, "the writer's own id was not reset")
		h.fake.mu.Unlock()
		assert.Equal(t, float64(0), counterValue(t, h, "fluss_gateway_sender_writer_resets_total"))
		calls := h.fake.callsFor(1)
		for _, c := range calls {
			for _, b := range c.Buckets {
				if b.WriterID == 5 && b.Seq == 0 {
					assert.Equal(t, []int64{42}, b.Values)
				}
			}
		}
		h.close(t)
	})
}

// A sealed batch behind a retried one of the same writer gets
// OUT_OF_ORDER (its predecessor is missing) and is resent after it.
func TestSealedOutOfOrderBehindRetryIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.RetryBackoff = time.Millisecond
			c.RetryBackoffMax = time.Millisecond
		}, tableDef{id: 1, buckets: 2, server: 1})
		hold := h.fake.hold(1)
		var mu sync.Mutex
		failed := false
		h.fake.setHook(func(c fakeCall) hookResult {
			mu.Lock()
			defer mu.Unlock()
			for _, b := range c.Buckets {
				if b.Seq == 0 && !failed {
					failed = true
					return hookResult{BucketErr: map[int32]error{b.Bucket: fluss.ErrorForCode(12, "not leader")}}
				}
			}
			return hookResult{}
		})
		a := h.sealed(t, 1, 0, 6, 0, 1)
		<-hold.arrived
		b := h.sealed(t, 1, 0, 6, 1, 2)
		<-hold.arrived // both in flight: seq 0 fails, seq 1 finds a gap
		h.fake.mu.Lock()
		delete(h.fake.holds, 1)
		h.fake.mu.Unlock()
		close(hold.release)
		_, err := a.Wait(context.Background())
		require.NoError(t, err)
		_, err = b.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 2}, h.fake.logValues(1, 0))
		h.close(t)
	})
}

func counterValue(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += metricValue(m)
			}
			return sum
		}
	}
	return 0
}

// On the wire (flussfake, through the real fluss.Client): sealed batches
// with a retriable bucket error are resent with their stamp, a copy is
// answered with the original offset, and a gap fails with
// ErrSequenceRejected while the merged path's writer is untouched.
func TestWireSealed(t *testing.T) {
	t.Parallel()
	h := newWireHarness(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ops := func(v int64) []Op {
		return []Op{{Kind: fluss.WriteAppend, Row: fluss.Row{fluss.IntDatum(v), fluss.IntDatum(0), fluss.StringDatum("x")}}}
	}
	write := func(seq int32, v int64) (int64, error) {
		hd, err := h.w.WriteSealed(ctx, h.tables[0], NoPartition, 1, 900, seq, ops(v))
		require.NoError(t, err)
		return hd.Wait(ctx)
	}
	h.fc.FailBucket(h.ids[0], fluss.NoPartition, 1, 12) // NOT_LEADER once: retried
	off, err := write(0, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(0), off)
	off, err = write(1, 2)
	require.NoError(t, err)
	assert.Equal(t, int64(1), off)
	off, err = write(0, 1) // the copy
	require.NoError(t, err)
	assert.Equal(t, int64(0), off)
	_, err = write(7, 3)
	require.ErrorIs(t, err, ErrSequenceRejected)
	_, err = h.append(t, 0, 1, 4).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), h.fc.LogEndOffset(h.ids[0], fluss.NoPartition, 1))
	h.close(t)
}

// Fresh sealed batches queued together go in one records entry, each
// answered at its own offset (the entry's base plus the records before
// it); a batch not marked fresh (a replay, a retry) never shares one.
func TestFreshSealedBatchesShareAnEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newIdleHarness(t, nil, tableDef{id: 1, buckets: 1, server: 1})
		seal := func(writer int64, seq int32, fresh bool, v int64) Handle {
			hd, err := h.w.WriteSeal(context.Background(), h.tables[1], NoPartition, 0, Seal{WriterID: writer, Sequence: seq, Fresh: fresh}, sealedOps(v, v+1))
			require.NoError(t, err)
			return hd
		}
		var shared []Handle
		for w := int64(1); w <= 4; w++ {
			shared = append(shared, seal(w, 0, true, 10*w))
		}
		shared = append(shared, seal(1, 1, true, 50)) // the same writer's next
		stale := seal(6, 0, false, 60)
		h.start()
		for i, hd := range shared {
			off, err := hd.Wait(context.Background())
			require.NoError(t, err)
			assert.Equal(t, int64(2*i), off, "batch %d: the entry's base plus the records before it", i)
		}
		off, err := stale.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(10), off)
		calls := h.fake.callsFor(1)
		require.Len(t, calls, 2)
		require.Len(t, calls[0].Buckets, 5)
		for _, b := range calls[0].Buckets {
			assert.Equal(t, 0, b.Entry, "one records entry")
		}
		require.Len(t, calls[1].Buckets, 1, "a batch not fresh goes alone")
		assert.Equal(t, []int64{10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 60, 61}, h.fake.logValues(1, 0))
		h.close(t)
	})
}
