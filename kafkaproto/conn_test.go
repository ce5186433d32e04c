package kafkaproto_test

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestResponsesInRequestOrder: an ApiVersions request pipelined behind a
// Produce that is still in the sink is answered after it.
func TestResponsesInRequestOrder(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxInFlightRequests: 2})
	env.Sink.Hold()
	c := dialRaw(t, env.Addr)
	corrs := []int32{
		c.send(produceRequest(9, 1, kafkatest.Topic, 0, batch(-1, 0, -1, 1))),
		c.send(kmsg.NewPtrApiVersionsRequest()),
		c.send(produceRequest(9, 1, kafkatest.Topic, 1, batch(-1, 0, -1, 2))),
		c.send(kmsg.NewPtrApiVersionsRequest()),
	}
	// Two produces reach the sink although only two requests may wait for
	// their responses at a time: the reader blocks, the writer waits.
	require.NoError(t, env.Sink.WaitFor(kafkatest.Context(t), func(s *kafkatest.Sink) bool { return s.Held() == 2 }))
	env.Sink.Release(nil)
	for i, corr := range corrs {
		var resp kmsg.Response = kmsg.NewPtrApiVersionsResponse()
		if i%2 == 0 {
			pr := kmsg.NewPtrProduceResponse()
			pr.Version = 9
			resp = pr
		}
		c.recv(corr, resp) // fails on a correlation id out of order
	}
	assert.Equal(t, 3, env.Sink.TotalRecords())
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{IdleTimeout: 100 * time.Millisecond})
	c := dialRaw(t, env.Addr)
	c.expectClosed()
	checkAlive(t, env.Addr)
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), testRecords(10)...).FirstErr())
	problems, err := testutil.GatherAndLint(env.Reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 10.0, env.MetricValue(t, "fluss_gateway_kafka_produce_records_total"))
	assert.Greater(t, env.MetricValue(t, "fluss_gateway_kafka_requests_total"), 3.0)
	assert.GreaterOrEqual(t, env.MetricValue(t, "fluss_gateway_kafka_open_connections"), 1.0)
	assert.Greater(t, env.MetricValue(t, "fluss_gateway_kafka_producer_states"), 0.0)
}

// TestReadBudget: a request that does not fit in the server-wide read
// budget waits until the request holding it is handled.
func TestReadBudget(t *testing.T) {
	t.Parallel()
	waiting := newLogSignal("waiting for read budget")
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxFrameBytes: 64 << 10, MaxReadBytes: 64 << 10, MaxMessageBytes: 64 << 10},
		kafkaproto.WithLogger(slog.New(waiting)))
	entered := make(chan struct{}, 2)
	unblock := make(chan struct{})
	var inside atomic.Int32
	env.Sink.Reject = func(*kafkaproto.PartitionProduce) error {
		if inside.Add(1) > 1 {
			t.Error("two requests handled at once despite the read budget")
		}
		entered <- struct{}{}
		<-unblock
		inside.Add(-1)
		return nil
	}
	big := kafkaproto.TestBatch{ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{{Value: make([]byte, 40<<10)}}}.Build()
	a, b := dialRaw(t, env.Addr), dialRaw(t, env.Addr)
	corrA := a.send(produceRequest(9, 1, kafkatest.Topic, 0, big))
	<-entered
	corrB := b.send(produceRequest(9, 1, kafkatest.Topic, 1, big))
	select {
	case <-waiting.ch:
	case <-kafkatest.Context(t).Done():
		t.Fatal("second request did not wait for the budget")
	}
	close(unblock)
	for _, x := range []struct {
		c    *rawConn
		corr int32
	}{{a, corrA}, {b, corrB}} {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		x.c.recv(x.corr, resp)
		assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
	}
	assert.Equal(t, 1.0, env.MetricValue(t, "fluss_gateway_kafka_read_budget_waits_total"))
}
