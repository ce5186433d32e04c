package kafkaproto_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// throttleBySink throttles partition p by p*100 ms.
type throttleBySink struct{}

func (throttleBySink) Produce(_ context.Context, pp *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: 0, LogAppendTime: -1, LogStartOffset: -1,
		ThrottleTime: time.Duration(pp.Partition) * 100 * time.Millisecond}), nil
}

// TestProduceThrottleTime: throttle_time_ms is the largest ThrottleTime of
// the request's partitions, and is counted in the throttle metrics.
func TestProduceThrottleTime(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	srv, err := kafkaproto.New(kafkaproto.Config{}, struct {
		*kafkatest.Topics
		throttleBySink
		*kafkatest.ProducerIDs
	}{kafkatest.NewTopics(map[string]int32{kafkatest.Topic: 3}), throttleBySink{}, &kafkatest.ProducerIDs{}},
		kafkaproto.WithRegisterer(reg))
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		require.NoError(t, srv.Shutdown(kafkatest.Context(t)))
		<-served
	}()
	c := dialRaw(t, l.Addr().String())
	for _, tc := range []struct {
		name       string
		partitions []int32
		want       int32
	}{
		{"unthrottled", []int32{0}, 0},
		{"max over partitions", []int32{1, 0, 2}, 200},
	} {
		req := produceRequest(9, -1, kafkatest.Topic, tc.partitions[0], batch(-1, 0, -1, 1))
		for _, p := range tc.partitions[1:] {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch(-1, 0, -1, 1)
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		resp := c.roundTrip(req).(*kmsg.ProduceResponse)
		assert.Equal(t, tc.want, resp.ThrottleMillis, tc.name)
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] += m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, 1.0, got["fluss_gateway_kafka_produce_throttled_responses_total"])
	assert.InDelta(t, 0.2, got["fluss_gateway_kafka_produce_throttle_seconds_total"], 1e-9)
}

// throttleHook records franz-go's throttle callbacks.
type throttleHook struct {
	mu    sync.Mutex
	seen  []time.Duration
	after []bool
}

// throttles returns the throttle times seen so far.
func (h *throttleHook) throttles() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, afterResponse bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen, h.after = append(h.seen, d), append(h.after, afterResponse)
}

// TestKgoHonoursThrottle: franz-go sees the throttle time and applies it
// before its next request (KIP-219: throttled after the response).
func TestKgoHonoursThrottle(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	env.Sink.Throttle(300 * time.Millisecond)
	hook := &throttleHook{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DefaultProduceTopic(kafkatest.Topic), kgo.WithHooks(hook))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), kgo.StringRecord("throttled")).FirstErr())
	hook.mu.Lock()
	defer hook.mu.Unlock()
	require.NotEmpty(t, hook.seen)
	assert.Equal(t, 300*time.Millisecond, hook.seen[0])
	assert.True(t, hook.after[0], "the client delays its next request itself")
}
