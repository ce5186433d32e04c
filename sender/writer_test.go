package sender

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// Retries bounds the resends of a batch that keeps failing with a
// retriable error: after Retries resends it fails with its last error, well
// before the delivery timeout; a huge Retries leaves the delivery timeout as
// the bound.
func TestRetriesBoundResends(t *testing.T) {
	tests := []struct {
		name     string
		retries  int
		callErr  bool // fail the whole request rather than the bucket
		wantSent int
	}{
		{name: "no retry", retries: 0, wantSent: 1},
		{name: "two retries", retries: 2, wantSent: 3},
		{name: "two retries, request error", retries: 2, callErr: true, wantSent: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, func(c *writerConfig) {
					c.Linger = 0
					c.Retries = tc.retries
					c.RetryBackoff, c.RetryBackoffMax = 10*time.Millisecond, 10*time.Millisecond
				}, tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
				var mu sync.Mutex
				failing := true
				h.fake.setHook(func(c fakeCall) hookResult {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case c.TableID != 1 || !failing:
						return hookResult{}
					case tc.callErr:
						return hookResult{CallErr: fluss.ErrorForCode(29, "not enough replicas")}
					}
					return hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(29, "not enough replicas")}}
				})
				start := time.Now()
				_, err := h.append(t, 1, 0, 1).Wait(context.Background())
				require.ErrorIs(t, err, fluss.ErrNotEnoughReplicas, "fails with its last error")
				assert.NotErrorIs(t, err, ErrDeliveryTimeout)
				assert.Less(t, time.Since(start), time.Second, "not held until the delivery timeout")
				calls := h.fake.callsFor(1)
				require.Len(t, calls, tc.wantSent, "sent once plus Retries resends")
				for _, c := range calls {
					assert.Equal(t, calls[0].Buckets[0].Seq, c.Buckets[0].Seq, "a resend keeps its sequence")
				}
				assert.Equal(t, float64(tc.retries), h.snd.m.retriesTotal())
				assert.Empty(t, h.fake.logValues(1, 0))

				// Other tables were not affected, and the table writes again.
				_, err = h.append(t, 2, 0, 2).Wait(context.Background())
				require.NoError(t, err)
				mu.Lock()
				failing = false
				mu.Unlock()
				_, err = h.append(t, 1, 0, 3).Wait(context.Background())
				require.NoError(t, err)
				assert.Equal(t, []int64{3}, h.fake.logValues(1, 0))
				h.close(t)
			})
		})
	}
	t.Run("delivery timeout still bounds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, func(c *writerConfig) {
				c.Linger = 0
				c.Retries = math.MaxInt32
				c.RetryBackoff, c.RetryBackoffMax = 100*time.Millisecond, 100*time.Millisecond
				c.DeliveryTimeout = time.Second
			}, tableDef{id: 1, buckets: 1, server: 1})
			h.fake.setHook(func(c fakeCall) hookResult {
				return hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(29, "not enough replicas")}}
			})
			_, err := h.append(t, 1, 0, 1).Wait(context.Background())
			require.ErrorIs(t, err, ErrDeliveryTimeout)
			n := len(h.fake.callsFor(1))
			assert.Greater(t, n, 3, "resent until the deadline")
			assert.LessOrEqual(t, n, 13, "at most one send per back-off within the deadline")
			h.fake.setHook(nil)
			h.close(t)
		})
	})
}

// A bucket with nothing in flight sends at once, whatever the linger
// (latency-driven batching; TestLingerWhileRequestInFlight has the rest).
func TestLinger(t *testing.T) {
	tests := []struct {
		name string
		set  func(*writerConfig)
		want time.Duration
	}{
		{name: "zero: no linger", set: func(c *writerConfig) { c.Linger = 0 }, want: 0},
		{name: "default", want: 0},
		{name: "long linger", set: func(c *writerConfig) { c.Linger = time.Hour }, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.set, tableDef{id: 1, buckets: 1, server: 1})
				start := time.Now()
				_, err := h.append(t, 1, 0, 1).Wait(context.Background())
				require.NoError(t, err)
				assert.Equal(t, tc.want, time.Since(start))
				h.close(t)
			})
		})
	}
}

// Write takes the operation: appends go to log tables, upserts and deletes
// to primary-key tables; anything else is refused without queueing.
func TestWriteChecksOp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) { c.Linger = 0 },
			tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1, kv: true})
		ctx := context.Background()
		logT, kvT := h.tables[1], h.tables[2]
		row := fluss.Row{fluss.IntDatum(1)}
		for _, bad := range []struct {
			t  *Table
			op fluss.WriteOp
		}{{logT, fluss.WriteUpsert}, {logT, fluss.WriteDelete}, {kvT, fluss.WriteAppend}, {logT, 0}, {kvT, 42}} {
			_, err := h.w.Write(ctx, bad.t, NoPartition, 0, bad.op, []byte{1}, row)
			assert.Error(t, err, "%s on table %d", bad.op, bad.t.ID())
		}
		assert.Zero(t, h.w.Incomplete())
		up, err := h.w.Write(ctx, kvT, NoPartition, 0, fluss.WriteUpsert, []byte{1}, row)
		require.NoError(t, err)
		del, err := h.w.Write(ctx, kvT, NoPartition, 0, fluss.WriteDelete, []byte{1}, nil)
		require.NoError(t, err)
		app, err := h.w.Write(ctx, logT, NoPartition, 0, fluss.WriteAppend, nil, row)
		require.NoError(t, err)
		for _, hd := range []Handle{up, del, app} {
			_, err := hd.Wait(ctx)
			require.NoError(t, err)
		}
		assert.Equal(t, []int64{1, -1}, h.fake.logValues(2, 0), "the upsert, then the delete")
		h.close(t)
	})
}

// Close without Run fails what is queued with ErrStopped (which matches
// ErrClosed), and later writes with ErrClosed.
func TestCloseWithoutRun(t *testing.T) {
	t.Parallel()
	w, err := newTestWriter(testConfig(nil), newFakeTransport())
	require.NoError(t, err)
	tbl, err := w.AddTable(TableSpec{ID: 1, Path: fluss.TablePath{Database: "db", Table: "t"}, NumBuckets: 1,
		SetWriter: testSetWriter, NewLogBuilder: func() (LogBuilder, error) { return &testBuilder{}, nil }})
	require.NoError(t, err)
	hd, err := w.Write(context.Background(), tbl, NoPartition, StickyBucket, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(1)})
	require.NoError(t, err)
	require.ErrorIs(t, w.Close(context.Background()), ErrStopped)
	_, err = hd.Wait(context.Background())
	require.ErrorIs(t, err, ErrStopped)
	require.ErrorIs(t, err, ErrClosed)
	_, err = w.Write(context.Background(), tbl, NoPartition, 0, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(2)})
	require.ErrorIs(t, err, ErrClosed)
	assert.Zero(t, w.Incomplete())
	assert.Zero(t, w.BufferedBytes())
}
