package producerstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/fluss-kafka/gateway/internal/writertest"
)

// TestMain stops the cluster flusstest.Bootstrap may start for this binary.
func TestMain(m *testing.M) { flusstest.Main(m) }

// Integration, on a real Fluss: the store creates its table (database
// included), a missing row looks up as absent, a committed row reads back
// from the leader as written, and a late commit with a lower version (a
// crashed instance's) does not roll it back: the versioned merge engine.
// openIntegrationStore is a Store on a table of its own (in a database
// dropped at the end) of the test binary's Fluss cluster, with a running
// writer.
func openIntegrationStore(tb testing.TB) *Store {
	tb.Helper()
	addr := flusstest.Bootstrap(tb)
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(addr, ",")})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	path := fluss.TablePath{Database: "gateway_it_" + hex.EncodeToString(b[:]), Table: "state"}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, path.Database, true, true); err != nil {
			tb.Logf("drop database %s: %v", path.Database, err)
		}
	})
	w, err := writertest.New(writertest.Defaults(), c)
	require.NoError(tb, err)
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(context.Background()) }()
	tb.Cleanup(func() {
		assert.NoError(tb, w.Close(context.Background()))
		assert.NoError(tb, <-runErr)
	})
	return New(c, w.Accumulator, path)
}

func TestIntegrationProducerStateStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	store := openIntegrationStore(t)

	key := Key{ProducerID: 77, Topic: "orders", Partition: 3}
	_, ok, err := store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.False(t, ok, "no row yet")

	commit := func(p State) {
		h, err := store.Commit(ctx, key, &p)
		require.NoError(t, err)
		_, err = h.Wait(ctx)
		require.NoError(t, err)
	}
	want := State{
		Version: 9, WriterID: 1234, Fingerprint: 55, Epoch: 2, Known: true, NextSeq: 4000,
		Targets: map[Target]int32{{TableID: 5, PartitionID: -1, Bucket: 1}: 17, {TableID: 6, PartitionID: -1, Bucket: 0}: 2},
		Window:  []Batch{{First: 3000, Last: 3499, Offset: 100}, {First: 3500, Last: 3999, Offset: 600}},
	}
	commit(want)
	got, ok, err := store.Lookup(ctx, key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, want, got)

	stale := want.Clone()
	stale.Version, stale.NextSeq = 8, 3500
	commit(stale)
	got, ok, err = store.Lookup(ctx, key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, want, got, "a lower version does not replace the row")

	newer := want.Clone()
	newer.Version, newer.NextSeq = 10, 4500
	commit(newer)
	got, _, err = store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, newer, got)
}

// Integration, on a real Fluss: a commit made while its own slot's bucket
// is suspect lands in another slot, and a lookup finds the highest version
// whichever slot holds it; a lower version in another slot (a stalled
// copy landing late) does not win.
func TestIntegrationProducerStateSlots(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	store := openIntegrationStore(t)
	require.NoError(t, store.Open(ctx))
	key := Key{ProducerID: 78, Topic: "orders", Partition: 1}
	_, partition, err := store.current(ctx)
	require.NoError(t, err)
	bucketOf := func(n int) bucketRef {
		_, b, err := store.key(key, n)
		require.NoError(t, err)
		return bucketRef{TableID: store.Info.TableID, PartitionID: partition, Bucket: b}
	}
	// commitIn commits p with the slots before n suspect, so it lands in
	// slot n.
	commitIn := func(n int, p State) {
		store.suspects = suspects{}
		for i := range n {
			store.suspects.suspect(bucketOf(i), time.Now())
		}
		h, err := store.Commit(ctx, key, &p)
		require.NoError(t, err)
		require.Equal(t, n, h.(*hedgedAck).first)
		_, err = h.Wait(ctx)
		require.NoError(t, err)
	}
	lookup := func() State {
		got, ok, err := store.Lookup(ctx, key)
		require.NoError(t, err)
		require.True(t, ok)
		return got
	}
	base := State{Version: 5, WriterID: 900, Known: true, NextSeq: 10, Targets: map[Target]int32{{TableID: 5, PartitionID: -1, Bucket: 0}: 3}, Window: []Batch{}}
	commitIn(0, base)
	assert.Equal(t, base, lookup())

	hedged := base.Clone()
	hedged.Version, hedged.NextSeq = 6, 20
	commitIn(2, hedged)
	assert.Equal(t, hedged, lookup(), "the newest commit is in slot 2")

	late := base.Clone()
	late.Version, late.NextSeq = 4, 0
	commitIn(1, late)
	assert.Equal(t, hedged, lookup(), "a lower version in another slot does not win")

	back := hedged.Clone()
	back.Version, back.NextSeq = 7, 30
	commitIn(0, back)
	assert.Equal(t, back, lookup())
}
