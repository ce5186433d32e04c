package produce

import (
	"context"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/producerstate"
)

// eoGroups splits a batch by target in order of first appearance, each
// group's rows in record order, dead-letter rows to their Kafka
// partition's bucket of the dead-letter table; a convBatch reused for a
// second batch carries nothing of the first.
func TestEOGroupsSplitByTargetAndReuse(t *testing.T) {
	b := newEOInstance(t, newDedupFluss(), &memStore{rows: map[producerstate.Key]producerstate.State{}}, nil)
	st := b.Current()
	route, ok := st.Routes.Resolve("load")
	require.True(t, ok)
	table, dlq := st.Tables[route.Table()], st.Tables[route.DLQ().Table()]

	type rec struct {
		bucket int32
		part   int64
		dead   bool
	}
	split := func(cb *convBatch, partition int32, recs []rec) [][]int64 {
		cb.convs = make([]mapping.Converted, len(recs))
		cb.dead = cb.dead[:0]
		cb.partIDs = cb.partIDs[:0]
		for i, r := range recs {
			cb.convs[i] = mapping.Converted{Op: fluss.WriteAppend, Bucket: r.bucket, Row: fluss.Row{{I: int64(i)}}}
			cb.dead = append(cb.dead, r.dead)
			cb.partIDs = append(cb.partIDs, r.part)
		}
		groups := eoGroups(st, route, &kafkaproto.PartitionProduce{Partition: partition}, cb)
		// Each group as [table id, partition id, bucket, rows...].
		var out [][]int64
		for _, g := range groups {
			row := []int64{g.Target.TableID, g.Target.PartitionID, int64(g.Target.Bucket)}
			want := table
			if g.Target.TableID == dlq.ID() {
				want = dlq
			}
			assert.Same(t, want, g.Table)
			for _, op := range g.Ops {
				row = append(row, op.Row[0].I)
			}
			out = append(out, row)
		}
		return out
	}
	np := accumulator.NoPartition
	cb := b.getBatch(7)
	got := split(cb, 4, []rec{{1, np, false}, {0, np, false}, {1, np, false}, {0, 9, false}, {0, np, true}, {0, np, false}, {0, 9, false}})
	assert.Equal(t, [][]int64{
		{eoTableID, np, 1, 0, 2},
		{eoTableID, np, 0, 1, 5},
		{eoTableID, 9, 0, 3, 6},
		{eoDLQTableID, np, 4 % 3, 4}, // the dead-letter table has 3 buckets
	}, got)
	// The same convBatch again, fewer records and other targets.
	b.putBatch(cb)
	cb = b.getBatch(3)
	got = split(cb, 0, []rec{{0, np, false}, {0, np, false}, {1, np, false}})
	assert.Equal(t, [][]int64{{eoTableID, np, 0, 0, 1}, {eoTableID, np, 1, 2}}, got)
	b.putBatch(cb)
}

// An exactly-once batch goes through on the connection's read goroutine
// (admitCached) once its producer-partition's state is loaded and nothing
// of it is queued; the first batch, which looks the state up, is left to
// the queue untouched. Both land once, mixed batches with dead-letter rows
// included.
func TestExactlyOnceCachedAdmission(t *testing.T) {
	f := newDedupFluss()
	b := newEOInstance(t, f, &memStore{rows: map[producerstate.Key]producerstate.State{}}, nil)
	st := b.Current()
	route, ok := st.Routes.Resolve("load")
	require.True(t, ok)

	first := eoMixed(7, 0, 6)
	w, done, err := b.admitCached(context.Background(), st, route, first)
	require.NoError(t, err)
	require.False(t, done, "not loaded: left for the queue")
	require.Nil(t, w)
	require.Len(t, first.Records, 6, "left untouched")
	require.NoError(t, await(t, b, first).Err)

	for k := 1; k <= 3; k++ {
		w, done, err = b.admitCached(context.Background(), st, route, eoMixed(7, k, 6))
		require.NoError(t, err)
		require.True(t, done, "batch %d: loaded, nothing queued", k)
		<-w.Done()
		require.NoError(t, w.Result().Err, "batch %d", k)
	}
	// A re-sent batch is answered, not written again.
	w, done, err = b.admitCached(context.Background(), st, route, eoMixed(7, 3, 6))
	require.NoError(t, err)
	require.True(t, done)
	<-w.Done()
	require.NoError(t, w.Result().Err)

	rows, dead := f.rows(eoTableID), f.rows(eoDLQTableID)
	assert.Len(t, rows, 16, "24 records, every third to the dead-letter table")
	assert.Len(t, dead, 8)
	for r, n := range rows {
		assert.Equal(t, 1, n, "row %s", r)
	}
	for r, n := range dead {
		assert.Equal(t, 1, n, "dead-letter row %s", r)
	}
}
