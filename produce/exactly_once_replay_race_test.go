package produce

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/exactlyonce"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/producerstate"
)

// gatedStore holds every producer-state lookup until `want` of them have
// read the table: the instances that race start from the same state.
type gatedStore struct {
	*memStore
	want    int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newGatedStore(ms *memStore, want int) *gatedStore {
	return &gatedStore{memStore: ms, want: want, all: make(chan struct{})}
}

func (g *gatedStore) Lookup(ctx context.Context, k producerstate.Key) (producerstate.State, bool, error) {
	st, ok, err := g.memStore.Lookup(ctx, k)
	g.mu.Lock()
	g.arrived++
	if g.arrived == g.want {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-ctx.Done():
		return producerstate.State{}, false, ctx.Err()
	}
	return st, ok, err
}

// firstProposal is the transactions table's agreement in memory: the
// first proposal for a state stands.
type firstProposal struct {
	mu     sync.Mutex
	agreed map[string]int64
}

func (f *firstProposal) AgreeWriter(_ context.Context, k producerstate.Key, from *producerstate.State, proposed int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := fmt.Sprintf("%+v/%d/%d", k, from.WriterID, from.Version)
	if id, ok := f.agreed[key]; ok {
		return id, nil
	}
	f.agreed[key] = proposed
	return proposed, nil
}

// ownProposal is no agreement: each instance keeps the id it took.
type ownProposal struct{}

func (ownProposal) AgreeWriter(_ context.Context, _ producerstate.Key, _ *producerstate.State, proposed int64) (int64, error) {
	return proposed, nil
}

// replay hands req to b as a committed transaction's batch and waits for
// its answer.
func replay(t *testing.T, b *Path, req *kafkaproto.PartitionProduce, agree exactlyonce.WriterAgreement) kafkaproto.PartitionResult {
	t.Helper()
	st := b.Current()
	route, ok := st.Routes.Resolve(req.Topic)
	require.True(t, ok)
	pw, err := b.Replay(t.Context(), st, route, req, agree)
	if err != nil {
		return kafkaproto.PartitionResult{Err: err}
	}
	<-pw.Done()
	return pw.Result()
}

// Two instances apply the same committed transaction at once (the one that
// decided it, slowed by a Fluss fault, and another's sweeper once the
// commit is past its grace), both starting from the same producer state.
// When that state needs a new writer id (a producer never seen, or a new
// epoch), each instance taking its own would write the batch twice under
// two writer ids (seen here without the agreement); they agree on one, and
// Fluss keeps one copy.
func TestExactlyOnceConcurrentReplaysAgreeOnWriter(t *testing.T) {
	t.Parallel()
	const n = 5
	for _, tc := range []struct {
		name  string
		epoch int16 // of the raced batch; a batch at epoch 0 was applied before when 1
		agree bool
	}{{"new_producer", 0, true}, {"epoch_bump", 1, true}, {"new_producer_unagreed", 0, false}, {"epoch_bump_unagreed", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newDedupFluss()
			ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
			var agree exactlyonce.WriterAgreement = &firstProposal{agreed: map[string]int64{}}
			if !tc.agree {
				agree = ownProposal{}
			}
			want := 0
			if tc.epoch > 0 {
				first := newEOInstance(t, f, ms, nil)
				require.NoError(t, replay(t, first, eoProduce(9, 0, 0, n), agree).Err)
				want = n
			}
			gate := newGatedStore(ms, 2)
			a, b := newEOInstance(t, f, gate, nil), newEOInstance(t, f, gate, nil)
			batch := func() *kafkaproto.PartitionProduce {
				req := eoProduce(9, tc.epoch, 1, n) // records n..2n-1
				if tc.epoch > 0 {
					req.BaseSequence = 0
				}
				return req
			}
			var wg sync.WaitGroup
			results := make([]kafkaproto.PartitionResult, 2)
			for i, inst := range []*Path{a, b} {
				wg.Go(func() { results[i] = replay(t, inst, batch(), agree) })
			}
			wg.Wait()
			for i, r := range results {
				require.NoError(t, r.Err, "instance %d", i)
			}
			got := f.rows(eoTableID)
			if !tc.agree {
				assert.Equal(t, want+2*n, total(got), "two writer ids, two copies: the race is real: %v", got)
				return
			}
			assert.Equal(t, want+n, total(got), "rows in Fluss: %v", got)
			for i := n; i < 2*n; i++ {
				assert.Equal(t, 1, got[fmt.Sprintf("p9/%d", i)], "record %d", i)
			}
		})
	}
}
