package producerstate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// brokenPartitions is a Source whose first partitions never get bucket
// leaders (Fluss 0.9.1's coordinator missing a partition made right after
// its table); the ones made after broken have them at once.
type brokenPartitions struct {
	Source // the calls ensure does not make panic
	mu     sync.Mutex
	broken int              // how many partitions made from now on get no leaders
	parts  map[string]int64 // name -> id
	dead   map[int64]bool   // ids without leaders
	nextID int64
	made   int
	drops  int
}

func (b *brokenPartitions) ListPartitionInfos(context.Context, fluss.TablePath) ([]fluss.PartitionInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []fluss.PartitionInfo
	for name, id := range b.parts {
		out = append(out, fluss.PartitionInfo{ID: id, Name: name})
	}
	return out, nil
}

func (b *brokenPartitions) CreatePartition(_ context.Context, _ fluss.TablePath, spec fluss.PartitionSpec, ignoreIfExists bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	name := spec[0].Value
	if _, ok := b.parts[name]; ok {
		if ignoreIfExists {
			return nil
		}
		return fluss.ErrPartitionAlreadyExists
	}
	b.nextID++
	b.parts[name] = b.nextID
	b.made++
	if b.broken > 0 {
		b.broken--
		b.dead[b.nextID] = true
	}
	return nil
}

func (b *brokenPartitions) DropPartition(_ context.Context, _ fluss.TablePath, spec fluss.PartitionSpec, _ bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.parts, spec[0].Value)
	b.drops++
	return nil
}

func (b *brokenPartitions) WaitForTableLeaders(ctx context.Context, _ fluss.TablePath, ids ...int64) error {
	b.mu.Lock()
	dead := b.dead[ids[0]]
	b.mu.Unlock()
	if !dead {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func newBrokenStore(broken int) (*Store, *brokenPartitions) {
	src := &brokenPartitions{broken: broken, parts: map[string]int64{}, dead: map[int64]bool{}}
	s := New(src, nil, fluss.TablePath{Database: "gateway", Table: "states"})
	s.partitionOnline = 50 * time.Millisecond
	return s, src
}

// A generation made here whose buckets never get a leader is dropped and
// made again, and the new one is used; one made elsewhere is not touched;
// a partition that stays broken fails after remakeAttempts.
func TestEnsureRemakesLeaderlessNewGeneration(t *testing.T) {
	t.Parallel()
	t.Run("made again", func(t *testing.T) {
		s, src := newBrokenStore(1)
		// The caller's context has ended: the partition made here is
		// still seen through, or no later caller would make it again.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		id, err := s.ensure(ctx, 7)
		require.NoError(t, err)
		assert.Equal(t, int64(2), id, "the partition made again")
		id, err = s.ensure(t.Context(), 7)
		require.NoError(t, err)
		assert.Equal(t, int64(2), id, "known from then on")
		assert.Equal(t, 2, src.made)
		assert.Equal(t, 1, src.drops)
	})
	t.Run("stays broken", func(t *testing.T) {
		s, src := newBrokenStore(10)
		_, err := s.ensure(t.Context(), 7)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1+remakeAttempts, src.made)
		assert.Equal(t, remakeAttempts, src.drops)
	})
	t.Run("made elsewhere", func(t *testing.T) {
		s, src := newBrokenStore(0)
		src.parts["7"], src.nextID = 1, 1
		src.dead[1] = true
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := s.ensure(ctx, 7)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, src.drops, "a generation this store did not make is never dropped")
	})
}
