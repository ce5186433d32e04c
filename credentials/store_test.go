package credentials_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// logBuffer collects JSON log lines from concurrent goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count is how many lines hold every one of parts.
func (b *logBuffer) count(parts ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for line := range strings.Lines(b.buf.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// k8sSecret writes files the way the kubelet updates a Secret mount: the
// data in a fresh directory, then the ..data symlink swapped atomically;
// the file read is a symlink through ..data.
type k8sSecret struct {
	dir string
	n   int
}

func (k *k8sSecret) path() string { return filepath.Join(k.dir, "credentials.yaml") }

func (k *k8sSecret) write(t *testing.T, data []byte) {
	t.Helper()
	k.n++
	ts := filepath.Join(k.dir, "..ts"+strings.Repeat("x", k.n))
	require.NoError(t, os.Mkdir(ts, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(ts, "credentials.yaml"), data, 0o400))
	tmp := filepath.Join(k.dir, "..data_tmp")
	require.NoError(t, os.Symlink(filepath.Base(ts), tmp))
	require.NoError(t, os.Rename(tmp, filepath.Join(k.dir, "..data")))
	if k.n == 1 {
		require.NoError(t, os.Symlink(filepath.Join("..data", "credentials.yaml"), k.path()))
	}
}

func fileOf(t *testing.T, password string) []byte {
	t.Helper()
	e, err := credentials.MakeEntry(credentials.Mechanisms(), []byte(password), 4096)
	require.NoError(t, err)
	data, err := credentials.Add(nil, "alice", e)
	require.NoError(t, err)
	return data
}

// login connects with mech and produces one record; the client stays
// open until the test ends.
func login(t *testing.T, addr string, mech sasl.Mechanism) (*kgo.Client, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0), kgo.RecordRetries(0))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl, produce(t, cl)
}

func produce(t *testing.T, cl *kgo.Client) error {
	return cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: kafkatest.Topic, Value: []byte("x")}).FirstErr()
}

// TestRotationWithoutRestart: a real client logs in with every mechanism
// from the file; the Secret is updated (password rotated) and, without a
// restart, the new password is accepted and the old one refused with
// SASL_AUTHENTICATION_FAILED and a log line, while connections made
// before keep producing; a malformed update keeps the credentials in force
// and is logged at ERROR.
func TestRotationWithoutRestart(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	secret := &k8sSecret{dir: t.TempDir()}
	secret.write(t, fileOf(t, "old"))
	var mu sync.Mutex
	results := map[bool]int{}
	store, err := credentials.Open(secret.path(), logs.logger(), func(ok bool) {
		mu.Lock()
		defer mu.Unlock()
		results[ok]++
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go store.Watch(ctx, 10*time.Millisecond)
	env := kafkatest.StartServer(t, kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Credentials: store}},
		kafkaproto.WithLogger(logs.logger()))

	mechanisms := kafkatest.SASLMechanisms("alice")
	before := map[string]*kgo.Client{}
	for name, mech := range mechanisms {
		cl, err := login(t, env.Addr, mech("old"))
		require.NoError(t, err, name)
		before[name] = cl
	}

	secret.write(t, fileOf(t, "new"))
	for name, mech := range mechanisms {
		t.Run(name, func(t *testing.T) {
			require.Eventually(t, func() bool {
				_, err := login(t, env.Addr, mech("new"))
				return err == nil
			}, 10*time.Second, 20*time.Millisecond, "the rotated password is never accepted")
			_, err := login(t, env.Addr, mech("old"))
			require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
			require.NoError(t, produce(t, before[name]), "a connection authenticated before the rotation")
		})
	}
	assert.Positive(t, logs.count(`"msg":"sasl authentication failed"`, `"user":"alice"`))
	assert.Positive(t, env.MetricValue(t, "fluss_gateway_kafka_sasl_failures_total"))

	secret.write(t, []byte("users: {alice: {password: plain-text}}\n"))
	require.Eventually(t, func() bool {
		return logs.count(`"level":"ERROR"`, `"msg":"sasl credentials file refused; keeping the credentials in force"`, "field password not found") == 1
	}, 10*time.Second, 10*time.Millisecond)
	_, err = login(t, env.Addr, mechanisms["SCRAM-SHA-256"]("new"))
	require.NoError(t, err, "the credentials in force stay after a malformed update")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[bool]int{true: 1, false: 1}, results, "each changed content counted once")
	assert.Equal(t, 1, logs.count("sasl credentials reloaded"))
}

func TestOpenRefusesBadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := credentials.Open(filepath.Join(dir, "missing.yaml"), slog.New(slog.DiscardHandler), nil)
	assert.ErrorContains(t, err, "read credentials")
	path := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("users: {alice: {password: x}}"), 0o600))
	_, err = credentials.Open(path, slog.New(slog.DiscardHandler), nil)
	assert.ErrorContains(t, err, "field password not found")
}
