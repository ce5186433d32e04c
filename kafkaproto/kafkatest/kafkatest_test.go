package kafkatest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

func TestSinkAssignsOffsetsPerPartition(t *testing.T) {
	s := NewSink()
	produce := func(p int32, n int) kafkaproto.PartitionResult {
		w, err := s.Produce(t.Context(), &kafkaproto.PartitionProduce{Topic: "t", Partition: p, Records: make([]kafkaproto.Record, n)})
		require.NoError(t, err)
		<-w.Done()
		return w.Result()
	}
	assert.Equal(t, int64(0), produce(0, 3).BaseOffset)
	assert.Equal(t, int64(3), produce(0, 2).BaseOffset)
	assert.Equal(t, int64(0), produce(1, 1).BaseOffset)
	s.FailNext(1, kafkaproto.ErrKafkaStorage)
	assert.True(t, errors.Is(produce(1, 1).Err, kafkaproto.ErrKafkaStorage))
	assert.Equal(t, int64(1), produce(1, 1).BaseOffset)
	assert.Equal(t, 7, s.TotalRecords())
	assert.Len(t, s.Batches(), 4)
}

func TestTopicsSorted(t *testing.T) {
	tp := NewTopics(map[string]int32{"b": 2, "a": 1})
	tp.Set("c", 3)
	assert.Equal(t, []kafkaproto.TopicInfo{{Name: "a", Partitions: 1}, {Name: "b", Partitions: 2}, {Name: "c", Partitions: 3}}, tp.AllTopics())
	n, ok := tp.Topic("b")
	assert.True(t, ok)
	assert.Equal(t, int32(2), n)
}
