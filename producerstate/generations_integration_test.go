package producerstate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/clocktest"
	"github.com/fluss-kafka/gateway/owntable"
)

func commitAndWait(ctx context.Context, t *testing.T, s *Store, k Key, p State) {
	t.Helper()
	h, err := s.Commit(ctx, k, &p)
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)
}

// Integration, on a real Fluss: thousands of short-lived producers (a new
// fleet of 1,000 producer-partitions each expiration period, each
// committing once) do not grow the table: generations past the previous
// one are dropped whole, so at most three stay (previous, current, next)
// and the rows of producers gone longer than the expiration no longer
// look up. A producer-partition that commits every period, and one that
// was silent for less than one, keep their states.
func TestIntegrationProducerStateGenerationsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	s := openIntegrationStore(t)
	const expiration = time.Hour // the clock below is the test's: it jumps
	s.Expiration = expiration
	c := clocktest.New(time.Unix(1_800_000_000, 0).Truncate(expiration))
	s.now = c.Now

	const fleets, fleet = 5, 1000
	steady := Key{ProducerID: 1, Topic: "steady", Partition: 0}
	var everyFleet [][]Key
	for f := range fleets {
		keys := make([]Key, fleet)
		for i := range keys {
			keys[i] = Key{ProducerID: int64(1_000_000 + f*fleet + i), Topic: "jobs", Partition: int32(i % 3)}
		}
		everyFleet = append(everyFleet, keys)
		var wg sync.WaitGroup
		errs := make(chan error, fleet)
		for _, k := range keys {
			wg.Go(func() {
				h, err := s.Commit(ctx, k, &State{Version: 1, WriterID: k.ProducerID, Targets: map[Target]int32{}})
				if err == nil {
					_, err = h.Wait(ctx)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		require.NoError(t, <-errs, "fleet %d", f)
		commitAndWait(ctx, t, s, steady, State{Version: int64(f + 1), WriterID: 7, Targets: map[Target]int32{}})
		c.Advance(expiration)
		// Reaching a new generation tends the table: the next one made,
		// the ones before the previous dropped (in the background).
		_, _, err := s.Lookup(ctx, steady)
		require.NoError(t, err)
		g := s.generation(c.Now())
		require.Eventually(t, func() bool {
			parts, err := s.src.ListPartitionInfos(ctx, s.Path)
			if err != nil {
				return false
			}
			for _, p := range parts {
				var pg int64
				if _, err := fmt.Sscan(p.Name, &pg); err != nil || pg < g-1 || pg > g+1 {
					return false
				}
			}
			return true
		}, time.Minute, 50*time.Millisecond, "generations before %d dropped, none after %d", g-1, g+1)
	}
	parts, err := s.src.ListPartitionInfos(ctx, s.Path)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(parts), 3, "previous, current and next generation at most: %v", parts)

	found := func(keys []Key) int {
		n := 0
		for _, k := range keys {
			_, ok, err := s.Lookup(ctx, k)
			require.NoError(t, err)
			if ok {
				n++
			}
		}
		return n
	}
	for f, keys := range everyFleet {
		want := 0
		if f == fleets-1 {
			want = fleet // silent for one period: kept
		}
		assert.Equal(t, want, found(keys), "fleet %d of %d: rows still looked up", f, fleets)
	}
	p, ok, err := s.Lookup(ctx, steady)
	require.NoError(t, err)
	require.True(t, ok, "a producer committing every period keeps its state")
	assert.Equal(t, int64(fleets), p.Version)
}

// Integration, on a real Fluss: a state the table of an earlier version
// holds (no generations) is read while no generation has one, and a
// commit's newer version in a generation wins over it.
func TestIntegrationProducerStateLegacyTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s := openIntegrationStore(t)
	s.Legacy = fluss.TablePath{Database: s.Path.Database, Table: "legacy_state"}

	old := owntable.New(s.src, s.Acc, s.Legacy, owntable.Kind{What: "legacy producer-state table", Descriptor: legacyDescriptor,
		Properties: checkStateProperties})
	require.NoError(t, old.Open(ctx))
	k := Key{ProducerID: 42, Topic: "orders", Partition: 1}
	want := State{Version: 5, WriterID: 900, Known: true, NextSeq: 10, Targets: map[Target]int32{{TableID: 3, PartitionID: -1, Bucket: 0}: 4},
		Window: []Batch{{First: 5, Last: 9, Offset: 20}}}
	key, bucket, err := s.legacyKey(ctx, &old, k)
	require.NoError(t, err)
	row := fluss.Row{fluss.IntDatum(k.ProducerID), fluss.StringDatum(k.Topic), fluss.IntDatum(int64(k.Partition)),
		fluss.IntDatum(want.Version), fluss.IntDatum(want.WriterID), fluss.IntDatum(want.Fingerprint), fluss.BytesDatum(appendState(nil, &want))}
	h, err := s.Acc.Append(ctx, old.Writer, fluss.NoPartition, bucket, fluss.WriteUpsert, key, row)
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)

	got, ok, err := s.Lookup(ctx, k)
	require.NoError(t, err)
	require.True(t, ok, "read from the legacy table")
	assert.Equal(t, want, got)

	next := want.Clone()
	next.Version, next.NextSeq = 6, 20
	commitAndWait(ctx, t, s, k, next)
	got, ok, err = s.Lookup(ctx, k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, next, got, "the generation's newer state")
}

// legacyKey encodes k for the legacy table t (its own key encoder), and
// checks it is the key the store's table uses.
func (s *Store) legacyKey(ctx context.Context, t *owntable.Table, k Key) ([]byte, int32, error) {
	if err := s.Open(ctx); err != nil {
		return nil, 0, err
	}
	row := fluss.Row{fluss.IntDatum(k.ProducerID), fluss.StringDatum(k.Topic), fluss.IntDatum(int64(k.Partition)), {}, {}, {}, {}}
	key, err := t.KeyEnc.Encode(nil, row)
	if err != nil {
		return nil, 0, err
	}
	ours, bucket, err := s.key(k, 0)
	if err != nil {
		return nil, 0, err
	}
	if string(ours) != string(key) {
		return nil, 0, fmt.Errorf("the tables' keys differ: %x vs %x", ours, key)
	}
	return key, bucket, nil
}
