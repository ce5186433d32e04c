package sender

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// Integration, on a real Fluss: the facts exactly-once routes rely on
// (docs/exactly-once.md §2), seen through WriteSealed. A writer id Fluss
// has never seen starts at sequence 0; a copy of a batch among the last
// five is answered with the original offset and not appended; a gap is
// OUT_OF_ORDER_SEQUENCE; and a second Writer (another gateway instance)
// replaying the same stamps is deduplicated too. Offsets are the
// server's log end offsets, not our own counts.
func TestIntegrationSealedFlussDedup(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newClient(t, addr)
	w1, stop1 := newIntegrationWriter(t, c, nil)
	tbl := createLogTables(t, ctx, c, w1, 1, 1, fluss.LogFormatArrow)[0]
	writerID, err := c.InitWriter(ctx, tbl.info.Path)
	require.NoError(t, err)

	rows := func(from int64, n int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = Op{Kind: fluss.WriteAppend, Row: fluss.Row{fluss.IntDatum(from + int64(i)), fluss.IntDatum(1), fluss.StringDatum("x")}}
		}
		return ops
	}
	write := func(w *testWriter, t2 *Table, seq int32, from int64, n int) (int64, error) {
		h, err := w.WriteSealed(ctx, t2, NoPartition, 0, writerID, seq, rows(from, n))
		require.NoError(t, err)
		return h.Wait(ctx)
	}

	_, err = write(w1, tbl.table, 1, 0, 3)
	require.ErrorIs(t, err, ErrSequenceRejected, "an unknown writer must start at 0")
	offsets := make([]int64, 3)
	for seq := range int32(3) {
		offsets[seq], err = write(w1, tbl.table, seq, int64(seq)*10, 3)
		require.NoError(t, err)
	}
	assert.Equal(t, []int64{0, 3, 6}, offsets)
	stop1()

	// Another instance: its own Writer and connection, same stamps.
	c2 := newClient(t, addr)
	_, err = c2.TableInfo(ctx, tbl.info.Path) // the client learns the table's id
	require.NoError(t, err)
	w2, stop2 := newIntegrationWriter(t, c2, nil)
	defer stop2()
	t2, err := w2.AddTable(tbl.spec)
	require.NoError(t, err)
	off, err := write(w2, t2, 1, 10, 3) // a replay: Fluss holds it
	require.NoError(t, err)
	assert.Equal(t, int64(3), off, "answered with the original offset")
	_, err = write(w2, t2, 5, 50, 3)
	require.ErrorIs(t, err, fluss.ErrOutOfOrderSequence, "a gap")
	off, err = write(w2, t2, 3, 30, 2) // the next one
	require.NoError(t, err)
	assert.Equal(t, int64(9), off)

	end, err := c2.ListOffsets(ctx, tbl.info.TableID, fluss.NoPartition, []int32{0}, fluss.LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, int64(11), end[0], "3 batches of 3 and one of 2: no copy appended")
}

// Integration, on a real Fluss primary-key table: a sealed KV batch
// re-sent by another Writer under the same stamp changes nothing (no
// changelog records: Fluss rolls back the copy's KV changes), and the
// next sequence applies. Counts are the changelog's end offsets.
func TestIntegrationSealedKvDedup(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newClient(t, addr)
	info, spec := createKvTable(t, ctx, c, "writer_kv_sealed", 1)
	path, schema := info.Path, info.Descriptor.Schema
	keyEnc, err := fluss.NewKeyEncoder(&schema, schema.PrimaryKey, "")
	require.NoError(t, err)
	upserts := func(vals ...string) []Op {
		ops := make([]Op, len(vals))
		for i, v := range vals {
			row := fluss.Row{fluss.IntDatum(int64(i)), fluss.StringDatum(v)}
			key, err := keyEnc.Encode(nil, row)
			require.NoError(t, err)
			ops[i] = Op{Kind: fluss.WriteUpsert, Key: key, Row: row}
		}
		return ops
	}
	writerID, err := c.InitWriter(ctx, path)
	require.NoError(t, err)
	end := func() int64 {
		offs, err := c.ListOffsets(ctx, info.TableID, fluss.NoPartition, []int32{0}, fluss.LatestOffset)
		require.NoError(t, err)
		return offs[0]
	}

	w1, stop1 := newIntegrationWriter(t, c, nil)
	t1, err := w1.AddTable(spec)
	require.NoError(t, err)
	h, err := w1.WriteSealed(ctx, t1, NoPartition, 0, writerID, 0, upserts("a", "b"))
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)
	stop1()
	require.Equal(t, int64(2), end(), "two inserts")

	w2, stop2 := newIntegrationWriter(t, c, nil)
	defer stop2()
	t2, err := w2.AddTable(spec)
	require.NoError(t, err)
	h, err = w2.WriteSealed(ctx, t2, NoPartition, 0, writerID, 0, upserts("a", "b")) // the replay
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), end(), "the copy changed nothing")
	h, err = w2.WriteSealed(ctx, t2, NoPartition, 0, writerID, 1, upserts("a2"))
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4), end(), "an update: -U and +U")
}

// Integration, on a real Fluss log table: fresh sealed batches of many
// writers (and consecutive ones of one writer) queued together go in one
// records entry per request, and Fluss appends them all, each at the
// offset the sender computes from the entry's base; a copy of one of them
// re-sent alone later is recognised as a duplicate. When a batch in a
// shared entry is out of sequence, Fluss refuses the whole entry: each
// batch is resent alone and gets its own verdict (the others are written,
// the faulty one fails with ErrSequenceRejected).
func TestIntegrationSealedSharedEntry(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newClient(t, addr)
	setup, stopSetup := newIntegrationWriter(t, c, nil)
	tbl := createLogTables(t, ctx, c, setup, 1, 1, fluss.LogFormatArrow)[0]
	stopSetup()
	rows := func(from int64, n int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = Op{Kind: fluss.WriteAppend, Row: fluss.Row{fluss.IntDatum(from + int64(i)), fluss.IntDatum(1), fluss.StringDatum("x")}}
		}
		return ops
	}
	newWriterID := func() int64 {
		id, err := c.InitWriter(ctx, tbl.info.Path)
		require.NoError(t, err)
		return id
	}
	type queued struct {
		h    Handle
		seal Seal
		n    int
	}
	// phase queues the seals before its writer runs, so that its first
	// drain pass finds them all, then runs it until every handle is done.
	phase := func(seals []Seal) ([]queued, float64) {
		w, err := newTestWriter(testConfig(nil), c)
		require.NoError(t, err)
		table, err := w.AddTable(tbl.spec)
		require.NoError(t, err)
		var qs []queued
		for i, s := range seals {
			n := 1 + i%3
			h, err := w.WriteSeal(ctx, table, NoPartition, 0, s, rows(int64(100*i), n))
			require.NoError(t, err)
			qs = append(qs, queued{h, s, n})
		}
		runErr := make(chan error, 1)
		go func() { runErr <- w.Run(context.Background()) }()
		for _, q := range qs {
			_, _ = q.h.Wait(ctx)
		}
		shared := testutil.ToFloat64(w.snd.m.table(table).sharedEntry)
		require.NoError(t, w.Close(ctx))
		require.NoError(t, <-runErr)
		return qs, shared
	}

	// Phase 1: 12 writers, the first with three consecutive batches.
	first := newWriterID()
	seals := []Seal{{WriterID: first, Sequence: 0, Fresh: true}, {WriterID: first, Sequence: 1, Fresh: true}, {WriterID: first, Sequence: 2, Fresh: true}}
	for range 11 {
		seals = append(seals, Seal{WriterID: newWriterID(), Sequence: 0, Fresh: true})
	}
	qs, shared := phase(seals)
	assert.Equal(t, float64(len(seals)), shared, "one entry holds them all")
	var want int64
	for i, q := range qs {
		off, err := q.h.Wait(ctx)
		require.NoError(t, err, "batch %d", i)
		assert.Equal(t, want, off, "batch %d: the entry's base plus the records before it", i)
		want += int64(q.n)
	}
	end, err := c.ListOffsets(ctx, tbl.info.TableID, fluss.NoPartition, []int32{0}, fluss.LatestOffset)
	require.NoError(t, err)
	require.Equal(t, want, end[0], "every batch of the shared entry appended once")

	// A copy of batch 4 (another writer's first), not fresh: alone, and
	// answered with its original offset; nothing appended.
	again, _ := phase([]Seal{{WriterID: seals[4].WriterID, Sequence: 0}})
	off, err := again[0].h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, mustOffset(t, ctx, qs[4].h), off)

	// Phase 2: a shared entry with one batch out of sequence.
	bad := newWriterID()
	seals = []Seal{{WriterID: newWriterID(), Sequence: 0, Fresh: true}, {WriterID: bad, Sequence: 1, Fresh: true}, {WriterID: newWriterID(), Sequence: 0, Fresh: true}}
	qs, shared = phase(seals)
	assert.Equal(t, float64(len(seals)), shared, "the first attempt shared one entry")
	_, err = qs[1].h.Wait(ctx)
	require.ErrorIs(t, err, ErrSequenceRejected, "alone, the gap gets its own verdict")
	written := want
	for _, i := range []int{0, 2} {
		_, err := qs[i].h.Wait(ctx)
		require.NoError(t, err, "batch %d resent alone", i)
		written += int64(qs[i].n)
	}
	end, err = c.ListOffsets(ctx, tbl.info.TableID, fluss.NoPartition, []int32{0}, fluss.LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, written, end[0])
}

func mustOffset(t *testing.T, ctx context.Context, h Handle) int64 {
	t.Helper()
	off, err := h.Wait(ctx)
	require.NoError(t, err)
	return off
}
