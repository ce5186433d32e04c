package exactlyonce

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/producerstate"
)

// A sequence is fresh (may share a Fluss records entry) only beyond what a
// crashed instance can have written: SequenceWindow batches past the
// loaded row per target, nothing under a writer id this instance took.
func TestExactlyOnceFreshSequences(t *testing.T) {
	t1, t2 := producerstate.Target{TableID: 1, Bucket: 0}, producerstate.Target{TableID: 1, Bucket: 1}
	own := &producerPartition{}
	assert.True(t, own.fresh(t1, 0), "a writer id taken here: nothing written before")

	loaded := &producerPartition{loadedTargets: map[producerstate.Target]int32{t1: 7}}
	for seq := int32(8); seq <= 12; seq++ {
		assert.False(t, loaded.fresh(t1, seq), "seq %d: a crashed instance may have written it", seq)
	}
	assert.True(t, loaded.fresh(t1, 13))
	assert.False(t, loaded.fresh(t2, 4), "a target not in the row: 0-4 may be written")
	assert.True(t, loaded.fresh(t2, 5))
}

// ackedStore acknowledges every commit at once and keeps the versions
// committed.
type ackedStore struct{ versions []int64 }

func (s *ackedStore) Open(context.Context) error { return nil }
func (s *ackedStore) Lookup(context.Context, producerstate.Key) (producerstate.State, bool, error) {
	return producerstate.State{}, false, nil
}
func (s *ackedStore) Commit(_ context.Context, _ producerstate.Key, st *producerstate.State) (producerstate.Ack, error) {
	s.versions = append(s.versions, st.Version)
	return acked{}, nil
}

type acked struct{}

func (acked) Wait(context.Context) (int64, error) { return 0, nil }

// A commit writes the newest queued batch's snapshot, answers every batch
// of the group, and then lets go of the snapshots: a producer-partition
// stays loaded for eoIdle after its last batch, and its recent batches
// should hold their answers only.
func TestCommitReleasesSnapshots(t *testing.T) {
	store := &ackedStore{}
	e := New(context.Background(), store, nil, nil, slog.New(slog.DiscardHandler))
	p := &producerPartition{key: producerstate.Key{ProducerID: 1, Topic: "t"}, inflight: 2}
	var group []*eoBatch
	for v := int64(1); v <= 2; v++ {
		b := &eoBatch{first: int32(v - 1), last: int32(v - 1), c: kafkaproto.NewCompletion(), wroteOK: true, offset: 10 * v,
			snapshot: producerstate.State{Version: v, Targets: map[producerstate.Target]int32{{TableID: 1}: int32(v - 1)},
				Window: []producerstate.Batch{{First: int32(v - 1), Last: int32(v - 1), Offset: -1}}}}
		group = append(group, b)
	}
	p.recent, p.toCommit = group, group

	e.commit(p)
	assert.Equal(t, []int64{2}, store.versions, "one commit, of the newest batch's state")
	for i, b := range group {
		select {
		case <-b.c.Done():
		default:
			t.Fatalf("batch %d not answered", i)
		}
		assert.Equal(t, int64(10*(i+1)), b.c.Result().BaseOffset)
		assert.Zero(t, b.snapshot.Version, "batch %d", i)
		assert.Nil(t, b.snapshot.Targets, "batch %d's snapshot released", i)
		assert.Nil(t, b.snapshot.Window, "batch %d", i)
	}
	assert.Same(t, group[1], p.recent[1], "the answers stay for re-sent batches")
}
