package exactlyonce

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
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

// countingStore is ackedStore that counts lookups.
type countingStore struct {
	ackedStore
	lookups int
}

func (s *countingStore) Lookup(ctx context.Context, k producerstate.Key) (producerstate.State, bool, error) {
	s.lookups++
	return s.ackedStore.Lookup(ctx, k)
}

type countingIDs struct{ calls int }

func (c *countingIDs) InitWriter(context.Context, ...fluss.TablePath) (int64, error) {
	c.calls++
	return int64(100 + c.calls), nil
}

// TryAdmit (the connection's read goroutine) never reads or writes the
// producer state in Fluss: a producer-partition not loaded here, or a batch
// that starts a new writer id, gets ErrWouldBlock with nothing changed,
// and Admit then takes the batch as it would have.
func TestTryAdmitNeverWaitsForFluss(t *testing.T) {
	store, ids := &countingStore{}, &countingIDs{}
	e := New(context.Background(), store, nil, ids, slog.New(slog.DiscardHandler))
	key := producerstate.Key{ProducerID: 7, Topic: "t"}
	batch := func(epoch int16, first, n int) *kafkaproto.PartitionProduce {
		return &kafkaproto.PartitionProduce{Topic: "t", ProducerID: 7, ProducerEpoch: epoch, BaseSequence: int32(first),
			Records: make([]kafkaproto.Record, n)}
	}
	try := func(req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, *kafkaproto.Completion, error) {
		c := kafkaproto.NewCompletion()
		w, err := e.TryAdmit(context.Background(), key, req, fluss.TablePath{Database: "d", Table: "t"}, 1, nil, c, Timing{})
		return w, c, err
	}
	answered := func(w kafkaproto.PartitionWrite) kafkaproto.PartitionResult {
		t.Helper()
		<-w.Done()
		return w.Result()
	}

	_, _, err := try(batch(0, 0, 5))
	assert.ErrorIs(t, err, ErrWouldBlock, "not loaded here")
	assert.Zero(t, store.lookups)
	assert.Zero(t, ids.calls)
	assert.Empty(t, store.versions)

	c := kafkaproto.NewCompletion()
	w, err := e.Admit(context.Background(), key, batch(0, 0, 5), fluss.TablePath{Database: "d", Table: "t"}, 1, nil, c, Timing{}, nil)
	assert.NoError(t, err)
	assert.NoError(t, answered(w).Err)
	assert.Equal(t, 1, store.lookups)
	assert.Equal(t, 1, ids.calls)

	w, c2, err := try(batch(0, 5, 5))
	assert.NoError(t, err)
	assert.Same(t, c2, w, "loaded: admitted at once")
	assert.NoError(t, answered(w).Err)

	_, _, err = try(batch(1, 0, 5))
	assert.ErrorIs(t, err, ErrWouldBlock, "an epoch bump takes a new writer id")
	assert.Equal(t, 1, ids.calls)

	// Nothing of the bump stuck: epoch 0 goes on where it was.
	w, c3, err := try(batch(0, 10, 5))
	assert.NoError(t, err)
	assert.Same(t, c3, w)
	assert.NoError(t, answered(w).Err)
	w, _, err = try(batch(0, 10, 5))
	assert.NoError(t, err, "a re-sent batch is answered")
	assert.NoError(t, answered(w).Err)
	assert.Equal(t, 1, store.lookups)

	c4 := kafkaproto.NewCompletion()
	w, err = e.Admit(context.Background(), key, batch(1, 0, 5), fluss.TablePath{Database: "d", Table: "t"}, 1, nil, c4, Timing{}, nil)
	assert.NoError(t, err)
	assert.NoError(t, answered(w).Err)
	assert.Equal(t, 2, ids.calls, "the bump took its writer id in Admit")
}

// failingStore fails its lookups while down is set.
type failingStore struct {
	countingStore
	down bool
}

func (s *failingStore) Lookup(ctx context.Context, k producerstate.Key) (producerstate.State, bool, error) {
	if s.down {
		s.lookups++
		return producerstate.State{}, false, errors.New("lookup producer state: tablet server unreachable")
	}
	return s.countingStore.Lookup(ctx, k)
}

// A producer-state table that keeps failing shows in the log once, with
// the cause, and again when it recovers; the producers meanwhile get a
// retriable error and no line each.
func TestFailingLookupsLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	store := &failingStore{down: true}
	e := New(context.Background(), store, nil, &countingIDs{}, slog.New(slog.NewTextHandler(&buf, nil)))
	admit := func(pid int64) (kafkaproto.PartitionWrite, error) {
		key := producerstate.Key{ProducerID: pid, Topic: "t"}
		req := &kafkaproto.PartitionProduce{Topic: "t", ProducerID: pid, Records: make([]kafkaproto.Record, 1)}
		return e.Admit(context.Background(), key, req, fluss.TablePath{Database: "d", Table: "t"}, 1, nil, kafkaproto.NewCompletion(), Timing{}, nil)
	}
	for pid := int64(1); pid <= 50; pid++ {
		_, err := admit(pid)
		require.ErrorIs(t, err, kafkaproto.ErrNotEnoughReplicas, "producer %d: a retriable error", pid)
	}
	assert.Equal(t, 50, store.lookups)
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "producer-state lookups failing"), out)
	assert.Contains(t, out, "tablet server unreachable")
	assert.Contains(t, out, "producer_id=1")

	store.down = false
	w, err := admit(51)
	require.NoError(t, err)
	<-w.Done()
	assert.Contains(t, buf.String(), "producer-state lookups recovered")
	assert.Contains(t, buf.String(), "failures=50")
}
