package kafkaproto_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// testEnv is a Server on 127.0.0.1:0 with in-memory fakes.
type testEnv struct {
	srv    *kafkaproto.Server
	addr   string
	sink   *kafkatest.Sink
	topics *kafkatest.Topics
	pids   *kafkatest.ProducerIDs
	reg    *prometheus.Registry
}

const testTopic = "events"

func testLogger() *slog.Logger {
	if os.Getenv("KAFKAPROTO_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func startServer(t *testing.T, cfg kafkaproto.Config, opts ...kafkaproto.Option) *testEnv {
	t.Helper()
	env := &testEnv{
		sink:   kafkatest.NewSink(),
		topics: kafkatest.NewTopics(map[string]int32{testTopic: 3, "other": 1}),
		pids:   &kafkatest.ProducerIDs{},
		reg:    prometheus.NewPedanticRegistry(),
	}
	srv, err := kafkaproto.New(cfg, kafkatest.Backend{Topics: env.topics, Sink: env.sink, ProducerIDs: env.pids}, append([]kafkaproto.Option{
		kafkaproto.WithRegisterer(env.reg), kafkaproto.WithLogger(testLogger())}, opts...)...)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	env.srv, env.addr = srv, l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, kafkaproto.ErrServerClosed) {
			t.Errorf("serve returned %v", err)
		}
	})
	return env
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitRecords waits until the sink holds n records in total.
func (env *testEnv) waitRecords(t *testing.T, n int) {
	t.Helper()
	require.NoError(t, env.sink.WaitFor(testContext(t), func(s *kafkatest.Sink) bool { return s.TotalRecords() >= n }))
	require.Equal(t, n, env.sink.TotalRecords())
}

func splitAddr(t *testing.T, addr string) (string, int32) {
	t.Helper()
	host, portStr, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	return host, int32(port)
}

// logSignal is a slog.Handler that closes a channel when a record whose
// message contains substr is logged.
type logSignal struct {
	substr string
	once   *sync.Once
	ch     chan struct{}
}

func newLogSignal(substr string) logSignal {
	return logSignal{substr: substr, once: &sync.Once{}, ch: make(chan struct{})}
}

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

// metricValue sums every series of a gathered counter or gauge.
func metricValue(t *testing.T, env *testEnv, name string) float64 {
	t.Helper()
	mfs, err := env.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		total := 0.0
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return total
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// padding makes values compressible, so that clients which skip compression
// when it does not pay (librdkafka) still compress single-record batches.
var padding = strings.Repeat("compressible ", 20)
