package kafkaproto_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// readyGate is a WithReadyCheck whose answer the test sets; calls counts
// the checks and signals every one on checked.
type readyGate struct {
	err     atomic.Pointer[error]
	calls   atomic.Int64
	checked chan struct{}
}

func newReadyGate(err error) *readyGate {
	g := &readyGate{checked: make(chan struct{}, 1)}
	g.set(err)
	return g
}

func (g *readyGate) set(err error) { g.err.Store(&err) }

func (g *readyGate) check() error {
	g.calls.Add(1)
	select {
	case g.checked <- struct{}{}:
	default:
	}
	return *g.err.Load()
}

// TestNotReadyAnswersRetriable: while the ready check fails, ApiVersions is
// answered normally, Metadata gives LEADER_NOT_AVAILABLE (and no topics for
// an all-topics request) but the broker, Produce NOT_LEADER_OR_FOLLOWER
// without touching the sink, InitProducerId COORDINATOR_LOAD_IN_PROGRESS;
// once ready, everything is served.
func TestNotReadyAnswersRetriable(t *testing.T) {
	t.Parallel()
	gate := newReadyGate(errors.New("routes not loaded"))
	env := kafkatest.StartServer(t, kafkaproto.Config{}, kafkaproto.WithReadyCheck(gate.check))
	c := dialRaw(t, env.Addr)
	checkApiVersions(t, c)

	metadata := func(topics ...string) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 9
		if topics != nil {
			for _, name := range topics {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
		}
		return c.roundTrip(req).(*kmsg.MetadataResponse)
	}
	initPID := func() int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		return c.roundTrip(req).(*kmsg.InitProducerIDResponse).ErrorCode
	}
	produce := func() kmsg.ProduceResponseTopicPartition {
		return onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 1))))
	}

	m := metadata(kafkatest.Topic, "missing")
	require.Len(t, m.Brokers, 1, "clients need the broker to retry against")
	require.Len(t, m.Topics, 2)
	for _, tp := range m.Topics {
		assert.Equal(t, kafkaproto.ErrLeaderNotAvailable.Code, tp.ErrorCode, *tp.Topic)
		assert.Empty(t, tp.Partitions)
	}
	assert.Empty(t, metadata().Topics, "all-topics while not ready")
	p := produce()
	assert.Equal(t, kafkaproto.ErrNotLeaderOrFollower.Code, p.ErrorCode)
	require.NotNil(t, p.ErrorMessage)
	assert.Contains(t, *p.ErrorMessage, "not ready")
	assert.NotContains(t, *p.ErrorMessage, "routes not loaded", "the check's error stays in the log")
	assert.Equal(t, kafkaproto.ErrCoordinatorLoadInProgress.Code, initPID())
	assert.Zero(t, env.Sink.TotalRecords())
	for api, want := range map[string]float64{"metadata": 2, "produce": 1, "init_producer_id": 1} {
		assert.Equal(t, want, metricWithLabel(t, env, "fluss_gateway_kafka_not_ready_responses_total", "api", api), api)
	}

	gate.set(nil)
	m = metadata(kafkatest.Topic)
	require.Len(t, m.Topics, 1)
	assert.Equal(t, int16(0), m.Topics[0].ErrorCode)
	assert.Len(t, m.Topics[0].Partitions, 3)
	assert.Len(t, metadata().Topics, 2)
	assert.Equal(t, int16(0), produce().ErrorCode)
	assert.Equal(t, int16(0), initPID())
	assert.Equal(t, 1, env.Sink.TotalRecords())
}

// TestKgoWaitsForReady: an idempotent franz-go producer that starts while
// the gateway is not ready retries (it is told to) and delivers once the
// gateway becomes ready, without an error.
func TestKgoWaitsForReady(t *testing.T) {
	t.Parallel()
	gate := newReadyGate(errors.New("fluss unreachable"))
	env := kafkatest.StartServer(t, kafkaproto.Config{}, kafkaproto.WithReadyCheck(gate.check))
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DefaultProduceTopic(kafkatest.Topic))
	require.NoError(t, err)
	defer cl.Close()
	ctx := kafkatest.Context(t)
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, kgo.StringRecord("early")).FirstErr() }()
	// Several refusals, then ready.
	for gate.calls.Load() < 4 {
		select {
		case <-gate.checked:
		case err := <-done:
			t.Fatalf("produce finished while not ready: %v", err)
		case <-ctx.Done():
			t.Fatal("the client stopped asking")
		}
	}
	assert.Zero(t, env.Sink.TotalRecords())
	gate.set(nil)
	require.NoError(t, <-done)
	assert.Equal(t, 1, env.Sink.TotalRecords())
}
