package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// logSignal closes ch when a record whose message contains substr is logged.
type logSignal struct {
	substr string
	once   *sync.Once
	ch     chan struct{}
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

func routeConfig(bootstrap, topic, table string) string {
	return fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s}
routes:
  - topic: %s
    table: %s
    value: {format: raw, column: payload}
`, bootstrap, topic, table)
}

// TestReloadDuringStartupIsKept: a reload (SIGHUP or file change) that
// succeeds while the start-up load is still retrying is not undone by the
// start-up load's next attempt with the old configuration.
func TestReloadDuringStartupIsKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "old_t", "new_t")
	var failing atomic.Bool
	failing.Store(true)
	cl.Control(func(r *flussfake.Request) (flussfake.Response, bool) {
		if r.APIKey == flussfake.GetTableInfo && failing.Load() {
			return flussfake.Response{ErrCode: 10, ErrMsg: "not yet"}, true // retriable
		}
		return flussfake.Response{}, false
	})

	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(routeConfig(cl.Bootstrap(), "old", "db.old_t")), 0o600))
	cfg, err := configs.Load(path)
	require.NoError(t, err)
	retrying := logSignal{substr: "cannot load routes yet", once: &sync.Once{}, ch: make(chan struct{})}
	g, err := New(cfg, slog.New(retrying))
	require.NoError(t, err)
	defer g.client.Close()

	loaded := make(chan error, 1)
	go func() { loaded <- g.load(ctx) }()
	select {
	case <-retrying.ch:
	case err := <-loaded:
		t.Fatalf("start-up load did not retry: %v", err)
	case <-ctx.Done():
		t.Fatal("start-up load did not retry")
	}
	failing.Store(false)
	require.NoError(t, os.WriteFile(path, []byte(routeConfig(cl.Bootstrap(), "new", "db.new_t")), 0o600))
	require.True(t, g.Reload(ctx, path))
	require.NoError(t, <-loaded)

	_, ok := g.path.Topic("new")
	assert.True(t, ok, "the reloaded route is served")
	_, ok = g.path.Topic("old")
	assert.False(t, ok, "the start-up configuration did not come back")
	g.health.check(ctx) // as Run's readiness loop does
	assert.NoError(t, g.ready())
}

// TestLoadRetriesTransientTableInfoErrors: a retriable Fluss error while
// fetching a route's table at start-up is retried, not reported as a
// missing table (which stops the gateway).
func TestLoadRetriesTransientTableInfoErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 2, "t")
	var failures atomic.Int32
	cl.Control(func(r *flussfake.Request) (flussfake.Response, bool) {
		if r.APIKey == flussfake.GetTableInfo && failures.Add(1) == 1 {
			return flussfake.Response{ErrCode: 10, ErrMsg: "storage not ready"}, true // retriable
		}
		return flussfake.Response{}, false
	})
	cfg, err := configs.Parse([]byte(routeConfig(cl.Bootstrap(), "events", "db.t")))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer g.client.Close()
	require.NoError(t, g.load(ctx))
	n, ok := g.path.Topic("events")
	assert.True(t, ok)
	assert.Equal(t, int32(2), n)
	assert.GreaterOrEqual(t, failures.Load(), int32(2))
}

// TestReloadWhileStoppingKeepsNotReady: a reload that completes after
// shutdown began (SIGHUP or a file change racing SIGTERM) must not report
// the gateway ready again while it drains.
func TestReloadWhileStoppingKeepsNotReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(routeConfig(cl.Bootstrap(), "events", "db.t")), 0o600))
	cfg, err := configs.Load(path)
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer g.client.Close()
	require.NoError(t, g.load(ctx))
	g.health.check(ctx) // as Run's readiness loop does
	require.NoError(t, g.ready())

	g.setLoadErr(errShuttingDown) // as Run does on SIGTERM
	g.Reload(ctx, path)
	assert.Error(t, g.ready(), "not ready while shutting down")
}

// TestReloadSeesRecreatedTable: a reload reads the tables afresh, so a table
// dropped and created again (new id, other bucket count) is bound anew
// instead of the client's cached description.
func TestReloadSeesRecreatedTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl, err := flussfake.NewCluster()
	require.NoError(t, err)
	defer cl.Close()
	tpath := fluss.TablePath{Database: "db", Table: "t"}
	desc := fluss.TableDescriptor{Schema: fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}}, BucketCount: 1}
	oldID, err := cl.AddTable(tpath, desc)
	require.NoError(t, err)

	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(routeConfig(cl.Bootstrap(), "events", "db.t")), 0o600))
	cfg, err := configs.Load(path)
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer g.client.Close()
	require.NoError(t, g.load(ctx))
	n, ok := g.path.Topic("events")
	require.True(t, ok)
	require.Equal(t, int32(1), n)

	cl.DropTable(tpath)
	desc.BucketCount = 3
	newID, err := cl.AddTable(tpath, desc)
	require.NoError(t, err)
	require.NotEqual(t, oldID, newID)

	require.True(t, g.Reload(ctx, path))
	n, ok = g.path.Topic("events")
	require.True(t, ok)
	assert.Equal(t, int32(3), n, "the re-created table's bucket count")
	assert.Equal(t, newID, g.path.Current().Infos[tpath].TableID)
}

// loadedGateway is a gateway built from the file at path, with its routes
// loaded and its logs recorded; not listening.
func loadedGateway(t *testing.T, ctx context.Context, path string) (*Gateway, *recordingHandler) {
	t.Helper()
	cfg, err := configs.Load(path)
	require.NoError(t, err)
	h := &recordingHandler{}
	g, err := New(cfg, slog.New(h))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.client.Close() })
	require.NoError(t, g.load(ctx))
	return g, h
}

// reloadableFile is the path of a config file over a fake cluster holding
// table db.t, and write, which rewrites it with one route of topic events
// to table and extra YAML after it; ctx bounds the test.
func reloadableFile(t *testing.T) (context.Context, string, func(table, extra string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cl := rawTablesCluster(t, 1, "t")
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	write := func(table, extra string) {
		require.NoError(t, os.WriteFile(path, []byte(routeConfig(cl.Bootstrap(), "events", table)+extra), 0o600))
	}
	return ctx, path, write
}

// TestReloadSwapsACLs: the ACLs are reloaded with the routes; a reload
// refused for its routes keeps the old ACLs too, and an ACL change alone
// is not a "needs a restart" setting.
func TestReloadSwapsACLs(t *testing.T) {
	ctx, path, write := reloadableFile(t)
	write("db.t", "acls: [{principal: 'User:alice', operation: Write, topic: events}]\n")
	g, h := loadedGateway(t, ctx, path)
	assert.Contains(t, h.lines(slog.LevelWarn), durabilityMessage, "start-up warns: the fake's table states no replication factor")
	b := backend{g.path, g.txn, g.acls}
	require.True(t, b.Authorize("User:alice", kafkaproto.OpWrite, "events"))
	require.False(t, b.Authorize("User:bob", kafkaproto.OpWrite, "events"))

	write("db.t", "acls: [{principal: 'User:bob', operation: Write, topic: events}]\n")
	require.True(t, g.Reload(ctx, path))
	assert.True(t, b.Authorize("User:bob", kafkaproto.OpWrite, "events"), "the new ACLs apply")
	assert.False(t, b.Authorize("User:alice", kafkaproto.OpWrite, "events"))
	for _, w := range h.lines(slog.LevelWarn) {
		assert.NotContains(t, w, "after a restart", "an ACL change needs no restart")
	}

	write("db.missing", "")
	require.False(t, g.Reload(ctx, path), "routes to a missing table are refused")
	assert.True(t, b.Authorize("User:bob", kafkaproto.OpWrite, "events"), "a refused reload keeps the old ACLs")
	assert.False(t, b.Authorize("User:carol", kafkaproto.OpWrite, "events"))

	write("db.t", "")
	require.True(t, g.Reload(ctx, path))
	assert.True(t, b.Authorize("User:carol", kafkaproto.OpWrite, "events"), "no ACLs: allow all again")
}

// TestReloadSwapsQuotas: kafka.quotas are reloaded with the routes and
// take effect on the next request; a quota change alone is not a "needs a
// restart" setting, and a reload refused for its routes keeps the old
// quotas.
func TestReloadSwapsQuotas(t *testing.T) {
	ctx, path, write := reloadableFile(t)
	write("db.t", "")
	g, h := loadedGateway(t, ctx, path)
	require.Zero(t, g.quotas.RecordProduce("User:alice", "c", 10<<20), "no quota at first")

	write("db.t", "kafka: {quotas: {principals: {'User:alice': {producer_byte_rate: 1000}}}}\n")
	require.True(t, g.Reload(ctx, path))
	assert.Equal(t, int64(1000), g.quotas.Limit("User:alice", "c"))
	assert.Positive(t, g.quotas.RecordProduce("User:alice", "c", 1<<20), "the new quota throttles at once")
	assert.Zero(t, g.quotas.RecordProduce("User:bob", "c", 1<<20), "bob has none")
	for _, w := range h.lines(slog.LevelWarn) {
		assert.NotContains(t, w, "after a restart", "a quota change needs no restart")
	}

	write("db.missing", "kafka: {quotas: {producer_byte_rate: 5}}\n")
	require.False(t, g.Reload(ctx, path), "routes to a missing table are refused")
	assert.Equal(t, int64(1000), g.quotas.Limit("User:alice", "c"), "a refused reload keeps the old quotas")
	assert.Zero(t, g.quotas.Limit("User:bob", "c"))

	write("db.t", "kafka: {quotas: {producer_byte_rate: 5}}\n")
	require.True(t, g.Reload(ctx, path))
	assert.Equal(t, int64(5), g.quotas.Limit("User:bob", "c"), "the default applies to every pair")
	assert.Equal(t, int64(5), g.quotas.Limit("User:alice", "c"), "alice's override is gone")
}
