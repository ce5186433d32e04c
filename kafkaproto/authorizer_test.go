package kafkaproto_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// captureLog is a slog.Handler keeping every record at Info or above with
// its attributes.
type captureLog struct {
	mu      *sync.Mutex
	records *[]map[string]string
}

func newCaptureLog() captureLog {
	return captureLog{mu: &sync.Mutex{}, records: &[]map[string]string{}}
}

func (h captureLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h captureLog) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, m)
	return nil
}
func (h captureLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h captureLog) WithGroup(string) slog.Handler      { return h }

// withMsg returns the captured records with the given message.
func (h captureLog) withMsg(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range *h.records {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// onlyEvents lets principal describe and write "events" only.
func onlyEvents(principal string) func(string, kafkaproto.Operation, string) bool {
	return func(p string, _ kafkaproto.Operation, topic string) bool {
		return p == principal && topic == kafkatest.Topic
	}
}

// TestAuthorizerTopics: Metadata lists only describable topics, asked-for
// undescribable ones (existing or not) get TOPIC_AUTHORIZATION_FAILED, and
// Produce to a topic the principal may not write gets it per partition,
// logged with principal and topic. Without SASL the principal is ANONYMOUS.
func TestAuthorizerTopics(t *testing.T) {
	t.Parallel()
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, kafkaproto.Config{}, kafkaproto.WithLogger(slog.New(logs)))
	env.ACL.Set(onlyEvents(kafkaproto.AnonymousPrincipal))
	c := dialRaw(t, env.Addr)

	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	all := c.roundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, all.Topics, 1, "all topics: only the describable one")
	assert.Equal(t, kafkatest.Topic, *all.Topics[0].Topic)

	for _, name := range []string{kafkatest.Topic, "other", "missing"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	m := c.roundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, m.Topics, 3)
	assert.Equal(t, int16(0), m.Topics[0].ErrorCode)
	assert.Len(t, m.Topics[0].Partitions, 3)
	for _, tp := range m.Topics[1:] {
		assert.Equal(t, kafkaproto.ErrTopicAuthorizationFailed.Code, tp.ErrorCode, "%s: existence not revealed", *tp.Topic)
		assert.Empty(t, tp.Partitions)
	}

	denied := onlyPartition(t, c.roundTrip(produceRequest(9, -1, "other", 0, batch(-1, 0, -1, 1))))
	assert.Equal(t, kafkaproto.ErrTopicAuthorizationFailed.Code, denied.ErrorCode)
	allowed := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 2))))
	assert.Equal(t, int16(0), allowed.ErrorCode)
	assert.Equal(t, 2, env.Sink.TotalRecords())
	assert.Empty(t, env.Sink.Records("other", 0))

	for _, ch := range env.ACL.Checks() {
		assert.Equal(t, kafkaproto.AnonymousPrincipal, ch.Principal)
	}
	assert.Equal(t, 2.0, metricWithLabel(t, env, "fluss_gateway_kafka_authorization_failures_total", "operation", "DESCRIBE"))
	assert.Equal(t, 1.0, metricWithLabel(t, env, "fluss_gateway_kafka_authorization_failures_total", "operation", "WRITE"))
	lines := logs.withMsg("topic authorization failed")
	require.NotEmpty(t, lines)
	assert.Equal(t, kafkaproto.AnonymousPrincipal, lines[0]["principal"])
	assert.Equal(t, "other", lines[0]["topic"])
}

// TestAuthorizerSASLPrincipal: an authenticated connection is authorized as
// its SASL user; franz-go fails records for a topic it may not write with
// TOPIC_AUTHORIZATION_FAILED and delivers the others.
func TestAuthorizerSASLPrincipal(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	env.ACL.Set(onlyEvents("User:alice"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := kafkatest.Context(t)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: kafkatest.Topic, Value: []byte("ok")}).FirstErr())
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("denied")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	assert.Equal(t, 1, env.Sink.TotalRecords())
	checks := env.ACL.Checks()
	require.NotEmpty(t, checks)
	for _, ch := range checks {
		assert.Equal(t, "User:alice", ch.Principal)
	}
}

// TestAuthorizationLogRateLimited: a client retrying a forbidden topic
// cannot flood the log: every refusal is counted, few are logged.
func TestAuthorizationLogRateLimited(t *testing.T) {
	t.Parallel()
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, kafkaproto.Config{}, kafkaproto.WithLogger(slog.New(logs)))
	env.ACL.Set(func(string, kafkaproto.Operation, string) bool { return false })
	c := dialRaw(t, env.Addr)
	const n = 50
	for range n {
		p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 1))))
		require.Equal(t, kafkaproto.ErrTopicAuthorizationFailed.Code, p.ErrorCode)
	}
	assert.Equal(t, float64(n), metricWithLabel(t, env, "fluss_gateway_kafka_authorization_failures_total", "operation", "WRITE"))
	lines := logs.withMsg("topic authorization failed")
	assert.NotEmpty(t, lines)
	assert.Less(t, len(lines), n/2)
}
