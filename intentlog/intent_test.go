package intentlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAppendRecordMakesRuns(t *testing.T) {
	t.Parallel()
	a := Batch{ProducerPartition: ProducerPartition{ProducerID: 1, Topic: "t"}, BaseSequence: 0, LastSequence: 9}
	b := a
	b.ProducerID = 2
	var parts []Part
	for _, r := range []struct {
		batch Batch
		index int32
	}{{a, 0}, {a, 1}, {a, 3}, {b, 4}, {b, 5}, {a, 4}} {
		parts = AppendRecord(parts, r.batch, r.index)
	}
	assert.Equal(t, []Part{
		{Batch: a, Records: Range{First: 0, Count: 2}},
		{Batch: a, Records: Range{First: 3, Count: 1}},
		{Batch: b, Records: Range{First: 4, Count: 2}},
		{Batch: a, Records: Range{First: 4, Count: 1}},
	}, parts)
}
