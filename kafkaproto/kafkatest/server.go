package kafkatest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Topic is the 3-partition topic of a [StartServer] server; it also serves
// "other", with one partition.
const Topic = "events"

// AllCodecs lists every record batch codec.
var AllCodecs = []kafkaproto.Codec{kafkaproto.CodecNone, kafkaproto.CodecGzip, kafkaproto.CodecSnappy, kafkaproto.CodecLZ4, kafkaproto.CodecZstd}

// Env is a kafkaproto.Server on 127.0.0.1:0 with the in-memory fakes
// behind it.
type Env struct {
	Srv    *kafkaproto.Server
	Addr   string // host:port it listens on
	Sink   *Sink
	Topics *Topics
	PIDs   *ProducerIDs
	ACL    *ACL                 // the backend's authorizer; allows everything until Set
	Reg    *prometheus.Registry // the server's metrics (a pedantic registry)
	// Txns is the in-memory transaction coordinator (StartTxnServer
	// only); committed batches land in Sink.
	Txns *Transactions
}

// StartServer serves cfg on 127.0.0.1:0 over a fresh Sink, ProducerIDs, ACL
// and Topics holding [Topic] (3 partitions) and "other" (1), with its metrics in
// a pedantic registry; opts come after the registry and the logger (debug
// logs on stderr when env KAFKAPROTO_TEST_LOG is set). The server is shut
// down at cleanup, and must end cleanly.
func StartServer(tb testing.TB, cfg kafkaproto.Config, opts ...kafkaproto.Option) *Env {
	tb.Helper()
	env := newEnv()
	return env.serve(tb, cfg, Backend{Topics: env.Topics, Sink: env.Sink, ProducerIDs: env.PIDs, Authorizer: env.ACL}, opts)
}

// StartTxnServer is StartServer with transactions served by an in-memory
// coordinator (Env.Txns) in front of the Sink.
func StartTxnServer(tb testing.TB, cfg kafkaproto.Config, opts ...kafkaproto.Option) *Env {
	tb.Helper()
	env := newEnv()
	env.Txns = NewTransactions(env.Sink)
	return env.serve(tb, cfg, TxnBackend{Topics: env.Topics, ProducerIDs: env.PIDs, Transactions: env.Txns, Authorizer: env.ACL}, opts)
}

func newEnv() *Env {
	return &Env{
		Sink:   NewSink(),
		Topics: NewTopics(map[string]int32{Topic: 3, "other": 1}),
		PIDs:   &ProducerIDs{},
		ACL:    &ACL{},
		Reg:    prometheus.NewPedanticRegistry(),
	}
}

func (env *Env) serve(tb testing.TB, cfg kafkaproto.Config, b kafkaproto.Backend, opts []kafkaproto.Option) *Env {
	tb.Helper()
	srv, err := kafkaproto.New(cfg, b, append([]kafkaproto.Option{
		kafkaproto.WithRegisterer(env.Reg), kafkaproto.WithLogger(testLogger())}, opts...)...)
	require.NoError(tb, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	env.Srv, env.Addr = srv, l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, kafkaproto.ErrServerClosed) {
			tb.Errorf("serve returned %v", err)
		}
	})
	return env
}

func testLogger() *slog.Logger {
	if os.Getenv("KAFKAPROTO_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Context is the test's context, ending after 2 minutes: a bound for a hung test, not a speed assertion.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// WaitRecords waits until the sink holds n records in total, and requires
// exactly n.
func (env *Env) WaitRecords(tb testing.TB, n int) {
	tb.Helper()
	require.NoError(tb, env.Sink.WaitFor(Context(tb), func(s *Sink) bool { return s.TotalRecords() >= n }))
	require.Equal(tb, n, env.Sink.TotalRecords())
}

// MetricValue sums every series of a gathered counter or gauge; the metric
// must exist.
func (env *Env) MetricValue(tb testing.TB, name string) float64 {
	tb.Helper()
	mfs, err := env.Reg.Gather()
	require.NoError(tb, err)
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
	tb.Fatalf("metric %s not found", name)
	return 0
}

// SASLConfig is a Config with SASL users alice (password s3cret) and
// "bob,=x" (password pw), a name SCRAM must escape.
func SASLConfig() kafkaproto.Config {
	return kafkaproto.Config{SASL: &kafkaproto.SASLConfig{
		Users: []kafkaproto.SASLUser{{Name: "alice", Password: "s3cret"}, {Name: "bob,=x", Password: "pw"}},
	}}
}

// SASLMechanisms are franz-go's client mechanisms for user, by mechanism
// name, each for a password.
func SASLMechanisms(user string) map[string]func(password string) sasl.Mechanism {
	return map[string]func(string) sasl.Mechanism{
		kafkaproto.MechanismPlain:       func(p string) sasl.Mechanism { return plain.Auth{User: user, Pass: p}.AsMechanism() },
		kafkaproto.MechanismSCRAMSHA256: func(p string) sasl.Mechanism { return scram.Auth{User: user, Pass: p}.AsSha256Mechanism() },
		kafkaproto.MechanismSCRAMSHA512: func(p string) sasl.Mechanism { return scram.Auth{User: user, Pass: p}.AsSha512Mechanism() },
	}
}

// RequireKcat returns kcat's path. Without kcat the test skips on a
// developer machine but fails in CI (env CI set), which installs it
// (.ci/run).
func RequireKcat(tb testing.TB) string {
	tb.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("kcat not installed (apt-get install kcat)")
		}
		tb.Skip("kcat not installed (apt-get install kcat)")
	}
	return kcat
}
