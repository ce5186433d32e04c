package fluss

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// testServer is a tiny Fluss-speaking TCP server for connection tests. It
// answers ApiVersions itself (listing every API this client knows, minus
// unlisted) and hands every other request to handle, called from the
// connection's read loop in arrival order.
type testServer struct {
	t        *testing.T
	ln       net.Listener
	handle   func(sc *testServerConn, req frame.Request)
	unlisted map[int16]bool

	mu      sync.Mutex // guards conns
	conns   []*testServerConn
	wg      sync.WaitGroup
	accepts chan struct{} // one value per accepted connection
}

type testServerConn struct {
	t  *testing.T
	nc net.Conn
	mu sync.Mutex // serializes writes
}

func newTestServer(t *testing.T, handle func(sc *testServerConn, req frame.Request)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &testServer{t: t, ln: ln, handle: handle, unlisted: map[int16]bool{}, accepts: make(chan struct{}, 16)}
	s.wg.Add(1)
	go s.acceptLoop()
	t.Cleanup(s.close)
	return s
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func (s *testServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *testServer) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		sc := &testServerConn{t: s.t, nc: nc}
		s.mu.Lock()
		s.conns = append(s.conns, sc)
		s.mu.Unlock()
		s.accepts <- struct{}{}
		s.wg.Add(1)
		go s.serve(sc)
	}
}

func (s *testServer) serve(sc *testServerConn) {
	defer s.wg.Done()
	defer sc.nc.Close()
	for {
		body, err := frame.ReadFrame(sc.nc, 0)
		if err != nil {
			return
		}
		req, err := frame.ParseRequest(body)
		if err != nil {
			return
		}
		if req.APIKey == apiVersions {
			resp := &pb.ApiVersionsResponse{ServerType: proto.Int32(serverTypeTabletServer)}
			for key, v := range clientVersions {
				if !s.unlisted[key] {
					resp.ApiVersions = append(resp.ApiVersions, &pb.PbApiVersion{
						ApiKey: proto.Int32(int32(key)), MinVersion: proto.Int32(0), MaxVersion: proto.Int32(int32(v[1]) + 1),
					})
				}
			}
			sc.reply(frame.SuccessResponse, req.RequestID, resp)
			continue
		}
		s.handle(sc, req)
	}
}

func (sc *testServerConn) reply(typ frame.ResponseType, id int32, msg proto.Message) {
	buf, err := frame.AppendResponseMessage(nil, typ, id, msg)
	if err != nil {
		sc.t.Errorf("test server: %v", err)
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	_, _ = sc.nc.Write(buf)
}

// echoListTables answers LIST_TABLES with the requested database name as the
// only table name, so a caller can tell its response from another's.
func echoListTables(sc *testServerConn, req frame.Request) {
	var in pb.ListTablesRequest
	if err := proto.Unmarshal(req.Payload, &in); err != nil {
		sc.t.Errorf("test server: %v", err)
		return
	}
	sc.reply(frame.SuccessResponse, req.RequestID, &pb.ListTablesResponse{TableName: []string{in.GetDatabaseName()}})
}

func newTestClient(t *testing.T, addr string, cfg Config) *Client {
	t.Helper()
	cfg.Bootstrap = []string{addr}
	c, err := NewClient(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func listTables(ctx context.Context, cn *conn, db string, timeout time.Duration) ([]string, error) {
	var resp pb.ListTablesResponse
	err := cn.call(ctx, apiListTables, &pb.ListTablesRequest{DatabaseName: proto.String(db)}, &resp, timeout)
	return resp.GetTableName(), err
}

func TestConnNegotiatesVersions(t *testing.T) {
	srv := newTestServer(t, echoListTables)
	srv.unlisted[apiCreateTable] = true
	c := newTestClient(t, srv.addr(), Config{})
	ctx := t.Context()
	cn, err := c.connTo(ctx, srv.addr())
	require.NoError(t, err)

	assert.Equal(t, serverTypeTabletServer, cn.serverType)
	// The server offers max+1 of every API: we use our own maximum.
	for key, v := range clientVersions {
		if key == apiCreateTable {
			continue
		}
		got, err := cn.version(key)
		require.NoError(t, err, "api %d", key)
		assert.Equal(t, v[1], got, "api %d", key)
	}
	// An API the server does not list is refused without sending it.
	err = cn.call(ctx, apiCreateTable, &pb.CreateTableRequest{}, &pb.CreateTableResponse{}, 0)
	require.ErrorIs(t, err, ErrAPINotSupported)

	names, err := listTables(ctx, cn, "db1", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"db1"}, names)
}

func TestNegotiate(t *testing.T) {
	v := func(key int16, lo, hi int32) *pb.PbApiVersion {
		return &pb.PbApiVersion{ApiKey: proto.Int32(int32(key)), MinVersion: proto.Int32(lo), MaxVersion: proto.Int32(hi)}
	}
	got := negotiate([]*pb.PbApiVersion{
		v(apiPutKv, 0, 1),      // 0.9.1 server: we use 1
		v(apiLookup, 0, 5),     // newer server: our max 1
		v(apiProduceLog, 2, 3), // server dropped v0 and v1: no overlap
		v(9999, 0, 0),          // unknown to us: ignored
		v(apiFetchLog, 0, 0),   // plain
		{ApiKey: proto.Int32(70000), MinVersion: proto.Int32(0), MaxVersion: proto.Int32(0)}, // out of int16 range
	})
	assert.Equal(t, map[int16]int16{apiPutKv: 1, apiLookup: 1, apiFetchLog: 0}, got)

	// Fluss 1.0 wire: the 1.0.0 ranges give the routing versions
	got = negotiate([]*pb.PbApiVersion{v(apiProduceLog, 0, 1), v(apiPutKv, 0, 3), v(apiLookup, 0, 1)})
	assert.Equal(t, map[int16]int16{apiProduceLog: 1, apiPutKv: 3, apiLookup: 1}, got)
	// a server newer than 1.0 still gets the versions this client knows
	got = negotiate([]*pb.PbApiVersion{v(apiProduceLog, 0, 4), v(apiPutKv, 0, 9)})
	assert.Equal(t, map[int16]int16{apiProduceLog: produceLogRoutingVersion, apiPutKv: putKvRoutingVersion}, got)
}

func TestConnPipelinesAndMatchesOutOfOrderResponses(t *testing.T) {
	const n = 8
	held := make(chan frame.Request, n)
	var heldConn *testServerConn
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		// Hold every request until all n arrived, then answer in reverse.
		heldConn = sc
		held <- req
		if len(held) < n {
			return
		}
		reqs := make([]frame.Request, 0, n)
		for range n {
			reqs = append(reqs, <-held)
		}
		for i := len(reqs) - 1; i >= 0; i-- {
			echoListTables(heldConn, reqs[i])
		}
	})
	c := newTestClient(t, srv.addr(), Config{})
	ctx := t.Context()
	cn, err := c.connTo(ctx, srv.addr())
	require.NoError(t, err)

	type result struct {
		db    string
		names []string
		err   error
	}
	results := make(chan result, n)
	for i := range n {
		db := string(rune('a' + i))
		go func() {
			names, err := listTables(ctx, cn, db, 0)
			results <- result{db, names, err}
		}()
	}
	for range n {
		r := <-results
		require.NoError(t, r.err)
		assert.Equal(t, []string{r.db}, r.names)
	}
	// All went over the one connection.
	assert.Len(t, srv.accepts, 1)
}

func TestConnRequestDeadlineLeavesConnectionUsable(t *testing.T) {
	dropped := make(chan frame.Request, 1)
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		var in pb.ListTablesRequest
		require.NoError(t, proto.Unmarshal(req.Payload, &in))
		if in.GetDatabaseName() == "never" {
			dropped <- req // like a Fluss server given an API it does not serve
			return
		}
		if in.GetDatabaseName() == "late" {
			// answer the abandoned request now: the client must discard it
			echoListTables(sc, <-dropped)
		}
		echoListTables(sc, req)
	})
	c := newTestClient(t, srv.addr(), Config{})
	ctx := t.Context()
	cn, err := c.connTo(ctx, srv.addr())
	require.NoError(t, err)

	start := time.Now()
	_, err = listTables(ctx, cn, "never", 100*time.Millisecond)
	require.ErrorIs(t, err, ErrRequestTimeout)
	assert.True(t, IsRetriable(err))
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)

	names, err := listTables(ctx, cn, "late", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"late"}, names)
	assert.True(t, cn.alive())

	cn.mu.Lock()
	assert.Empty(t, cn.pending)
	cn.mu.Unlock()
}

func TestConnContextCancel(t *testing.T) {
	got := make(chan struct{}, 1)
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) { got <- struct{}{} })
	c := newTestClient(t, srv.addr(), Config{})
	cn, err := c.connTo(t.Context(), srv.addr())
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := listTables(ctx, cn, "x", time.Hour)
		errc <- err
	}()
	<-got
	cancel()
	err = <-errc
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, IsRetriable(err))
}

func TestConnErrorResponseIsTypedError(t *testing.T) {
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		sc.reply(frame.ErrorResponse, req.RequestID, &pb.ErrorResponse{
			ErrorCode: proto.Int32(12), ErrorMessage: proto.String("not the leader"),
		})
	})
	c := newTestClient(t, srv.addr(), Config{})
	cn, err := c.connTo(t.Context(), srv.addr())
	require.NoError(t, err)

	_, err = listTables(t.Context(), cn, "x", 0)
	require.ErrorIs(t, err, ErrNotLeaderOrFollower)
	var fe *Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "not the leader", fe.Message)
	assert.True(t, IsRetriable(err))
	assert.True(t, NeedsMetadataRefresh(err))
	assert.True(t, cn.alive(), "an error response does not end the connection")
}

func TestConnServerFailureFailsInFlightAndReconnects(t *testing.T) {
	const n = 3
	var mu sync.Mutex
	var seen []frame.Request
	failNow := true
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !failNow {
			echoListTables(sc, req)
			return
		}
		seen = append(seen, req)
		if len(seen) == n {
			failNow = false
			sc.reply(frame.ServerFailure, 0, &pb.ErrorResponse{ErrorCode: proto.Int32(-1), ErrorMessage: proto.String("boom")})
			_ = sc.nc.Close()
		}
	})
	c := newTestClient(t, srv.addr(), Config{})
	ctx := t.Context()
	cn, err := c.connTo(ctx, srv.addr())
	require.NoError(t, err)

	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := listTables(ctx, cn, "x", 0)
			errs <- err
		}()
	}
	for range n {
		err := <-errs
		require.ErrorIs(t, err, ErrConnectionClosed)
		require.ErrorIs(t, err, ErrUnknownServerError)
		assert.Contains(t, err.Error(), "boom")
	}
	<-cn.done
	assert.False(t, cn.alive())

	// The pool replaces the dead connection.
	cn2, err := c.connTo(ctx, srv.addr())
	require.NoError(t, err)
	require.NotSame(t, cn, cn2)
	names, err := listTables(ctx, cn2, "again", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"again"}, names)
}

func TestClientCloseFailsInFlight(t *testing.T) {
	got := make(chan struct{}, 1)
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) { got <- struct{}{} })
	c, err := NewClient(Config{Bootstrap: []string{srv.addr()}})
	require.NoError(t, err)
	cn, err := c.connTo(t.Context(), srv.addr())
	require.NoError(t, err)

	errc := make(chan error, 1)
	go func() {
		_, err := listTables(t.Context(), cn, "x", time.Hour)
		errc <- err
	}()
	<-got
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-errc, ErrConnectionClosed)
	require.NoError(t, c.Close(), "Close is idempotent")
	_, err = c.connTo(t.Context(), srv.addr())
	require.ErrorIs(t, err, ErrClosed)
	_, err = c.ListTables(t.Context(), "x")
	require.ErrorIs(t, err, ErrClosed)
}

func TestSASLPlainAuthenticate(t *testing.T) {
	tests := []struct {
		name     string
		password string
		wantErr  error
	}{
		{"good credentials", "secret", nil},
		{"bad credentials", "wrong", ErrAuthenticate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var order []int16
			var mu sync.Mutex
			srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
				mu.Lock()
				order = append(order, req.APIKey)
				mu.Unlock()
				if req.APIKey != apiAuthenticate {
					echoListTables(sc, req)
					return
				}
				var in pb.AuthenticateRequest
				require.NoError(t, proto.Unmarshal(req.Payload, &in))
				assert.Equal(t, "PLAIN", in.GetProtocol())
				if bytes.Equal(in.GetToken(), []byte("\x00admin\x00secret")) {
					sc.reply(frame.SuccessResponse, req.RequestID, &pb.AuthenticateResponse{Challenge: []byte{}})
					return
				}
				sc.reply(frame.ErrorResponse, req.RequestID, &pb.ErrorResponse{
					ErrorCode: proto.Int32(46), ErrorMessage: proto.String("Authentication failed: Invalid username or password"),
				})
			})
			c := newTestClient(t, srv.addr(), Config{Username: "admin", Password: tt.password})
			names, err := c.ListTables(t.Context(), "db")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.False(t, IsRetriable(err))
				mu.Lock()
				assert.Equal(t, []int16{apiAuthenticate}, order, "nothing is sent after a failed handshake")
				mu.Unlock()
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"db"}, names)
			mu.Lock()
			assert.Equal(t, []int16{apiAuthenticate, apiListTables}, order)
			mu.Unlock()
		})
	}
}

func TestSASLPlainToken(t *testing.T) {
	// RFC 4616 with an empty authzid; the Rust client's test expects the
	// same bytes (fluss-rust .../rpc/message/authenticate.rs).
	assert.Equal(t, []byte("\x00admin\x00secret"), saslPlainToken("admin", "secret"))
}

func TestRawRequest(t *testing.T) {
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		if req.APIKey == 4242 {
			sc.reply(frame.ErrorResponse, req.RequestID, &pb.ErrorResponse{ErrorCode: proto.Int32(2)})
			return
		}
		echoListTables(sc, req)
	})
	c := newTestClient(t, srv.addr(), Config{})
	r, err := c.RawRequest(t.Context(), srv.addr(), 4242, 7, nil, 0)
	require.NoError(t, err)
	assert.True(t, r.ErrorResponse)
	require.ErrorIs(t, r.Err(), ErrUnsupportedVersion)

	payload, err := proto.Marshal(&pb.ListTablesRequest{DatabaseName: proto.String("raw")})
	require.NoError(t, err)
	r, err = c.RawRequest(t.Context(), srv.addr(), apiListTables, 0, payload, 0)
	require.NoError(t, err)
	require.NoError(t, r.Err())
	var out pb.ListTablesResponse
	require.NoError(t, proto.Unmarshal(r.Payload, &out))
	assert.Equal(t, []string{"raw"}, out.GetTableName())
}

func TestDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := newTestClient(t, addr, Config{DialTimeout: time.Second})
	_, err = c.ListTables(t.Context(), "x")
	require.Error(t, err)
	var ne net.Error
	assert.True(t, errors.As(err, &ne) || errors.Is(err, ErrConnectionClosed), "%v", err)
	assert.True(t, IsRetriable(err), "%v", err)
}

func splitTestAddr(t *testing.T, addr string) (string, int32) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return host, int32(p)
}

// send returns once the request is queued, before the answer, and orders
// requests: each request is sent only after the previous one's send
// returned, and the server must see them in that order.
func TestConnSendOrdersRequests(t *testing.T) {
	const n = 16
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := newTestServer(t, func(sc *testServerConn, req frame.Request) {
		var in pb.ListTablesRequest
		require.NoError(t, proto.Unmarshal(req.Payload, &in))
		mu.Lock()
		seen = append(seen, in.GetDatabaseName())
		mu.Unlock()
		echoListTables(sc, req)
	})
	c := newTestClient(t, srv.addr(), Config{})
	ctx := t.Context()
	cn, err := c.connTo(ctx, srv.addr())
	require.NoError(t, err)

	errs := make(chan error, n)
	prev := make(chan struct{})
	close(prev)
	var want []string
	for i := range n {
		db := "db" + strconv.Itoa(i)
		want = append(want, db)
		mine := make(chan struct{})
		wait := prev
		go func() {
			<-wait
			p, err := cn.start(ctx, apiListTables, &pb.ListTablesRequest{DatabaseName: proto.String(db)}, 0)
			close(mine)
			if err != nil {
				errs <- err
				return
			}
			var resp pb.ListTablesResponse
			errs <- p.decode(ctx, &resp)
		}()
		prev = mine
	}
	for range n {
		require.NoError(t, <-errs)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, want, seen)
}

// SendProduceLog returns an error, not a PendingWrite, when the request is
// never queued, so a caller waiting for it to be queued cannot hang.
func TestSendProduceLogFailsWhenNotQueued(t *testing.T) {
	srv := newTestServer(t, echoListTables)
	c := newTestClient(t, srv.addr(), Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	pw, err := c.SendProduceLog(ctx, 4242, &ProduceLogRequest{TableID: 1, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: []byte{1}}}})
	require.Error(t, err, "cancelled before anything was queued")
	assert.Nil(t, pw)
}

// A PendingWrite's Wait runs its wait function once; later calls return the
// first outcome.
func TestPendingWriteWaitsOnce(t *testing.T) {
	calls := 0
	pw := NewPendingWrite(func(ctx context.Context) ([]BucketResult, error) {
		calls++
		return []BucketResult{{PartitionID: NoPartition, Bucket: 3, Offset: 7}}, nil
	})
	for range 2 {
		res, err := pw.Wait(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []BucketResult{{PartitionID: NoPartition, Bucket: 3, Offset: 7}}, res)
	}
	assert.Equal(t, 1, calls)
}
