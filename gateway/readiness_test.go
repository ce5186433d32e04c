package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
	"github.com/fluss-kafka/gateway/internal/clocktest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/outage"
	"github.com/fluss-kafka/gateway/produce"
)

func newTestReadiness(clock *clocktest.Clock, h slog.Handler, probe func(context.Context) error) *writeReadiness {
	return newReadiness(probe, 2*time.Second, 10*time.Second,
		outage.New(slog.New(h), "fluss not writable", "fluss writable again", time.Minute, clock.Now), clock.Now)
}

// TestReadinessGrace: not ready until a check passes; a failing check
// keeps the gateway ready for the grace period (a blip), then /readyz
// reports the failure; it is ready again at the next passing check. Each
// change is logged once.
func TestReadinessGrace(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	h := &recordingHandler{}
	coordinatorDown := errors.New("fluss coordinator 10.0.0.1:9123 unreachable: connection refused")
	r := newTestReadiness(clock, h, nil)

	require.ErrorIs(t, r.err(), errNotProbedYet, "not ready before the first check")
	r.observe(coordinatorDown)
	require.ErrorIs(t, r.err(), coordinatorDown, "started while the coordinator is down: not ready, with the reason")
	r.observe(nil)
	require.NoError(t, r.err(), "ready once a server answers")

	clock.Advance(2 * time.Second)
	r.observe(coordinatorDown)
	clock.Advance(8 * time.Second)
	r.observe(coordinatorDown)
	assert.NoError(t, r.err(), "a failure shorter than the grace does not flip readiness")
	clock.Advance(2*time.Second + time.Millisecond)
	r.observe(coordinatorDown)
	err := r.err()
	require.Error(t, err, "the coordinator stayed dead past the grace")
	assert.ErrorIs(t, err, coordinatorDown)
	assert.Contains(t, err.Error(), "failing for 12s")

	for range 30 { // another minute of outage
		clock.Advance(2 * time.Second)
		r.observe(coordinatorDown)
	}
	r.observe(nil)
	assert.NoError(t, r.err())
	assert.Len(t, h.lines(slog.LevelWarn), 3, "state change once, then a summary per minute: %v", h.lines(slog.LevelWarn))
	assert.Len(t, h.lines(slog.LevelInfo), 2, "each recovery once")
}

// TestReadyzReportsWhy: /readyz is 503 with the reason while not ready.
func TestReadyzReportsWhy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	state := errors.New("fluss coordinator 10.0.0.1:9123 unreachable")
	a := newAdminServer(prometheus.NewRegistry(), func() error {
		mu.Lock()
		defer mu.Unlock()
		return state
	}, false, slog.New(slog.DiscardHandler))
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		a.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "coordinator 10.0.0.1:9123 unreachable")
	mu.Lock()
	state = nil
	mu.Unlock()
	code, _ = get()
	assert.Equal(t, http.StatusOK, code)
}

// TestAdminPprofIsOptIn: /debug/pprof/ is served only with admin.pprof.
func TestAdminPprofIsOptIn(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		a := newAdminServer(prometheus.NewRegistry(), func() error { return nil }, on, slog.New(slog.DiscardHandler))
		rec := httptest.NewRecorder()
		a.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/heap?debug=1", nil))
		if on {
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Contains(t, rec.Body.String(), "heap profile")
		} else {
			assert.Equal(t, http.StatusNotFound, rec.Code)
		}
	}
}

// fakeCluster is a clusterProbe whose answers the test sets.
type fakeCluster struct {
	metadataErr error
	servers     []string        // tablet server hosts metadata lists
	down        map[string]bool // addresses that do not answer

	mu      sync.Mutex // guards reached: servers are reached at once
	reached []string
}

// reachedSorted returns the servers reached (at once, so in any order), sorted.
func (f *fakeCluster) reachedSorted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.reached)
	slices.Sort(out)
	return out
}

func (f *fakeCluster) RefreshMetadata(context.Context, ...fluss.TablePath) error {
	return f.metadataErr
}

func (f *fakeCluster) TabletServers(context.Context) ([]fluss.ServerNode, error) {
	out := make([]fluss.ServerNode, len(f.servers))
	for i, h := range f.servers {
		out[i] = fluss.ServerNode{ID: int32(i), Host: h, Port: 9124}
	}
	return out, nil
}

func (f *fakeCluster) Reach(_ context.Context, addr string) error {
	f.mu.Lock()
	f.reached = append(f.reached, addr)
	f.mu.Unlock()
	if f.down[addr] {
		return fluss.ErrConnectionClosed
	}
	return nil
}

// TestFlussProbe: the check fails, naming what, when metadata cannot be
// fetched or no tablet server answers; servers are reached once each. Some
// tablet servers down while another answers leaves the instance ready,
// whatever they lead, and so does a dead coordinator: that affects every
// instance alike, and writes go on.
func TestFlussProbe(t *testing.T) {
	t.Parallel()
	path := fluss.TablePath{Database: "db", Table: "events"}
	spec := mapping.RouteSpec{Topic: "events", Table: path, Value: mapping.ValueSpec{Format: mapping.ValueRaw, Column: "payload"}}
	routes, err := mapping.NewRoutes([]mapping.RouteSpec{spec.WithDefaults()})
	require.NoError(t, err)
	info := &fluss.TableInfo{Path: path, TableID: 7, Descriptor: fluss.TableDescriptor{
		Schema:      fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}},
		BucketCount: 3,
	}}
	bound, err := routes.Bind(map[fluss.TablePath]*fluss.TableInfo{path: info})
	require.NoError(t, err)
	st := &produce.Bound{Routes: bound, Infos: map[fluss.TablePath]*fluss.TableInfo{path: info}}
	healthy := func() *fakeCluster {
		return &fakeCluster{servers: []string{"ts0", "ts1", "ts2"}, down: map[string]bool{}}
	}
	ctx := t.Context()

	c := healthy()
	require.NoError(t, flussProbe(c, func() *produce.Bound { return st })(ctx))
	assert.Equal(t, []string{"ts0:9124", "ts1:9124", "ts2:9124"}, c.reachedSorted(), "each tablet server once")

	c = healthy()
	require.NoError(t, flussProbe(c, func() *produce.Bound { return nil })(ctx), "before routes load, metadata only")
	assert.Empty(t, c.reachedSorted())

	c = healthy()
	c.metadataErr = errors.New("no fluss server reachable")
	assert.ErrorContains(t, flussProbe(c, func() *produce.Bound { return st })(ctx), "fluss metadata: no fluss server reachable")

	c = healthy()
	c.down["ts0:9124"], c.down["ts1:9124"] = true, true
	require.NoError(t, flussProbe(c, func() *produce.Bound { return st })(ctx),
		"servers down (every instance sees them alike; after a few faults they may lead every routed bucket) leave the instance ready while another answers")
	assert.Equal(t, []string{"ts0:9124", "ts1:9124", "ts2:9124"}, c.reachedSorted())

	c = healthy()
	c.down["ts0:9124"], c.down["ts1:9124"], c.down["ts2:9124"] = true, true, true
	err = flussProbe(c, func() *produce.Bound { return st })(ctx)
	assert.ErrorContains(t, err, "no fluss tablet server reachable")
	assert.ErrorContains(t, err, "ts0:9124")
	assert.ErrorContains(t, err, "ts2:9124")

	c = healthy()
	c.servers = nil
	assert.ErrorContains(t, flussProbe(c, func() *produce.Bound { return st })(ctx), "fluss lists no tablet server")
}

// kafkaRoundTrip sends one non-flexible request on nc and decodes its
// response.
func kafkaRoundTrip(t *testing.T, nc net.Conn, corr int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	require.NoError(t, nc.SetDeadline(time.Now().Add(time.Minute)))
	_, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, corr))
	require.NoError(t, err)
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	require.NoError(t, err)
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	require.Equal(t, corr, int32(binary.BigEndian.Uint32(body)))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.NoError(t, resp.ReadFrom(body[4:]))
	return resp
}

// TestStartWhileFlussDown: a gateway started while Fluss cannot be asked
// for its tables answers early Kafka clients at once with retriable errors
// (instead of leaving them unanswered), is not ready, and once Fluss
// answers loads its routes, serves the topic and turns ready.
func TestStartWhileFlussDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	var down atomic.Bool
	down.Store(true)
	cl.Control(func(r *flussfake.Request) (flussfake.Response, bool) {
		if down.Load() && (r.APIKey == flussfake.GetTableInfo || r.APIKey == flussfake.GetMetadata) {
			return flussfake.Response{ErrCode: 10, ErrMsg: "coordinator restarting"}, true // retriable
		}
		return flussfake.Response{}, false
	})
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: '127.0.0.1:0', ready_interval: 20ms, ready_grace: 0s}
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s}
routes: [{topic: events, table: db.t, value: {format: raw, column: payload}}]
`, cl.Bootstrap())))
	require.NoError(t, err)
	h := &recordingHandler{}
	g, err := New(cfg, slog.New(h))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	stop := runGateway(t, ctx, g)

	nc, err := net.Dial("tcp", g.kafkaListeners[0].Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 1
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("events")
	meta.Topics = append(meta.Topics, mt)
	resp := kafkaRoundTrip(t, nc, 1, meta).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, kafkaproto.ErrLeaderNotAvailable.Code, resp.Topics[0].ErrorCode, "an early client is told to retry")
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.Version = 1
	assert.Equal(t, kafkaproto.ErrCoordinatorLoadInProgress.Code, kafkaRoundTrip(t, nc, 2, ipid).(*kmsg.InitProducerIDResponse).ErrorCode)
	readyz := func() (int, string) {
		r, err := http.Get("http://" + g.adminListener.Addr().String() + "/readyz")
		require.NoError(t, err)
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	code, body := readyz()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "not ready")

	// Fluss comes back only once the start-up load has failed at least once
	// (on a busy machine its first attempt may come after the checks above).
	for !slices.Contains(h.lines(slog.LevelWarn), "cannot load routes yet; retrying") {
		select {
		case <-ctx.Done():
			t.Fatal("the start-up load never failed while Fluss was down")
		case <-time.After(20 * time.Millisecond):
		}
	}
	down.Store(false)
	for corr := int32(3); ; corr++ {
		resp = kafkaRoundTrip(t, nc, corr, meta).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("routes never loaded after Fluss came back")
		case <-time.After(20 * time.Millisecond):
		}
	}
	assert.Len(t, resp.Topics[0].Partitions, 1)
	for {
		if code, _ := readyz(); code == http.StatusOK {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("never ready after Fluss came back")
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	assert.Contains(t, h.lines(slog.LevelWarn), "cannot load routes yet; retrying")
	assert.Contains(t, h.lines(slog.LevelInfo), "routes loaded after retries")
}
