package sender

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// Per-table fairness end to end through the sender, on the fake clock:
// table 1's responses are held for 3 s while its producer keeps writing.
// Table 2's producer, on the same tablet server, finishes as fast as when
// nothing is held (within 10 %) and its p99 write latency grows by at most
// 10 ms. Without per-table shares table 1 fills the buffer and table 2
// waits out the 3 s.
func TestStalledTableDoesNotSlowOthers(t *testing.T) {
	run := func(t *testing.T, stall bool) (elapsed, p99 time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, func(c *writerConfig) {
				c.BatchSize = 1 << 10 // 126 rows of the test builder
				c.BufferMemory = 16 << 10
				c.Linger = 2 * time.Millisecond
			}, tableDef{id: 1, buckets: 1, server: 1}, tableDef{id: 2, buckets: 1, server: 1})
			h.fake.mu.Lock()
			h.fake.latency = 5 * time.Millisecond
			h.fake.mu.Unlock()
			stop := make(chan struct{})
			if stall {
				hold := h.fake.hold(1)
				time.AfterFunc(3*time.Second, func() { close(hold.release) })
				go func() { // the arrivals are not needed
					for {
						select {
						case <-hold.arrived:
						case <-stop:
							return
						}
					}
				}()
			}
			var busy sync.WaitGroup
			busy.Go(func() { // table 1's producer: as fast as it may
				var hs []Handle
				for i := 0; ; i++ {
					select {
					case <-stop:
						for _, hd := range hs {
							_, _ = hd.Wait(context.Background())
						}
						return
					default:
					}
					hd, err := h.w.Write(context.Background(), h.tables[1], NoPartition, 0, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(int64(i))})
					if err != nil {
						t.Errorf("table 1 write %d: %v", i, err)
						return
					}
					hs = append(hs, hd)
					if len(hs) > 4096 {
						_, _ = hs[0].Wait(context.Background())
						hs = hs[1:]
					}
				}
			})
			// Table 2's producer: 20k rows, up to 512 unacknowledged.
			const rows, window = 20000, 512
			type pending struct {
				h     Handle
				start time.Time
			}
			var queue []pending
			var lat []time.Duration
			wait := func(p pending) {
				_, err := p.h.Wait(context.Background())
				require.NoError(t, err)
				lat = append(lat, time.Since(p.start))
			}
			start := time.Now()
			for i := range rows {
				queue = append(queue, pending{h.append(t, 2, 0, int64(i)), time.Now()})
				if len(queue) == window {
					wait(queue[0])
					queue = queue[1:]
				}
			}
			for _, p := range queue {
				wait(p)
			}
			elapsed = time.Since(start)
			slices.Sort(lat)
			p99 = lat[len(lat)*99/100]
			close(stop)
			busy.Wait()
			assert.Equal(t, rows, len(h.fake.logValues(2, 0)))
			h.close(t)
		})
		return elapsed, p99
	}
	baseElapsed, baseP99 := run(t, false)
	elapsed, p99 := run(t, true)
	t.Logf("table 2: %v (p99 %v) with table 1 held 3 s, %v (p99 %v) without", elapsed, p99, baseElapsed, baseP99)
	assert.LessOrEqual(t, float64(elapsed), 1.1*float64(baseElapsed), "table 2's run time")
	assert.LessOrEqual(t, p99, baseP99+10*time.Millisecond, "table 2's p99 write latency")
}
