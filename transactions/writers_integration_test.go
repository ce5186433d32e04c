package transactions

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/producerstate"
)

// Integration, on a real Fluss: instances that propose writer ids for the
// same producer-partition and state at once (each its own client and
// writer, as separate gateway processes) all read back one of the
// proposals; a later state, or another partition, agrees anew.
func TestIntegrationWriterAgreement(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const instances = 4
	tables, _, _ := txnInstances(t, ctx, instances)
	require.NoError(t, tables[0].Open(ctx), "creates the table")
	agreements := make([]*writerAgreement, instances)
	for i, tab := range tables {
		agreements[i] = &writerAgreement{rows: tab, now: time.Now}
	}
	key := producerstate.Key{ProducerID: 41, Topic: "orders", Partition: 3}
	from := &producerstate.State{WriterID: 1000, Version: 17}
	for round := range 3 {
		got := make([]int64, instances)
		var wg sync.WaitGroup
		for i, a := range agreements {
			wg.Go(func() {
				var err error
				got[i], err = a.AgreeWriter(ctx, key, from, int64(5000+100*round+i))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		require.False(t, t.Failed())
		assert.GreaterOrEqual(t, got[0], int64(5000+100*round), "round %d: one of this round's proposals", round)
		assert.Less(t, got[0], int64(5000+100*round+instances), "round %d: one of this round's proposals", round)
		for i := range got {
			assert.Equal(t, got[0], got[i], "round %d: instance %d agrees", round, i)
		}
		// Asked again, late: the same.
		again, err := agreements[round%instances].AgreeWriter(ctx, key, from, 9999)
		require.NoError(t, err)
		assert.Equal(t, got[0], again, "round %d: a late proposal reads the agreed id", round)
		from = &producerstate.State{WriterID: got[0], Version: from.Version + 2}
	}
	other, err := agreements[0].AgreeWriter(ctx, producerstate.Key{ProducerID: 41, Topic: "orders", Partition: 4}, &producerstate.State{WriterID: 1000, Version: 17}, 777)
	require.NoError(t, err)
	assert.Equal(t, int64(777), other, "another partition agrees on its own")
}
