package accumulator

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceGrantPass is the grant pass without its early exit: every
// waiter visited, in arrival order.
func referenceGrantPass(m *memoryBudget, requests bool) (blocked bool) {
	kept := m.waiters[:0]
	var capped []*tableMemory
	for _, w := range m.waiters {
		switch {
		case m.isRequests(w.table) != requests, blocked, slices.Contains(capped, w.table):
			kept = append(kept, w)
		case w.table.used+w.n > m.capOf(w.table):
			capped = append(capped, w.table)
			kept = append(kept, w)
		case !m.fitsLocked(w.table, w.n):
			blocked = true
			kept = append(kept, w)
		default:
			m.used += w.n
			w.table.used += w.n
			w.table.waiting--
			w.ok = true
		}
	}
	m.waiters = kept
	return blocked
}

// The grant pass that stops once no waiter left can be granted grants the
// same waiters as one that visits them all, and keeps every table's count
// of waiters: random budgets, table uses and queues of waiters of three
// tables and the requests.
func TestGrantPassStopsEarlyGrantsTheSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		build := func() (*memoryBudget, []*tableMemory) {
			return newMemoryBudget(100, 40, 30), []*tableMemory{{}, {}, {}}
		}
		fast, fastTables := build()
		ref, refTables := build()
		pick := func(m *memoryBudget, tables []*tableMemory, i int) *tableMemory {
			if i == len(tables) {
				return &m.requests
			}
			return tables[i]
		}
		for i := range 4 {
			u := rng.Int64N(45)
			pick(fast, fastTables, i).used, pick(ref, refTables, i).used = u, u
			fast.used += u
			ref.used += u
		}
		for range rng.IntN(40) {
			i, n := rng.IntN(4), 1+rng.Int64N(20)
			for _, side := range []struct {
				m  *memoryBudget
				ts []*tableMemory
			}{{fast, fastTables}, {ref, refTables}} {
				tm := pick(side.m, side.ts, i)
				side.m.waiters = append(side.m.waiters, &memoryWaiter{n: n, table: tm, ready: make(chan struct{})})
				tm.waiting++
			}
		}
		requests := rng.IntN(2) == 1
		fastBlocked := fast.grantPassLocked(requests)
		refBlocked := referenceGrantPass(ref, requests)
		require.Equal(t, refBlocked, fastBlocked)
		require.Equal(t, ref.used, fast.used)
		require.Len(t, fast.waiters, len(ref.waiters))
		for k, w := range ref.waiters { // the same waiters kept, in order
			require.Equal(t, w.n, fast.waiters[k].n, "waiter %d kept in order", k)
			require.Equal(t, slices.Index(append(refTables, &ref.requests), w.table), slices.Index(append(fastTables, &fast.requests), fast.waiters[k].table))
		}
		for i := range 4 {
			ft, rt := pick(fast, fastTables, i), pick(ref, refTables, i)
			require.Equal(t, rt.used, ft.used)
			require.Equal(t, rt.waiting, ft.waiting, "waiters of table %d", i)
			n := 0
			for _, w := range fast.waiters {
				if w.table == ft {
					n++
				}
			}
			require.Equal(t, n, ft.waiting, "the count is the table's waiters in the queue")
		}
	}
}

// BenchmarkReleaseWithCappedWaiters: 5,000 waiters of a table at its cap
// (thousands of producers' batches waiting for their table), and releases
// of the requests' memory, each of which runs a grant pass.
func BenchmarkReleaseWithCappedWaiters(b *testing.B) {
	m := newMemoryBudget(1<<30, 1<<20, 1<<20)
	table := &tableMemory{used: 1 << 20}
	m.used = 1 << 20
	for range 5000 {
		m.waiters = append(m.waiters, &memoryWaiter{n: 1024, table: table, ready: make(chan struct{})})
		table.waiting++
	}
	m.force(&m.requests, 1<<20)
	b.ResetTimer()
	for range b.N {
		m.release(&m.requests, 1)
		m.force(&m.requests, 1)
	}
	b.StopTimer()
	require.Len(b, m.waiters, 5000)
}
