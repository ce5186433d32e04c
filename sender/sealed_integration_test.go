package sender

import (
	"context"
	"testing"
	"time"

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
	spec := TableSpec{ID: tbl.info.TableID, Path: tbl.info.Path, NumBuckets: 1, NewLogBuilder: func() (LogBuilder, error) {
		schema := tbl.info.Descriptor.Schema
		return fluss.NewArrowLogBuilder(&schema, tbl.info.SchemaID, tbl.info.Descriptor.ArrowCompression(), 3)
	}}
	t2, err := w2.AddTable(spec)
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
