package kafkaproto_test

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/internal/metrictest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

const (
	refusedTotal  = "fluss_gateway_kafka_connections_refused_total"
	fullTotal     = "fluss_gateway_kafka_listener_full_total"
	openConns     = "fluss_gateway_kafka_open_connections"
	acceptedConns = "fluss_gateway_kafka_connections_total"
)

func connLimits(t *testing.T, perIP int, overrides map[string]int) *kafkaproto.ConnectionLimits {
	t.Helper()
	l, err := kafkaproto.NewConnectionLimits(perIP, overrides)
	require.NoError(t, err)
	return l
}

// servedConn dials addr and returns the connection once the server answered
// an ApiVersions request on it: it was accepted and counted.
func servedConn(t *testing.T, addr string) *rawConn {
	t.Helper()
	c := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	require.Equal(t, int16(0), c.roundTrip(req).(*kmsg.ApiVersionsResponse).ErrorCode)
	return c
}

func perIPRefusals(t *testing.T, env *kafkatest.Env) float64 {
	t.Helper()
	return metricWithLabel(t, env, refusedTotal, "reason", "per_ip")
}

// TestConnectionsPerIP: a client address holds at most its limit of
// connections (max_connections_per_ip, or its override); the next one is
// closed at once and counted, and a closed connection frees its slot.
func TestConnectionsPerIP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		perIP     int
		overrides map[string]int
		want      int // connections 127.0.0.1 may hold
	}{
		{"limit", 2, nil, 2},
		{"override raises", 1, map[string]int{"127.0.0.1": 3}, 3},
		{"override lowers", 5, map[string]int{"127.0.0.1": 1}, 1},
		{"override zero refuses all", 5, map[string]int{"127.0.0.1": 0}, 0},
		{"ipv4-mapped override", 1, map[string]int{"::ffff:127.0.0.1": 2}, 2},
		{"override of another address", 2, map[string]int{"10.1.2.3": 0, "::1": 7}, 2},
		{"only overrides", 0, map[string]int{"127.0.0.1": 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{ConnectionLimits: connLimits(t, tc.perIP, tc.overrides)})
			held := make([]*rawConn, tc.want)
			for i := range held {
				held[i] = servedConn(t, env.Addr)
			}
			dialRaw(t, env.Addr).expectClosed()
			assert.Equal(t, 1.0, perIPRefusals(t, env))
			assert.Equal(t, float64(tc.want), env.MetricValue(t, openConns), "a refused connection is never open")
			if tc.want == 0 {
				return
			}
			require.NoError(t, held[0].c.Close())
			waitMetric(t, env, openConns, float64(tc.want-1))
			servedConn(t, env.Addr)
			assert.Equal(t, 1.0, perIPRefusals(t, env))
		})
	}
}

// TestConnectionsPerIPSharedByListeners: one ConnectionLimits counts an
// address's connections over every listener given it, as Kafka's
// broker-wide max.connections.per.ip.
func TestConnectionsPerIPSharedByListeners(t *testing.T) {
	t.Parallel()
	cfg := kafkaproto.Config{ConnectionLimits: connLimits(t, 2, nil)}
	a, b := kafkatest.StartServer(t, cfg), kafkatest.StartServer(t, cfg)
	servedConn(t, a.Addr)
	servedConn(t, b.Addr)
	dialRaw(t, a.Addr).expectClosed()
	dialRaw(t, b.Addr).expectClosed()
	assert.Equal(t, 1.0, perIPRefusals(t, a))
	assert.Equal(t, 1.0, perIPRefusals(t, b))
}

// TestListenerMaxConnections: with MaxConnections open, the listener
// stops accepting (counted once per time it fills up): the next client
// waits in the backlog unanswered, and is served once a connection
// closes.
func TestListenerMaxConnections(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxConnections: 2})
	a := servedConn(t, env.Addr)
	servedConn(t, env.Addr)
	// Serve counts a full listener before it waits for a slot, so from
	// here on it accepts nothing.
	waitMetric(t, env, fullTotal, 1)

	waiting := dialRaw(t, env.Addr) // connected in the kernel's backlog
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	corr := waiting.send(req)
	assert.Equal(t, 2.0, env.MetricValue(t, acceptedConns), "the third connection is not accepted")
	require.NoError(t, waiting.c.SetReadDeadline(time.Now()))
	_, err := waiting.c.Read(make([]byte, 1))
	var ne net.Error
	require.ErrorAs(t, err, &ne, "no answer while the listener is full")
	require.True(t, ne.Timeout(), "no answer while the listener is full: %v", err)

	require.NoError(t, a.c.Close())
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = req.Version
	waiting.recv(corr, resp)
	assert.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, 3.0, env.MetricValue(t, acceptedConns))
	waitMetric(t, env, fullTotal, 2) // full again with the third one
	assert.Zero(t, perIPRefusals(t, env), "a full listener refuses nothing")
}

// TestServeWaitingForSlotEnds: Shutdown and Close end Serve's wait for a
// slot of a full listener at once, although its connection is still busy
// (a produce the sink holds).
func TestServeWaitingForSlotEnds(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"shutdown", "close"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			sink := kafkatest.NewSink()
			sink.Hold()
			reg := prometheus.NewPedanticRegistry()
			srv, err := kafkaproto.New(kafkaproto.Config{MaxConnections: 1},
				kafkatest.Backend{Topics: kafkatest.NewTopics(map[string]int32{kafkatest.Topic: 1}), Sink: sink, ProducerIDs: &kafkatest.ProducerIDs{}},
				kafkaproto.WithRegisterer(reg))
			require.NoError(t, err)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			served := make(chan error, 1)
			go func() { served <- srv.Serve(l) }()

			c := dialRaw(t, l.Addr().String())
			req := produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 1))
			// Longer than the test's context: the connection stays busy
			// until the sink is released.
			req.TimeoutMillis = int32((10 * time.Minute).Milliseconds())
			c.send(req)
			ctx := kafkatest.Context(t)
			require.NoError(t, sink.WaitFor(ctx, func(s *kafkatest.Sink) bool { return s.Held() == 1 }))
			require.Eventually(t, func() bool { return metrictest.Value(t, reg, fullTotal) == 1 }, time.Minute, 5*time.Millisecond)

			stopped := make(chan error, 1)
			go func() {
				if stop == "close" {
					stopped <- srv.Close()
					return
				}
				stopped <- srv.Shutdown(ctx)
			}()
			select {
			case err := <-served:
				require.ErrorIs(t, err, kafkaproto.ErrServerClosed)
			case <-ctx.Done():
				t.Fatal("Serve still waits for a slot after " + stop)
			}
			sink.Release(nil)
			require.NoError(t, <-stopped)
		})
	}
}

// TestConnectionLimitsKgoProduce: a franz-go producer (which opens three
// connections: seed, produce and the rest) works normally within the
// limits.
func TestConnectionLimitsKgoProduce(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxConnections: 4, ConnectionLimits: connLimits(t, 4, nil)})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr))
	require.NoError(t, err)
	defer cl.Close()
	recs := testRecords(50)
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), recs...).FirstErr())
	checkKgoResults(t, env.Sink, recs)
	assert.Zero(t, perIPRefusals(t, env))
	assert.LessOrEqual(t, env.MetricValue(t, openConns), 4.0)
}
