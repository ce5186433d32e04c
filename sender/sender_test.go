package sender

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func done(h Handle) bool {
	select {
	case <-h.Done():
		return true
	default:
		return false
	}
}

// Test 1 (apache/fluss #4476): two tables on one server; the first table's
// response is withheld, the second table's request is still sent and its
// handles complete; then the first completes and in-flight counts return to 0.
func TestWithheldResponseDoesNotBlockOtherTable(t *testing.T) {
	for _, idem := range []bool{true, false} {
		t.Run(map[bool]string{true: "idempotent", false: "plain"}[idem], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, func(c *writerConfig) {
					c.DisableIdempotence = !idem
				}, tableDef{id: 1, buckets: 2, server: 7}, tableDef{id: 2, buckets: 2, server: 7})
				holdA := h.fake.hold(1)
				var hA, hB []Handle
				for i := range 4 {
					hA = append(hA, h.append(t, 1, int32(i%2), int64(i)))
					hB = append(hB, h.append(t, 2, int32(i%2), int64(100+i)))
				}
				callA := <-holdA.arrived // A's request reached the server and is held
				assert.Equal(t, int32(7), callA.Server)
				for _, hb := range hB {
					off, err := hb.Wait(context.Background())
					require.NoError(t, err)
					assert.GreaterOrEqual(t, off, int64(0))
				}
				synctest.Wait()
				for _, ha := range hA {
					assert.False(t, done(ha), "table A must still wait for its response")
				}
				// Idle buckets send at once, so A's rows may have gone in more
				// than one request: every one in flight is one of A's, held.
				assert.Equal(t, 1+len(holdA.arrived), h.inflight(), "only A's held requests in flight")
				close(holdA.release)
				for _, ha := range hA {
					_, err := ha.Wait(context.Background())
					require.NoError(t, err)
				}
				synctest.Wait()
				assert.Equal(t, 0, h.inflight())
				assert.Equal(t, 0, h.w.Incomplete())
				assert.Equal(t, []int64{0, 2}, h.fake.logValues(1, 0))
				assert.Equal(t, []int64{100, 102}, h.fake.logValues(2, 0))
				h.close(t)
			})
		})
	}
}

// Test 2 (apache/fluss #4017): a terminal error for table A fails only A's
// handles; B's complete; no permit or memory leaks; A writes again after.
func TestTerminalErrorIsScopedToItsTable(t *testing.T) {
	tests := []struct {
		name string
		hook hookResult
	}{
		{name: "bucket error", hook: hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(48, "denied"), 1: fluss.ErrorForCode(48, "denied")}}},
		{name: "request error", hook: hookResult{CallErr: fluss.ErrorForCode(48, "denied")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil,
					tableDef{id: 1, buckets: 2, server: 1}, tableDef{id: 2, buckets: 2, server: 1})
				var failing sync.Mutex
				fail := true
				h.fake.setHook(func(c fakeCall) hookResult {
					failing.Lock()
					defer failing.Unlock()
					if c.TableID == 1 && fail {
						return tc.hook
					}
					return hookResult{}
				})
				var hA, hB []Handle
				for i := range 6 {
					hA = append(hA, h.append(t, 1, int32(i%2), int64(i)))
					hB = append(hB, h.append(t, 2, int32(i%2), int64(i)))
				}
				for _, hd := range hA {
					_, err := hd.Wait(context.Background())
					require.ErrorIs(t, err, fluss.ErrAuthorization)
				}
				for _, hd := range hB {
					_, err := hd.Wait(context.Background())
					require.NoError(t, err)
				}
				synctest.Wait()
				assert.Equal(t, 0, h.w.Incomplete())
				assert.Equal(t, int64(0), h.w.BufferedBytes())
				assert.Equal(t, 0, h.inflight())
				assert.Len(t, h.fake.logValues(2, 0), 3)
				assert.Empty(t, h.fake.logValues(1, 0))

				// The rejected batches left no sequence gap: A writes again.
				failing.Lock()
				fail = false
				failing.Unlock()
				hd := h.append(t, 1, 0, 99)
				off, err := hd.Wait(context.Background())
				require.NoError(t, err)
				assert.Equal(t, int64(0), off)
				assert.Equal(t, []int64{99}, h.fake.logValues(1, 0))
				h.close(t)
			})
		})
	}
}

// Test 3: per-bucket sequencing and the in-flight cap hold under concurrent
// appends to many buckets, with retriable failures sprinkled in.
func TestSequencingAndInflightCapUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			buckets   = 8
			producers = 4
			perProd   = 600
		)
		h := newHarness(t, func(c *writerConfig) {
			c.BatchSize = 16 + 8*10
			c.BufferMemory = 1 << 20
			c.Linger = time.Millisecond
			c.RetryBackoff = time.Millisecond
			c.RetryBackoffMax = 4 * time.Millisecond
		}, tableDef{id: 1, buckets: buckets, server: 1}, tableDef{id: 2, buckets: buckets, server: 2})
		h.fake.latency = 3 * time.Millisecond
		var n sync.Mutex
		calls := 0
		h.fake.setHook(func(c fakeCall) hookResult {
			n.Lock()
			defer n.Unlock()
			calls++
			if calls%9 == 0 { // a lost response: written, but the client sees an error
				return hookResult{CallErr: fluss.ErrConnectionClosed, ApplyThenFail: true}
			}
			if calls%7 == 0 {
				return hookResult{BucketErr: map[int32]error{c.Buckets[0].Bucket: fluss.ErrorForCode(29, "not enough replicas")}}
			}
			return hookResult{}
		})
		var wg sync.WaitGroup
		handles := make([][]Handle, producers)
		for p := range producers {
			wg.Go(func() {
				for i := range perProd {
					table := int64(1 + i%2)
					bucket := int32((i / 2) % buckets)
					v := int64(p)<<32 | int64(i)
					hd, err := h.w.Write(context.Background(), h.tables[table], NoPartition, bucket, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(v)})
					if !assert.NoError(t, err) {
						return
					}
					handles[p] = append(handles[p], hd)
				}
			})
		}
		wg.Wait()
		require.NoError(t, h.w.Flush(context.Background()))
		for p := range producers {
			require.Len(t, handles[p], perProd)
			for _, hd := range handles[p] {
				require.NoError(t, hd.Err())
			}
		}
		total := 0
		maxSeen := 0
		for table := int64(1); table <= 2; table++ {
			for b := range int32(buckets) {
				vals := h.fake.logValues(table, b)
				total += len(vals)
				last := map[int64]int64{}
				for _, v := range vals {
					p, i := v>>32, v&0xffffffff
					if prev, ok := last[p]; ok {
						require.Greater(t, i, prev, "order of producer %d in table %d bucket %d", p, table, b)
					}
					last[p] = i
				}
				h.fake.mu.Lock()
				maxSeen = max(maxSeen, h.fake.maxFlight[bucketID{table, NoPartition, b}])
				h.fake.mu.Unlock()
			}
		}
		assert.Equal(t, producers*perProd, total, "no loss, no duplicates")
		assert.LessOrEqual(t, maxSeen, DefaultConfig().MaxInflightPerBucket, "in-flight cap per bucket")
		assert.Greater(t, maxSeen, 1, "several batches per bucket were in flight")
		h.close(t)
	})
}

// Test 4: a retry with back-off for one table does not delay another, and
// the retried batch keeps its sequence.
func TestRetryBackoffIsolatedAndKeepsSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
			c.RetryBackoff = 500 * time.Millisecond
			c.RetryBackoffMax = time.Second
		}, tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
		var mu sync.Mutex
		failures := 0
		h.fake.setHook(func(c fakeCall) hookResult {
			mu.Lock()
			defer mu.Unlock()
			if c.TableID == 1 && failures < 2 {
				failures++
				return hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(29, "not enough replicas")}}
			}
			return hookResult{}
		})
		start := time.Now()
		hA := h.append(t, 1, 0, 1)
		hB := h.append(t, 2, 0, 2)
		_, err := hB.Wait(context.Background())
		require.NoError(t, err)
		bDone := time.Since(start)
		assert.Less(t, bDone, 100*time.Millisecond, "B is not held up by A's back-off")
		assert.False(t, done(hA))

		// A new batch of B while A is backing off goes straight through.
		hB2 := h.append(t, 2, 0, 3)
		_, err = hB2.Wait(context.Background())
		require.NoError(t, err)
		assert.False(t, done(hA), "A is still backing off")

		_, err = hA.Wait(context.Background())
		require.NoError(t, err)
		aDone := time.Since(start)
		// Two back-offs: ≥ 0.8·500ms + 0.8·1s.
		assert.GreaterOrEqual(t, aDone, 1200*time.Millisecond)

		calls := h.fake.callsFor(1)
		require.Len(t, calls, 3)
		for _, c := range calls {
			require.Len(t, c.Buckets, 1)
			assert.Equal(t, int32(0), c.Buckets[0].Seq, "a retry keeps its sequence")
			assert.Equal(t, calls[0].Buckets[0].WriterID, c.Buckets[0].WriterID)
		}
		assert.GreaterOrEqual(t, calls[0].Buckets[0].WriterID, int64(0))
		assert.Equal(t, []int64{1}, h.fake.logValues(1, 0))
		h.close(t)
	})
}

// Test 5: buffer exhaustion blocks Append until memory is freed, and errors
// at the deadline.
func TestBufferExhaustionBlocksAppend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2 batches of 32 bytes (2 rows each) fill the buffer; they are
		// queued before the sender runs (an idle bucket would send its
		// first row at once, in a batch of its own).
		h := newIdleHarness(t, func(c *writerConfig) {
			c.BatchSize = 32
			c.BufferMemory = 64
			c.BufferWaitTimeout = 3 * time.Second
			c.MaxTableShare = 1 // the whole buffer, one table
		}, tableDef{id: 1, buckets: 1, server: 1})
		hold := h.fake.hold(1)
		var hs []Handle
		for i := range 4 {
			hs = append(hs, h.append(t, 1, 0, int64(i)))
		}
		h.start()
		<-hold.arrived // the first batch is sent and held
		type res struct {
			h   Handle
			err error
		}
		got := make(chan res, 1)
		go func() {
			hd, err := h.w.Write(context.Background(), h.tables[1], NoPartition, 0, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(4)})
			got <- res{hd, err}
		}()
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("append returned while the buffer is full: %v", r.err)
		default:
		}
		blockedAt := time.Now()
		close(hold.release) // responses flow: memory frees
		r := <-got
		require.NoError(t, r.err)
		assert.Less(t, time.Since(blockedAt), time.Second, "woken by freed memory, not the deadline")
		for _, hd := range append(hs, r.h) {
			_, err := hd.Wait(context.Background())
			require.NoError(t, err)
		}

		// Now hold again and fill: the idle bucket sends row 10 at once
		// (held), rows 11 and 12 fill the second batch while it is in
		// flight, and the next append fails at the deadline.
		hold = h.fake.hold(1)
		hs = append(hs, h.append(t, 1, 0, 10))
		<-hold.arrived
		for i := range 2 {
			hs = append(hs, h.append(t, 1, 0, int64(11+i)))
		}
		start := time.Now()
		_, err := h.w.Write(context.Background(), h.tables[1], NoPartition, 0, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(20)})
		require.ErrorIs(t, err, ErrBufferFull)
		assert.Equal(t, 3*time.Second, time.Since(start))
		close(hold.release)
		h.close(t)
		assert.Len(t, h.fake.logValues(1, 0), 8)
	})
}

// Test 6: fire-and-forget plus Flush delivers everything; every handle
// completes exactly once (offsets are a permutation per bucket).
func TestFireAndForgetFlush(t *testing.T) {
	for _, kv := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "kv"}[kv], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, func(c *writerConfig) {
					c.BatchSize = 16 + 8*50
					c.Linger = time.Hour
				}, tableDef{id: 1, buckets: 3, server: 1, kv: kv}, tableDef{id: 2, buckets: 2, server: 2, kv: kv})
				const n = 1000
				var hs []Handle
				for i := range n {
					table := int64(1 + i%2)
					var hd Handle
					var err error
					if kv {
						hd, err = h.w.Write(context.Background(), h.tables[table], NoPartition, int32(i%2), fluss.WriteUpsert, []byte{byte(i)}, fluss.Row{fluss.IntDatum(int64(i))})
					} else {
						hd, err = h.w.Write(context.Background(), h.tables[table], NoPartition, StickyBucket, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(int64(i))})
					}
					require.NoError(t, err)
					hs = append(hs, hd)
				}
				// Linger is an hour: only Flush makes the last batches go.
				require.NoError(t, h.w.Flush(context.Background()))
				batches := map[*Batch]bool{}
				records := 0
				offsets := map[[2]int64]map[int64]bool{}
				for _, hd := range hs {
					require.True(t, done(hd))
					require.NoError(t, hd.Err())
					b := hd.Batch()
					if !batches[b] {
						batches[b] = true
						records += b.Records()
					}
					if !kv {
						k := [2]int64{b.Table().ID(), int64(b.Bucket())}
						if offsets[k] == nil {
							offsets[k] = map[int64]bool{}
						}
						assert.False(t, offsets[k][hd.Offset()], "offset %d handed out twice", hd.Offset())
						offsets[k][hd.Offset()] = true
					}
				}
				assert.Equal(t, n, records, "every record in exactly one completed batch")
				total := 0
				for table := int64(1); table <= 2; table++ {
					for b := range int32(3) {
						vals := h.fake.logValues(table, b)
						total += len(vals)
						if !kv {
							for off := range vals {
								assert.True(t, offsets[[2]int64{table, int64(b)}][int64(off)], "handle for offset %d", off)
							}
						}
					}
				}
				assert.Equal(t, n, total)
				h.close(t)
			})
		})
	}
}

// A lost response followed by a duplicate resend completes as success and
// writes nothing twice; leader errors refresh metadata.
func TestLostResponseAndLeaderMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
			c.RetryBackoff = 10 * time.Millisecond
			c.RetryBackoffMax = 10 * time.Millisecond
		}, tableDef{id: 1, buckets: 1, server: 1})
		var mu sync.Mutex
		step := 0
		h.fake.setHook(func(c fakeCall) hookResult {
			mu.Lock()
			defer mu.Unlock()
			step++
			if step == 1 {
				return hookResult{CallErr: fluss.ErrConnectionClosed, ApplyThenFail: true}
			}
			return hookResult{}
		})
		hd := h.append(t, 1, 0, 5)
		off, err := hd.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(0), off, "duplicate answered with the original offset")
		assert.Equal(t, []int64{5}, h.fake.logValues(1, 0))

		// Move the leader: the old server answers NOT_LEADER; the sender
		// invalidates metadata, finds the new leader and resends.
		h.fake.mu.Lock()
		h.fake.leaders[1] = 2
		h.fake.mu.Unlock()
		hd = h.append(t, 1, 0, 6)
		_, err = hd.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []int64{5, 6}, h.fake.logValues(1, 0))
		h.fake.mu.Lock()
		assert.Positive(t, h.fake.invalids[1])
		h.fake.mu.Unlock()
		calls := h.fake.callsFor(1)
		assert.Equal(t, int32(2), calls[len(calls)-1].Server)
		h.close(t)
	})
}

// A batch whose table never gets a leader fails at the delivery deadline,
// and Close with an expired context fails what is left.
func TestDeliveryTimeoutAndForcedClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
			c.DeliveryTimeout = 5 * time.Second
		}, tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
		h.fake.mu.Lock()
		delete(h.fake.leaders, 1) // unknown table: no leader
		h.fake.mu.Unlock()
		start := time.Now()
		hd := h.append(t, 1, 0, 1)
		_, err := hd.Wait(context.Background())
		require.ErrorIs(t, err, ErrDeliveryTimeout)
		assert.Equal(t, 5*time.Second, time.Since(start).Round(time.Millisecond))

		hold := h.fake.hold(2)
		hd = h.append(t, 2, 0, 2)
		<-hold.arrived
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = h.w.Close(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		_, err = hd.Wait(context.Background())
		require.ErrorIs(t, err, ErrStopped)
		require.ErrorIs(t, err, ErrClosed)
		require.Error(t, <-h.runErr)
		_, err = h.w.Write(context.Background(), h.tables[2], NoPartition, 0, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(3)})
		require.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, 0, h.w.Incomplete())
		assert.Equal(t, int64(0), h.w.BufferedBytes())
		h.cancel()
	})
}

// A definite rejection of a bucket's first in-flight batch lowers the
// sequences of the later ones, which the server first rejects as out of
// order and then accepts; the writer id is kept.
func TestDefiniteRejectionAdjustsLaterSequences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 24-byte batches: one row each.
		h := newHarness(t, func(c *writerConfig) {
			c.BatchSize = 24
			c.BufferMemory = 1 << 10
			c.RetryBackoff = time.Millisecond
			c.RetryBackoffMax = time.Millisecond
		}, tableDef{id: 1, buckets: 1, server: 1})
		hold := h.fake.hold(1)
		h.fake.setHook(func(c fakeCall) hookResult {
			if c.Buckets[0].Values[0] == 0 {
				return hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(13, "too large")}}
			}
			return hookResult{}
		})
		var hs []Handle
		for i := range 3 {
			hs = append(hs, h.append(t, 1, 0, int64(i)))
		}
		for range 3 { // all three in flight at once
			<-hold.arrived
		}
		h.fake.mu.Lock()
		delete(h.fake.holds, 1)
		h.fake.mu.Unlock()
		close(hold.release)
		_, err := hs[0].Wait(context.Background())
		require.ErrorIs(t, err, fluss.ErrRecordTooLarge)
		for _, hd := range hs[1:] {
			_, err := hd.Wait(context.Background())
			require.NoError(t, err)
		}
		assert.Equal(t, []int64{1, 2}, h.fake.logValues(1, 0))
		h.fake.mu.Lock()
		assert.Equal(t, 1, h.fake.inits, "no writer reset")
		h.fake.mu.Unlock()
		h.close(t)
	})
}

// A fatal OUT_OF_ORDER_SEQUENCE (the batch is the next expected one) fails
// the batch and resets the writer id; later writes use a new writer id.
func TestFatalOutOfOrderResetsWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
		}, tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
		var mu sync.Mutex
		first := true
		h.fake.setHook(func(c fakeCall) hookResult {
			mu.Lock()
			defer mu.Unlock()
			if c.TableID == 1 && first {
				first = false
				return hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(31, "expected 3")}}
			}
			return hookResult{}
		})
		_, err := h.append(t, 1, 0, 1).Wait(context.Background())
		require.ErrorIs(t, err, fluss.ErrOutOfOrderSequence)
		off, err := h.append(t, 1, 0, 2).Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(0), off)
		_, err = h.append(t, 2, 0, 3).Wait(context.Background())
		require.NoError(t, err)
		calls := h.fake.callsFor(1)
		require.Len(t, calls, 2)
		assert.NotEqual(t, calls[0].Buckets[0].WriterID, calls[1].Buckets[0].WriterID, "new writer id")
		assert.Equal(t, int32(0), calls[1].Buckets[0].Seq, "sequences restart at 0")
		h.fake.mu.Lock()
		assert.Equal(t, 2, h.fake.inits)
		h.fake.mu.Unlock()
		h.close(t)
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The records are queued before the sender runs, so they make one
		// batch (an idle bucket would send the first one at once).
		h := newIdleHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
			c.RetryBackoff = time.Millisecond
			c.RetryBackoffMax = time.Millisecond
		}, tableDef{id: 1, buckets: 1, server: 3})
		h.fake.setHook(func(c fakeCall) hookResult {
			if len(h.fake.callsFor(1)) == 1 {
				return hookResult{BucketErr: map[int32]error{0: fluss.ErrorForCode(29, "")}}
			}
			return hookResult{}
		})
		var hs []Handle
		for i := range 5 {
			hs = append(hs, h.append(t, 1, 0, int64(i)))
		}
		h.start()
		for _, hd := range hs {
			_, err := hd.Wait(context.Background())
			require.NoError(t, err)
		}
		mfs, err := h.reg.Gather()
		require.NoError(t, err)
		value := func(name string, labels ...string) float64 {
			for _, mf := range mfs {
				if mf.GetName() != name {
					continue
				}
			metric:
				for _, m := range mf.GetMetric() {
					for i := 0; i+1 < len(labels); i += 2 {
						found := false
						for _, lp := range m.GetLabel() {
							found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
						}
						if !found {
							continue metric
						}
					}
					return metricValue(m)
				}
			}
			return -1
		}
		assert.Equal(t, 5.0, value("fluss_gateway_sender_records_total", "table", "db.t1"))
		assert.Equal(t, 1.0, value("fluss_gateway_sender_batches_total", "table", "db.t1"))
		assert.Equal(t, 1.0, value("fluss_gateway_sender_retries_total", "table", "db.t1"))
		assert.Equal(t, 1.0, value("fluss_gateway_sender_errors_total", "table", "db.t1", "code", "29"))
		assert.Equal(t, 2.0, value("fluss_gateway_sender_request_duration_seconds", "tablet_server", "3", "api", "produce_log"))
		assert.Equal(t, 0.0, value("fluss_gateway_sender_inflight_requests"))
		assert.Equal(t, 0.0, value("fluss_gateway_accumulator_buffer_bytes"))
		assert.Equal(t, 1.0, value("fluss_gateway_sender_batch_fill_ratio", "table", "db.t1"))
		problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
		require.NoError(t, err)
		assert.Empty(t, problems)
		h.close(t)
	})
}

// metricValue returns a counter's or gauge's value, or a histogram's count.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// A request that gets no answer within the request deadline is retried
// with the same sequence, not failed.
func TestRequestTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
			c.RequestTimeout = time.Second
			c.RequestTimeoutOverhead = time.Second
		}, tableDef{id: 1, buckets: 1, server: 1})
		hold := h.fake.hold(1)
		start := time.Now()
		hd := h.append(t, 1, 0, 7)
		first := <-hold.arrived
		second := <-hold.arrived // the first attempt timed out after 2s
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)
		assert.Equal(t, first.Buckets[0].Seq, second.Buckets[0].Seq)
		close(hold.release)
		_, err := hd.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []int64{7}, h.fake.logValues(1, 0))
		h.close(t)
	})
}

// A dropped table: its queued batches fail with TABLE_NOT_EXIST as soon as
// a metadata refresh says so, not at the delivery deadline; other tables
// are unaffected.
func TestDroppedTableFailsQueuedBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
		}, tableDef{id: 1, buckets: 2, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
		_, err := h.append(t, 1, 0, 1).Wait(context.Background())
		require.NoError(t, err)
		// Drop table 1: writes answer UNKNOWN_TABLE_OR_BUCKET, metadata
		// TABLE_NOT_EXIST.
		h.fake.mu.Lock()
		delete(h.fake.leaders, 1)
		h.fake.leaders[1] = 9 // a server that answers NOT_LEADER until refreshed
		h.fake.dropped[1] = true
		h.fake.mu.Unlock()
		start := time.Now()
		a := h.append(t, 1, 0, 2)
		a2 := h.append(t, 1, 1, 3)
		b := h.append(t, 2, 0, 4)
		for _, hd := range []Handle{a, a2} {
			_, err = hd.Wait(context.Background())
			require.ErrorIs(t, err, fluss.ErrTableNotExist)
		}
		assert.Less(t, time.Since(start), 10*time.Second)
		_, err = b.Wait(context.Background())
		require.NoError(t, err)
		h.close(t)
	})
}

// Latency-driven batching: a bucket with nothing in flight that has not
// sent for Linger sends at once whatever the linger; while one of its
// batches is in flight the next one waits for Linger at most (the timer is
// re-armed on every pass, not only when idle), and once the batch in flight
// completes, for what is left of Linger since the bucket last sent: at most
// one non-full batch per Linger under steady load, so that Fluss gets fewer,
// larger batches.
func TestLingerWhileRequestInFlight(t *testing.T) {
	const linger = 50 * time.Millisecond
	for _, tc := range []struct {
		name      string
		appendAt  time.Duration // when the second batch's record is appended
		releaseAt time.Duration // when the first request is answered (0: after the second is sent)
		want      time.Duration // when the second batch is sent
	}{
		{name: "linger expires first", appendAt: 7 * time.Millisecond, want: 7*time.Millisecond + linger},
		{name: "in-flight batch completes first", appendAt: 7 * time.Millisecond, releaseAt: 20 * time.Millisecond, want: linger},
		{name: "idle for a linger", appendAt: 60 * time.Millisecond, releaseAt: 20 * time.Millisecond, want: 60 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, func(c *writerConfig) {
					c.Linger = linger
				}, tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
				hold := h.fake.hold(1)
				start := time.Now()
				a := h.append(t, 1, 0, 1)
				<-hold.arrived
				assert.Equal(t, time.Duration(0), time.Since(start), "an idle bucket sends at once")
				if tc.releaseAt > 0 && tc.releaseAt < tc.appendAt {
					time.Sleep(tc.releaseAt - time.Since(start))
					close(hold.release)
					_, err := a.Wait(context.Background())
					require.NoError(t, err)
				}
				time.Sleep(tc.appendAt - time.Since(start)) // fake clock: move time on before the next append
				b := h.append(t, 1, 0, 2)
				other := h.append(t, 2, 0, 3)
				_, err := other.Wait(context.Background())
				require.NoError(t, err)
				assert.Equal(t, tc.appendAt, time.Since(start), "another table's idle bucket does not linger")
				if tc.releaseAt >= tc.appendAt {
					time.Sleep(tc.releaseAt - time.Since(start))
					close(hold.release)
				}
				<-hold.arrived
				assert.Equal(t, tc.want, time.Since(start), "second batch of the bucket sent")
				assert.False(t, done(b) && tc.releaseAt == 0)
				if tc.releaseAt == 0 {
					close(hold.release)
				}
				for _, hd := range []Handle{a, b} {
					_, err = hd.Wait(context.Background())
					require.NoError(t, err)
				}
				h.close(t)
			})
		})
	}
}

// countingHandler counts log records by level and message.
type countingHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (c *countingHandler) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Level.String()+" "+r.Message]++
	return nil
}
func (c *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *countingHandler) WithGroup(string) slog.Handler      { return c }

func (c *countingHandler) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// A table whose leaders stay unknown for a minute and a half (a Fluss
// outage) logs one WARN when it starts and a summary about every 30
// attempts, not a line per lookup; one INFO when leaders are back. Its
// queued batch fails with ErrNoLeader after LeaderWait, once, and the
// lookups go on without traffic.
func TestLeaderOutageLogsStateChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newIdleHarness(t, nil, tableDef{id: 1, buckets: 1, server: 1})
		logs := &countingHandler{n: map[string]int{}}
		h.snd.log = slog.New(logs)
		h.fake.mu.Lock()
		delete(h.fake.leaders, 1) // metadata: unknown table
		h.fake.mu.Unlock()
		hd := h.append(t, 1, 0, 1)
		h.start()
		time.Sleep(90 * time.Second)
		warns := logs.count("WARN bucket leaders unknown; retrying")
		debugs := logs.count("DEBUG bucket leaders still unknown")
		assert.GreaterOrEqual(t, warns, 2, "the start and at least one summary")
		assert.LessOrEqual(t, warns, 5)
		assert.Greater(t, debugs, 60, "the other lookups (about one a second) go to debug")
		_, err := hd.Wait(context.Background())
		require.ErrorIs(t, err, ErrNoLeader)
		assert.Equal(t, 1, logs.count("WARN bucket leaders unknown for too long: queued batches fail and the table is reported leaderless"))
		h.fake.mu.Lock()
		h.fake.leaders[1] = 1
		h.fake.mu.Unlock()
		_, err = h.append(t, 1, 0, 2).Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 1, logs.count("INFO bucket leaders known again"))
		h.close(t)
	})
}

// After a tablet server restart the server keeps only each writer's last
// batch: a resent batch whose answer was lost is answered
// OUT_OF_ORDER_SEQUENCE with a current sequence past it. It was written, so
// it completes as success (unknown offset) and nothing is written twice or
// lost (seen in CI: "97 (incoming batch seq.), 98 (current batch seq.)").
func TestResendAfterRestartKeptOnlyLastBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *writerConfig) {
			c.Linger = time.Millisecond
			c.RetryBackoff = 10 * time.Millisecond
			c.RetryBackoffMax = 10 * time.Millisecond
		}, tableDef{id: 1, buckets: 1, server: 1})
		var mu sync.Mutex
		step := 0
		h.fake.setHook(func(c fakeCall) hookResult {
			mu.Lock()
			defer mu.Unlock()
			step++
			switch step {
			case 1, 2: // both written, both answers lost
				return hookResult{CallErr: fluss.ErrConnectionClosed, ApplyThenFail: true}
			case 3: // the server restarted before the first resend arrives
				h.fake.restartBucket(bucketID{1, NoPartition, 0})
			}
			return hookResult{}
		})
		hold := h.fake.hold(1)
		first := h.append(t, 1, 0, 5)
		<-hold.arrived
		second := h.append(t, 1, 0, 6)
		<-hold.arrived // two batches of the bucket in flight
		close(hold.release)
		off, err := first.Wait(context.Background())
		require.NoError(t, err, "the resend of a batch the server holds is not a failure")
		assert.Equal(t, int64(-1), off, "written before the restart: offset unknown")
		off, err = second.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(1), off, "the retained last batch is a duplicate with its offset")
		third := h.append(t, 1, 0, 7)
		off, err = third.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(2), off)
		assert.Equal(t, []int64{5, 6, 7}, h.fake.logValues(1, 0), "nothing lost, nothing twice")
		assert.Zero(t, testutil.ToFloat64(h.snd.m.writerResets), "no writer id reset")
		h.close(t)
	})
}
