package exactlyonce

import (
	"testing"

	"github.com/fluss-kafka/gateway/producerstate"
	"github.com/stretchr/testify/assert"
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
