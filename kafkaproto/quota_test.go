package kafkaproto_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/fluss-kafka/gateway/internal/metrictest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
	"github.com/fluss-kafka/gateway/quota"
)

// TestQuotaFlooderHeldOthersUnthrottled: alice floods past her
// producer_byte_rate with franz-go and is throttled (throttle_time_ms > 0)
// to about her quota, measured once her first burst is spent; bob, without
// a quota, produces meanwhile and is never throttled.
func TestQuotaFlooderHeldOthersUnthrottled(t *testing.T) {
	t.Parallel()
	const rate = 256 << 10 // alice's bytes per second
	const valueBytes = 1 << 10
	reg := prometheus.NewPedanticRegistry()
	// 11 samples of 100 ms: a burst of 1 s of quota, throttles of at most
	// 1.1 s, so that the test takes seconds.
	q, err := quota.New(quota.Config{Window: 100 * time.Millisecond, Samples: 11},
		quota.Limits{Principals: map[string]int64{"User:alice": rate}}, reg)
	require.NoError(t, err)
	env := kafkatest.StartServer(t, kafkatest.SASLConfig(), kafkaproto.WithProduceQuota(q))
	ctx, cancel := context.WithCancel(kafkatest.Context(t))
	defer cancel()

	client := func(user, pass, topic string, hook *throttleHook) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()),
			kgo.DefaultProduceTopic(topic), kgo.ClientID(user+"-producer"), kgo.WithHooks(hook),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			// Batches well below a window's quota: one request cannot
			// outrun the throttle cap.
			kgo.ProducerBatchMaxBytes(16<<10))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	aliceHook, bobHook := &throttleHook{}, &throttleHook{}
	alice := client("alice", "s3cret", "other", aliceHook)
	bob := client("bob,=x", "pw", kafkatest.Topic, bobHook)

	value := make([]byte, valueBytes)
	var flood sync.WaitGroup
	flood.Go(func() {
		for ctx.Err() == nil {
			alice.Produce(ctx, &kgo.Record{Value: value}, func(*kgo.Record, error) {})
		}
	})
	defer flood.Wait()
	defer cancel()

	// The burst (10 windows' worth) is spent once alice is first throttled.
	require.NoError(t, waitUntil(ctx, func() bool { return len(aliceHook.throttles()) > 0 }), "alice is never throttled")
	accepted := func() int { return len(env.Sink.Records("other", 0)) * valueBytes }
	start, before := time.Now(), accepted()

	// Bob produces 2 MiB meanwhile: more than alice's quota lets through
	// in the time, so sharing her quota would throttle him.
	for range 4 {
		rs := make([]*kgo.Record, 512)
		for i := range rs {
			rs[i] = &kgo.Record{Value: value}
		}
		require.NoError(t, bob.ProduceSync(ctx, rs...).FirstErr())
	}
	// Measured over at least 2 s (several throttle cycles).
	require.NoError(t, waitUntil(ctx, func() bool { return time.Since(start) >= 2*time.Second }))
	got, elapsed := accepted()-before, time.Since(start).Seconds()
	cancel()

	t.Logf("alice: %d bytes in %.2fs (%.0f B/s, quota %d B/s), throttled %d times", got, elapsed, float64(got)/elapsed, rate, len(aliceHook.throttles()))
	assert.LessOrEqual(t, float64(got), 2*rate*elapsed, "alice's rate is held near her quota")
	assert.GreaterOrEqual(t, float64(got), 0.25*rate*elapsed, "alice still gets a share near her quota")
	for _, d := range aliceHook.throttles() {
		assert.Positive(t, d)
		assert.LessOrEqual(t, d, 1100*time.Millisecond, "throttle time capped at the samples' span")
	}
	assert.Empty(t, bobHook.throttles(), "bob has no quota: never throttled")
	assert.Positive(t, metrictest.Value(t, reg, "fluss_gateway_kafka_quota_throttled_requests_total", "principal", "User:alice"))
	assert.Zero(t, metrictest.Value(t, reg, "fluss_gateway_kafka_quota_throttled_requests_total", "principal", "User:bob,=x"))
	assert.GreaterOrEqual(t, metrictest.Value(t, reg, "fluss_gateway_kafka_quota_produce_bytes_total", "principal", "User:bob,=x"), float64(2<<20))
}

// TestQuotaMutesAndHolds: a Produce v9 over its quota is answered at once
// with throttle_time_ms, and the connection reads its next request only
// once that time has passed; a Produce v5, whose clients ignore
// throttle_time_ms, is answered only then.
func TestQuotaMutesAndHolds(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond // 11 samples: throttles capped at 3.3 s
	const throttle = 11 * window
	q, err := quota.New(quota.Config{Window: window, Samples: 11},
		quota.Limits{ClientIDs: map[string]int64{"raw-test": 1}}, prometheus.NewRegistry())
	require.NoError(t, err)
	env := kafkatest.StartServer(t, kafkaproto.Config{}, kafkaproto.WithProduceQuota(q))

	t.Run("v9 muted", func(t *testing.T) {
		t.Parallel()
		c := dialRaw(t, env.Addr)
		start := time.Now()
		produce := c.send(produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 1)))
		versions := kmsg.NewPtrApiVersionsRequest()
		versions.Version = 3
		versions.ClientSoftwareName, versions.ClientSoftwareVersion = "raw", "1"
		next := c.send(versions) // pipelined: waits in the socket while muted
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		c.recv(produce, resp)
		answered := time.Since(start)
		assert.Equal(t, int32(throttle/time.Millisecond), resp.ThrottleMillis)
		assert.Less(t, answered, throttle/2, "v9 is answered without waiting for the throttle")
		vr := kmsg.NewPtrApiVersionsResponse()
		vr.Version = 3
		c.recv(next, vr)
		assert.GreaterOrEqual(t, time.Since(start), throttle, "the next request is read only after the throttle time")
	})
	t.Run("v5 held", func(t *testing.T) {
		t.Parallel()
		c := dialRaw(t, env.Addr)
		start := time.Now()
		resp := c.roundTrip(produceRequest(5, -1, kafkatest.Topic, 1, batch(-1, 0, -1, 1))).(*kmsg.ProduceResponse)
		assert.Equal(t, int32(throttle/time.Millisecond), resp.ThrottleMillis)
		assert.GreaterOrEqual(t, time.Since(start), throttle, "v5's response is held for the throttle time")
	})
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
