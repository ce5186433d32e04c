package kafkaproto_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func initProducerID(t *testing.T, c *rawConn) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	resp := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, int16(0), resp.ProducerEpoch)
	require.GreaterOrEqual(t, resp.ProducerID, int64(0))
	return resp.ProducerID
}

func TestIdempotentDuplicateAndGap(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	pid := initProducerID(t, c)
	assert.NotEqual(t, pid, initProducerID(t, c), "each InitProducerId gets a fresh id")

	first := batch(pid, 0, 0, 3)
	p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, first)))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)

	p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, batch(pid, 0, 3, 2))))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(3), p.BaseOffset)

	// The first batch replayed on the wire, on another connection: original
	// offset, not written again.
	c2 := dialRaw(t, env.Addr)
	p = onlyPartition(t, c2.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, first)))
	assert.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(0), p.BaseOffset)
	assert.Len(t, env.Sink.Records(kafkatest.Topic, 1), 5)
	assert.Len(t, env.Sink.Batches(), 2)

	// A gap: sequence 10 when 5 is expected.
	p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, batch(pid, 0, 10, 1))))
	assert.Equal(t, int16(45), p.ErrorCode)
	require.NotNil(t, p.ErrorMessage)
	assert.Contains(t, *p.ErrorMessage, "expected 5")

	// Stale epoch after a bump.
	p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, batch(pid, 1, 0, 1))))
	require.Equal(t, int16(0), p.ErrorCode)
	p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 1, batch(pid, 0, 5, 1))))
	assert.Equal(t, int16(47), p.ErrorCode)

	// Sequences are per partition: partition 2 starts fresh.
	p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 2, batch(pid, 1, 0, 1))))
	assert.Equal(t, int16(0), p.ErrorCode)
	assert.Len(t, env.Sink.Batches(), 4)
}

// TestIdempotentPipelinedDuplicate: the retry arrives while the original is
// still in flight in the sink; both get the original offset, one write.
func TestIdempotentPipelinedDuplicate(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	pid := initProducerID(t, c)
	env.Sink.Hold()
	b := batch(pid, 0, 0, 4)
	corr1 := c.send(produceRequest(9, -1, kafkatest.Topic, 0, b))
	corr2 := c.send(produceRequest(9, -1, kafkatest.Topic, 0, b))
	corr3 := c.send(produceRequest(9, -1, kafkatest.Topic, 0, batch(pid, 0, 4, 1)))
	require.NoError(t, env.Sink.WaitFor(kafkatest.Context(t), func(s *kafkatest.Sink) bool { return s.Held() == 2 }))
	env.Sink.Release(nil)
	for _, tc := range []struct {
		corr int32
		base int64
	}{{corr1, 0}, {corr2, 0}, {corr3, 4}} {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		c.recv(tc.corr, resp)
		p := onlyPartition(t, resp)
		assert.Equal(t, int16(0), p.ErrorCode)
		assert.Equal(t, tc.base, p.BaseOffset)
	}
	assert.Len(t, env.Sink.Batches(), 2)
	assert.Len(t, env.Sink.Records(kafkatest.Topic, 0), 5)
}

// TestIdempotentRetryAfterFailure: a batch whose write failed is written
// when retried with the same sequence.
func TestIdempotentRetryAfterFailure(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	pid := initProducerID(t, c)
	b := batch(pid, 0, 0, 2)
	env.Sink.FailAll(kafkaproto.ErrNotEnoughReplicas)
	p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, b)))
	assert.Equal(t, int16(19), p.ErrorCode)
	env.Sink.FailAll(nil)
	p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, b)))
	assert.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(0), p.BaseOffset)
	assert.Len(t, env.Sink.Records(kafkatest.Topic, 0), 2)
}

func TestInitProducerIDRefusals(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	for _, tc := range []struct {
		name string
		txn  *string
		want int16
	}{
		{"transactional", kmsg.StringPtr("my-txn"), 53},
		{"empty transactional id", kmsg.StringPtr(""), 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []int16{0, 2, 5} {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.Version = v
				req.TransactionalID = tc.txn
				resp := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
				assert.Equal(t, tc.want, resp.ErrorCode, "v%d", v)
				assert.Equal(t, int64(-1), resp.ProducerID)
			}
		})
	}
}
