package sender

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// Fluss 1.0 wire behaviour of the writer, on the in-memory fake: the
// routing bucket count each bucket request carries, INVALID_BUCKET_ROUTING
// and KV storage pressure. (The same paths against the 1.0-speaking
// fluss/flussfake are in flussfake_test.go.)

// partitioned registers a partitioned table whose partitions report their
// own bucket counts through counts.
func partitioned(t *testing.T, h *harness, id int64, buckets int, kv bool, counts map[int64]int) *Table {
	t.Helper()
	h.fake.mu.Lock()
	h.fake.leaders[id] = 1
	h.fake.mu.Unlock()
	spec := TableSpec{
		ID: id, Path: fluss.TablePath{Database: "db", Table: "p"}, NumBuckets: buckets, SetWriter: testSetWriter,
		PartitionBuckets: func(p int64) int { return counts[p] },
	}
	if kv {
		spec.NewKvBuilder = func() (KvBuilder, error) { return &testBuilder{}, nil }
	} else {
		spec.NewLogBuilder = func() (LogBuilder, error) { return &testBuilder{}, nil }
	}
	tbl, err := h.w.AddTable(spec)
	require.NoError(t, err)
	return tbl
}

// TestRoutingBucketCountIsThePartitionsCount: every bucket request carries
// the bucket count its rows were bucketed with — the partition's own count
// when it has one, else the table's — and a bucket beyond the partition's
// count is refused.
func TestRoutingBucketCountIsThePartitionsCount(t *testing.T) {
	h := newHarness(t, func(c *writerConfig) { c.Linger = 0 })
	tbl := partitioned(t, h, 5, 2, false, map[int64]int{10: 6})
	ctx := context.Background()
	var hs []Handle
	for _, w := range []struct {
		part   int64
		bucket int32
	}{{10, 5}, {10, 0}, {11, 1}} {
		hd, err := h.w.Write(ctx, tbl, w.part, w.bucket, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(int64(w.bucket))})
		require.NoError(t, err)
		hs = append(hs, hd)
	}
	_, err := h.w.Write(ctx, tbl, 11, 5, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(1)})
	require.ErrorContains(t, err, "has 2 buckets, not bucket 5", "partition 11 has the table's 2 buckets")
	for _, hd := range hs {
		_, err := hd.Wait(ctx)
		require.NoError(t, err)
	}
	got := map[[2]int64]int32{}
	for _, c := range h.fake.callsFor(5) {
		for _, b := range c.Buckets {
			got[[2]int64{b.PartitionID, int64(b.Bucket)}] = b.Routing
		}
	}
	assert.Equal(t, map[[2]int64]int32{{10, 5}: 6, {10, 0}: 6, {11, 1}: 2}, got)
	h.close(t)
}

// TestInvalidBucketRoutingIsDefiniteAndRelayouts: a bucket answered with
// INVALID_BUCKET_ROUTING fails with that error and nothing stored; the
// partition's metadata is invalidated; later batches of the bucket keep
// valid sequences (the rejected one closed its gap); once the owner forgets
// the layout, writes use the partition's new count and land.
func TestInvalidBucketRoutingIsDefiniteAndRelayouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counts := map[int64]int{10: 2}
		h := newHarness(t, func(c *writerConfig) { c.Linger = 0 })
		tbl := partitioned(t, h, 5, 2, false, counts)
		reject := true
		h.fake.setHook(func(c fakeCall) hookResult {
			if !reject {
				return hookResult{}
			}
			return hookResult{BucketErr: map[int32]error{1: fluss.ErrorForCode(74, "routing bucket count 2, partition has 4")}}
		})
		ctx := context.Background()
		bad, err := h.w.Write(ctx, tbl, 10, 1, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(1)})
		require.NoError(t, err)
		good, err := h.w.Write(ctx, tbl, 10, 0, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(2)})
		require.NoError(t, err)
		_, err = bad.Wait(ctx)
		require.ErrorIs(t, err, fluss.ErrInvalidBucketRouting)
		_, err = good.Wait(ctx)
		require.NoError(t, err)
		synctest.Wait()
		h.fake.mu.Lock()
		assert.Equal(t, 1, h.fake.partInvalids[[2]int64{5, 10}], "partition metadata invalidated once")
		assert.Nil(t, h.fake.logs[bucketID{5, 10, 1}], "nothing stored for the rejected bucket")
		h.fake.mu.Unlock()

		// The owner learns the count is 4 and forgets the old layout.
		reject = false
		counts[10] = 4
		tbl.ForgetPartition(10)
		hd, err := h.w.Write(ctx, tbl, 10, 3, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(3)})
		require.NoError(t, err)
		_, err = hd.Wait(ctx)
		require.NoError(t, err)
		calls := h.fake.callsFor(5)
		last := calls[len(calls)-1].Buckets[0]
		assert.Equal(t, fakeBatch{PartitionID: 10, Bucket: 3, WriterID: last.WriterID, Seq: 0, Values: []int64{3}, Routing: 4}, last)
		h.close(t)
	})
}

// TestKvPressureHoldsTheBucketBack: a PutKv answer reporting pressure p
// holds that bucket's next send back by KvMaxThrottle·p², without a retry
// and without delaying the table's other buckets; STORAGE_BACKPRESSURE
// (72) holds it the whole KvMaxThrottle and is retried. The table's
// Throttle reports the hold-back (the Kafka side's throttle time).
func TestKvPressureHoldsTheBucketBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) { c.Linger = 0; c.KvMaxThrottle = 2 * time.Second },
			tableDef{id: 3, buckets: 2, server: 1, kv: true})
		tbl := h.tables[3]
		var pressure float32 = 0.5
		backpressure := false
		h.fake.setHook(func(c fakeCall) hookResult {
			hr := hookResult{Pressure: map[int32]float32{0: pressure}}
			if backpressure {
				hr.BucketErr = map[int32]error{0: fluss.ErrorForCode(72, "kv pre-write buffer full")}
				backpressure = false
			}
			return hr
		})
		ctx := context.Background()
		upsert := func(bucket int32, v int64) Handle {
			hd, err := h.w.Write(ctx, tbl, NoPartition, bucket, fluss.WriteUpsert, []byte{byte(v)}, fluss.Row{fluss.IntDatum(v)})
			require.NoError(t, err)
			return hd
		}
		start := time.Now()
		_, err := upsert(0, 1).Wait(ctx)
		require.NoError(t, err)
		assert.InDelta(t, (500 * time.Millisecond).Seconds(), tbl.Throttle().Seconds(), 0.001, "2s · 0.5²")

		second, other := upsert(0, 2), upsert(1, 3)
		_, err = other.Wait(ctx)
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 100*time.Millisecond, "bucket 1 is not held back")
		_, err = second.Wait(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "bucket 0 waited out its throttle")

		pressure, backpressure = 0, true
		start = time.Now()
		_, err = upsert(0, 4).Wait(ctx)
		require.NoError(t, err, "STORAGE_BACKPRESSURE is retried")
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "refused write held back the whole max throttle")
		assert.Equal(t, []int64{1, 2, 4}, h.fake.logValues(3, 0))
		h.close(t)
	})
}
