package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
	"github.com/fluss-kafka/gateway/internal/clocktest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/outage"
)

// recordingHandler keeps every log record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// lines returns the messages logged at level.
func (h *recordingHandler) lines(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level == level {
			out = append(out, r.Message)
		}
	}
	return out
}

// attr returns the value of key in the i-th record at level.
func (h *recordingHandler) attr(level slog.Level, i int, key string) (slog.Value, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level != level {
			continue
		}
		if n == i {
			var v slog.Value
			found := false
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == key {
					v, found = a.Value, true
					return false
				}
				return true
			})
			return v, found
		}
		n++
	}
	return slog.Value{}, false
}

// attrOf returns the value of key in the first record at level whose
// message is msg.
func (h *recordingHandler) attrOf(level slog.Level, msg, key string) (slog.Value, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Level != level || r.Message != msg {
			continue
		}
		var v slog.Value
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v, found = a.Value, true
				return false
			}
			return true
		})
		return v, found
	}
	return slog.Value{}, false
}

// flakyWriterIDs fails InitWriter while failing is set, counting calls; a
// stuck call (block) waits for its context, as an InitWriter does while
// ZooKeeper is down.
type flakyWriterIDs struct {
	mu      sync.Mutex
	failing bool
	block   bool
	calls   int
	next    int64
}

func (f *flakyWriterIDs) InitWriter(ctx context.Context, _ ...fluss.TablePath) (int64, error) {
	f.mu.Lock()
	f.calls++
	failing, block := f.failing, f.block
	f.next++
	id := f.next
	f.mu.Unlock()
	switch {
	case block:
		<-ctx.Done()
		return 0, ctx.Err()
	case failing:
		return 0, errors.New("init_writer on tablet server 0: fluss error 25 REQUEST_TIME_OUT: zookeeper session lost\n\tat org.apache.fluss.server.ZooKeeperClient.getWriterId(ZooKeeperClient.java:123)\n\tat ...")
	}
	return id, nil
}

func (f *flakyWriterIDs) set(failing bool) {
	f.mu.Lock()
	f.failing = failing
	f.mu.Unlock()
}

func (f *flakyWriterIDs) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// TestProducerIDsBackOffDuringOutage: while InitWriter keeps failing, the
// answers are the retriable COORDINATOR_LOAD_IN_PROGRESS, Fluss is asked
// once per back-off period (growing), not once per request, and the log
// has one line when the outage starts, a summary per interval with a
// count, no stack trace, and one line when it ends.
func TestProducerIDsBackOffDuringOutage(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	h := &recordingHandler{}
	src := &flakyWriterIDs{failing: true}
	outage := outage.New(slog.New(h), "fluss writer ids unavailable", "fluss writer ids available again", 30*time.Second, clock.Now)
	p := newProducerIDs(src, 5*time.Second, 8*time.Second, outage, clock.Now)
	ctx := t.Context()

	// A minute of outage, 100 InitProducerId requests every 100 ms: the
	// retry rate of a few dozen restarting producers.
	const requests = 100
	for step := 0; step < 600; step++ {
		for range requests / 10 {
			_, err := p.InitWriter(ctx)
			require.Error(t, err)
			require.ErrorIs(t, err, kafkaproto.ErrCoordinatorLoadInProgress)
		}
		clock.Advance(100 * time.Millisecond)
	}
	// Back-off 1 s, 2 s, 4 s, then 8 s: 1+1+1+1+ ~(60-7)/8 calls.
	assert.LessOrEqual(t, src.count(), 12, "Fluss is asked once per back-off, not per request")
	assert.GreaterOrEqual(t, src.count(), 5, "Fluss is probed again after each back-off")

	warns := h.lines(slog.LevelWarn)
	assert.Equal(t, "fluss writer ids unavailable", warns[0], "the state change is logged once")
	assert.LessOrEqual(t, len(warns), 3, "then one summary per 30 s: %v", warns)
	assert.GreaterOrEqual(t, len(warns), 2, "the outage is summarised while it lasts")
	n, ok := h.attr(slog.LevelWarn, 1, "failures")
	require.True(t, ok, "the summary counts the failures since the last line")
	assert.Greater(t, n.Int64(), int64(100))
	for i := range warns {
		v, ok := h.attr(slog.LevelWarn, i, "err")
		require.True(t, ok)
		assert.NotContains(t, v.String(), "\n", "no stack trace in the log")
		assert.NotContains(t, v.String(), "ZooKeeperClient.java")
		assert.Contains(t, v.String(), "zookeeper session lost", "the cause is named")
	}
	assert.Empty(t, h.lines(slog.LevelInfo))

	// Fluss recovers: the next probe succeeds, and every request after it
	// asks Fluss again (each producer needs its own id).
	src.set(false)
	clock.Advance(8 * time.Second)
	id1, err := p.InitWriter(ctx)
	require.NoError(t, err)
	id2, err := p.InitWriter(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, id1, id2)
	assert.Equal(t, []string{"fluss writer ids available again"}, h.lines(slog.LevelInfo), "the recovery is logged once")

	// A new outage starts again from the shortest back-off.
	src.set(true)
	before := src.count()
	_, err = p.InitWriter(ctx)
	require.ErrorIs(t, err, kafkaproto.ErrCoordinatorLoadInProgress)
	clock.Advance(time.Second)
	_, err = p.InitWriter(ctx)
	require.Error(t, err)
	assert.Equal(t, before+2, src.count())
}

// TestProducerIDsBoundedWait: an InitWriter that hangs (ZooKeeper down,
// fluss.request_timeout 30 s) is abandoned after the configured wait, and
// the answer is retriable.
func TestProducerIDsBoundedWait(t *testing.T) {
	t.Parallel()
	src := &flakyWriterIDs{block: true}
	h := &recordingHandler{}
	p := newProducerIDs(src, 20*time.Millisecond, time.Second, outage.New(slog.New(h), "fluss writer ids unavailable", "up", 0, nil), nil)
	_, err := p.InitWriter(t.Context())
	require.ErrorIs(t, err, kafkaproto.ErrCoordinatorLoadInProgress)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "did not answer within 20ms")
}

// TestProducerIDsClientGone: a producer that disconnects while its
// InitWriter is in flight does not start an outage.
func TestProducerIDsClientGone(t *testing.T) {
	t.Parallel()
	src := &flakyWriterIDs{block: true}
	h := &recordingHandler{}
	outage := outage.New(slog.New(h), "fluss writer ids unavailable", "up", 0, nil)
	p := newProducerIDs(src, time.Minute, time.Second, outage, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := p.InitWriter(ctx)
	require.Error(t, err)
	assert.False(t, outage.Failing())
	assert.Empty(t, h.lines(slog.LevelWarn))
}

// TestProducerIDsAuthorizationIsFatal: Fluss refusing the gateway's own
// credentials is CLUSTER_AUTHORIZATION_FAILED, which producers report
// instead of retrying for ever.
func TestProducerIDsAuthorizationIsFatal(t *testing.T) {
	t.Parallel()
	src := writerIDsFunc(func(context.Context) (int64, error) {
		return 0, fluss.ErrorForCode(48, "no WRITE permission on db.t")
	})
	p := newProducerIDs(src, time.Second, time.Second, outage.New(slog.New(slog.DiscardHandler), "down", "up", 0, nil), nil)
	_, err := p.InitWriter(t.Context())
	require.ErrorIs(t, err, kafkaproto.ErrClusterAuthorizationFailed)
	assert.True(t, strings.Contains(err.Error(), "no WRITE permission"))
}

type writerIDsFunc func(context.Context) (int64, error)

func (f writerIDsFunc) InitWriter(ctx context.Context, _ ...fluss.TablePath) (int64, error) {
	return f(ctx)
}

// TestInitProducerIDDuringFlussOutage drives the whole path: Kafka
// InitProducerId → kafkaproto → bridge → Fluss InitWriter on a fake
// cluster whose InitWriter fails for a while. Every answer is the
// retriable COORDINATOR_LOAD_IN_PROGRESS, Fluss sees at most one
// InitWriter per elapsed back-off second (not one per request), the log
// has one WARN (and at most one "(still)" summary per 30 s the test has
// run: a busy machine may take that long), and once Fluss answers again
// producers get ids.
func TestInitProducerIDDuringFlussOutage(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	var (
		down        atomic.Bool
		initWriters atomic.Int32
	)
	down.Store(true)
	cl.Control(func(r *flussfake.Request) (flussfake.Response, bool) {
		if r.APIKey != flussfake.InitWriter || !down.Load() {
			return flussfake.Response{}, false
		}
		initWriters.Add(1)
		return flussfake.Response{ErrCode: 25, ErrMsg: "zookeeper unavailable\n\tat org.apache.fluss.server.zk.ZooKeeperClient.getWriterIdAndIncrement(ZooKeeperClient.java:1)"}, true
	})
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: ''}
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s, init_writer_timeout: 2s, init_writer_backoff_max: 4s}
routes: [{topic: events, table: db.t, value: {format: raw, column: payload}}]
`, cl.Bootstrap())))
	require.NoError(t, err)
	h := &recordingHandler{}
	g, err := New(cfg, slog.New(h))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)

	nc, err := net.Dial("tcp", g.kafkaListeners[0].Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	initPID := func(corr int32) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 1
		return kafkaRoundTrip(t, nc, corr, req).(*kmsg.InitProducerIDResponse)
	}
	// Wait until the routes are bound: before, the ready check answers
	// without asking Fluss.
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 1
	for corr := int32(1); kafkaRoundTrip(t, nc, corr, meta) != nil && !g.path.Loaded(); corr++ {
		select {
		case <-ctx.Done():
			t.Fatal("routes never loaded")
		case <-time.After(10 * time.Millisecond):
		}
	}

	start := time.Now()
	const requests = 300
	for i := range requests {
		resp := initPID(int32(1000 + i))
		require.Equal(t, kafkaproto.ErrCoordinatorLoadInProgress.Code, resp.ErrorCode, "request %d", i)
		require.Equal(t, int64(-1), resp.ProducerID)
	}
	elapsed := time.Since(start)
	// One probe per back-off (1 s, 2 s, 4 s, 4 s...) at most, plus the first,
	// counted since the gateway began (on a busy machine loading the routes
	// may take seconds, and Fluss sees every InitWriter since the start).
	bound := int32(2 + time.Since(began)/time.Second)
	assert.LessOrEqual(t, initWriters.Load(), bound, "%d requests in %s, %s since the gateway began", requests, elapsed, time.Since(began))
	assert.GreaterOrEqual(t, initWriters.Load(), int32(1))
	var outageLines, stillLines int
	for _, w := range h.lines(slog.LevelWarn) {
		switch {
		case w == "fluss writer ids unavailable (still)":
			stillLines++
		case strings.HasPrefix(w, "fluss writer ids unavailable"):
			outageLines++
		}
	}
	assert.Equal(t, 1, outageLines, "one WARN for the outage, not one per request")
	assert.LessOrEqual(t, stillLines, int(time.Since(began)/outage.DefaultInterval), "summaries come at most every 30 s")
	v, ok := h.attrOf(slog.LevelWarn, "fluss writer ids unavailable", "err")
	require.True(t, ok)
	assert.NotContains(t, v.String(), "ZooKeeperClient.java", "no stack trace")

	down.Store(false)
	for corr := int32(5000); ; corr++ {
		if resp := initPID(corr); resp.ErrorCode == 0 {
			assert.GreaterOrEqual(t, resp.ProducerID, int64(0))
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no producer id after Fluss recovered")
		case <-time.After(50 * time.Millisecond):
		}
	}
	assert.Contains(t, h.lines(slog.LevelInfo), "fluss writer ids available again")
}
