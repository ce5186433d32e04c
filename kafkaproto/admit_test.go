package kafkaproto_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// owningBackend takes over idempotent admission for kafkatest.Topic only.
type owningBackend struct{ kafkatest.Backend }

func (owningBackend) OwnsIdempotence(topic string) bool { return topic == kafkatest.Topic }

var _ kafkaproto.IdempotenceOwner = owningBackend{}

// For a topic the backend owns, every idempotent batch reaches the sink,
// duplicates and gaps included (the backend answers them); other topics
// keep the in-memory window.
func TestIdempotenceOwnerBypassesWindow(t *testing.T) {
	t.Parallel()
	sink := kafkatest.NewSink()
	b := owningBackend{kafkatest.Backend{Topics: kafkatest.NewTopics(map[string]int32{kafkatest.Topic: 3, "other": 1}),
		Sink: sink, ProducerIDs: &kafkatest.ProducerIDs{}}}
	srv, err := kafkaproto.New(kafkaproto.Config{}, b)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		<-served
	})
	c := dialRaw(t, l.Addr().String())
	pid := initProducerID(t, c)

	first := batch(pid, 0, 0, 3)
	for range 2 {
		p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, first)))
		require.Equal(t, int16(0), p.ErrorCode)
	}
	p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, batch(pid, 0, 10, 1))))
	require.Equal(t, int16(0), p.ErrorCode, "a gap is the backend's to answer")
	assert.Len(t, sink.Batches(), 3, "the copy and the gap reached the sink")

	for range 2 {
		p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, "other", 0, first)))
		require.Equal(t, int16(0), p.ErrorCode)
	}
	assert.Len(t, sink.Batches(), 4, "the other topic's copy was answered from the window")
}
