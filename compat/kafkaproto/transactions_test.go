package kafkaproto_test

import (
	"fmt"
	"testing"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestConfluentKafkaGoTransactions drives librdkafka 2.11's transactional
// producer through the protocol (an in-memory coordinator behind it):
// a committed transaction's records reach the sink at the commit, an
// aborted one's never, and a second producer with the same transactional
// id fences the first (its commit fails as fatal).
func TestConfluentKafkaGoTransactions(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartTxnServer(t, kafkaproto.Config{})
	ctx := kafkatest.Context(t)
	newProducer := func() *ckafka.Producer {
		p, err := ckafka.NewProducer(&ckafka.ConfigMap{
			"bootstrap.servers": env.Addr, "transactional.id": "rdkafka-tx", "linger.ms": 5,
			"compression.codec": "lz4", "transaction.timeout.ms": 60000,
		})
		require.NoError(t, err)
		t.Cleanup(p.Close)
		require.NoError(t, p.InitTransactions(ctx))
		return p
	}
	topic := kafkatest.Topic
	send := func(p *ckafka.Producer, prefix string, n int) {
		deliveries := make(chan ckafka.Event, n)
		for i := range n {
			require.NoError(t, p.Produce(&ckafka.Message{
				TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: int32(i % 3)},
				Value:          []byte(fmt.Sprintf("%s-%d %s", prefix, i, padding)),
			}, deliveries))
		}
		for range n {
			m := (<-deliveries).(*ckafka.Message)
			require.NoError(t, m.TopicPartition.Error)
		}
	}
	p := newProducer()
	require.NoError(t, p.BeginTransaction())
	send(p, "committed", 9)
	assert.Zero(t, env.Sink.TotalRecords(), "nothing before the commit")
	require.NoError(t, p.CommitTransaction(ctx))
	assert.Equal(t, 9, env.Sink.TotalRecords())

	require.NoError(t, p.BeginTransaction())
	send(p, "aborted", 6)
	require.NoError(t, p.AbortTransaction(ctx))
	assert.Equal(t, 9, env.Sink.TotalRecords(), "an aborted transaction adds nothing")

	require.NoError(t, p.BeginTransaction())
	send(p, "zombie", 3)
	successor := newProducer()
	err := p.CommitTransaction(ctx)
	require.Error(t, err, "the fenced producer's commit")
	var kerr ckafka.Error
	require.ErrorAs(t, err, &kerr)
	assert.True(t, kerr.IsFatal() || kerr.Code() == ckafka.ErrFenced || kerr.Code() == ckafka.ErrProducerFenced, "got %v", err)

	require.NoError(t, successor.BeginTransaction())
	send(successor, "successor", 3)
	require.NoError(t, successor.CommitTransaction(ctx))
	assert.Equal(t, 12, env.Sink.TotalRecords())
	assert.Equal(t, []string{"rdkafka-tx:commit", "rdkafka-tx:abort", "rdkafka-tx:commit"}, env.Txns.Ends())
	for _, b := range env.Sink.Batches() {
		assert.Equal(t, kafkaproto.CodecLZ4, b.Produce.Codec)
	}
}
