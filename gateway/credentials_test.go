package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/internal/metrictest"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// writeAtomically replaces path's content in one rename, as editors and
// the kubelet do.
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func credentialsFileOf(t *testing.T, password string) []byte {
	t.Helper()
	e, err := credentials.MakeEntry(credentials.Mechanisms(), []byte(password), 4096)
	require.NoError(t, err)
	data, err := credentials.Add(nil, "alice", e)
	require.NoError(t, err)
	return data
}

// TestCredentialsFileRotation: a listener's users come from its
// credentials file; real clients log in with SCRAM-SHA-256, SCRAM-SHA-512
// and PLAIN; the file is rewritten with a new password and, without a
// restart, the watcher applies it: the new password is accepted, the old
// refused with SASL_AUTHENTICATION_FAILED. A malformed file applied by a
// reload keeps the credentials in force, logged at ERROR and counted.
func TestCredentialsFileRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	dir := t.TempDir()
	credPath := filepath.Join(dir, "credentials.yaml")
	writeAtomically(t, credPath, credentialsFileOf(t, "old"))
	cfgPath := filepath.Join(dir, "gateway.yaml")
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, `
listeners:
  - {name: a, bind: '127.0.0.1:0', sasl: {mechanisms: [PLAIN, SCRAM-SHA-256, SCRAM-SHA-512], credentials_file: '%s'}}
  - {name: b, bind: '127.0.0.2:0', sasl: {credentials_file: '%s'}}
admin: {address: ''}
fluss: {bootstrap: ['%s']}
routes: [{topic: events, table: db.t, value: {format: raw, column: payload}}]
`, credPath, credPath, cl.Bootstrap()), 0o600))
	cfg, err := configs.Load(cfgPath)
	require.NoError(t, err)
	logs := &recordingHandler{}
	g, err := New(cfg, slog.New(logs))
	require.NoError(t, err)
	require.Len(t, g.credentials, 1, "listeners share a file's store")
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)
	addr := g.kafkaListeners[0].Addr().String()

	mechs := kafkatest.SASLMechanisms("alice")
	produce := func(mech sasl.Mechanism) error {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0), kgo.RecordRetries(0))
		require.NoError(t, err)
		defer c.Close()
		return c.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("x")}).FirstErr()
	}
	for name, mech := range mechs {
		require.NoError(t, produce(mech("old")), name)
	}

	writeAtomically(t, credPath, credentialsFileOf(t, "new"))
	require.Eventually(t, func() bool { return produce(mechs["SCRAM-SHA-256"]("new")) == nil },
		time.Minute, 50*time.Millisecond, "the watcher never applied the rotated file")
	for name, mech := range mechs {
		require.NoError(t, produce(mech("new")), name)
		require.ErrorIs(t, produce(mech("old")), kerr.SaslAuthenticationFailed, name)
	}
	assert.Equal(t, 1.0, metrictest.Value(t, g.reg, "fluss_gateway_sasl_credentials_reloads_total", "result", "success"))

	writeAtomically(t, credPath, []byte("users: {alice: {PLAIN: {hash: new}}}\n"))
	require.True(t, g.Reload(ctx, cfgPath), "the configuration itself reloads")
	assert.Contains(t, logs.lines(slog.LevelError), "sasl credentials file refused; keeping the credentials in force")
	assert.Equal(t, 1.0, metrictest.Value(t, g.reg, "fluss_gateway_sasl_credentials_reloads_total", "result", "failure"))
	for name, mech := range mechs {
		require.NoError(t, produce(mech("new")), "%s: the credentials in force stay", name)
	}
	assert.NotContains(t, logs.lines(slog.LevelWarn), plainTextUsersWarning, "no plain-text users, no warning")
}

const plainTextUsersWarning = "plain-text SASL passwords in the configuration file; move the users to a credentials file (gateway credentials add)"

// TestPlainTextUsersWarn: users with plain-text passwords in the
// configuration file still work, with a WARN naming the key at start and
// at each reload.
func TestPlainTextUsersWarn(t *testing.T) {
	cl := rawTablesCluster(t, 1, "t")
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, `
listeners: [{name: a, bind: '127.0.0.1:0', sasl: {users: [{username: alice, password: pw}]}}]
admin: {address: ''}
fluss: {bootstrap: ['%s']}
routes: [{topic: events, table: db.t, value: {format: raw, column: payload}}]
`, cl.Bootstrap()), 0o600))
	cfg, err := configs.Load(cfgPath)
	require.NoError(t, err)
	logs := &recordingHandler{}
	g, err := New(cfg, slog.New(logs))
	require.NoError(t, err)
	t.Cleanup(func() { g.client.Close() })
	key, ok := logs.attrOf(slog.LevelWarn, plainTextUsersWarning, "key")
	require.True(t, ok, "warned at start: %v", logs.lines(slog.LevelWarn))
	assert.Equal(t, "listeners[0].sasl.users", key.String())
	g.Reload(t.Context(), cfgPath)
	warned := 0
	for _, l := range logs.lines(slog.LevelWarn) {
		if l == plainTextUsersWarning {
			warned++
		}
	}
	assert.Equal(t, 2, warned, "warned again at the reload")
}
