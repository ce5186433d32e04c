package fluss

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// connConfig is what a conn needs from the Client. Read-only once built.
type connConfig struct {
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	dialTimeout    time.Duration
	requestTimeout time.Duration
	clientName     string
	clientVersion  string
	username       string
	password       string
	maxFrameSize   int
	logger         *slog.Logger

	// silentAfter is how long a connection with a request waiting may read
	// nothing before gone is asked whether its server is still in the
	// cluster; gone nil: never asked (the request timeout alone ends the
	// wait).
	silentAfter time.Duration
	gone        func(ctx context.Context, addr string) bool
}

// conn is one TCP connection to one Fluss server. Requests are pipelined:
// each gets a request id, many may be in flight, and responses are matched
// by id in whatever order they arrive.
//
// A conn owns two goroutines, started by dialConn and stopped by close (or
// when the connection breaks): the reader, the only one to read from the
// socket, and the writer, the only one to write to it; and a third, the
// silence watcher (watchSilence), when the client asks about members.
type conn struct {
	addr string
	cfg  *connConfig
	nc   net.Conn
	log  *slog.Logger

	writeCh chan [][]byte // frames for the writer goroutine, each in pieces written in order
	done    chan struct{} // closed when the connection is dead
	wg      sync.WaitGroup

	// versions and serverType are written during the handshake, before the
	// conn is shared, and read-only afterwards.
	versions   map[int16]int16 // api key -> negotiated version
	serverType int32

	// mu guards the fields below.
	mu      sync.Mutex
	nextID  int32
	pending map[int32]waiter
	err     error // why the connection died; nil while alive

	lastRead atomic.Int64 // unix ns of the last frame read (or of the dial)
}

// waiter is a request in flight: where its answer goes, and what
// abandonWrites needs to pick it.
type waiter struct {
	ch    chan connResult
	sent  time.Time
	write bool // PRODUCE_LOG or PUT_KV
}

type connResult struct {
	resp frame.Response
	err  error
}

// dialConn connects to addr, starts the reader and writer, negotiates API
// versions and authenticates when a username is configured. On any error the
// connection is closed and its goroutines stopped.
func dialConn(ctx context.Context, addr string, cfg *connConfig) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	nc, err := cfg.dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial fluss server %s: %w", addr, dialTimeoutError(ctx, err, cfg.dialTimeout))
	}
	c := &conn{
		addr:    addr,
		cfg:     cfg,
		nc:      nc,
		log:     cfg.logger.With(slog.String("server", addr)),
		writeCh: make(chan [][]byte, 16),
		done:    make(chan struct{}),
		pending: make(map[int32]waiter),
	}
	c.lastRead.Store(time.Now().UnixNano())
	c.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	if cfg.gone != nil {
		c.wg.Add(1)
		go c.watchSilence()
	}

	if err := c.handshake(dctx); err != nil {
		c.close()
		return nil, fmt.Errorf("handshake with fluss server %s: %w", addr, dialTimeoutError(ctx, err, cfg.dialTimeout))
	}
	return c, nil
}

// dialTimeoutError turns the expiry of the dial timeout, while the caller's
// ctx is still alive, into ErrConnectionClosed (retriable, refreshes
// metadata, as a refused connection does). Left as is, a net dial timeout
// matches context.DeadlineExceeded, which IsRetriable reads as the caller
// giving up.
func dialTimeoutError(ctx context.Context, err error, timeout time.Duration) error {
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: no connection within the dial timeout %v (%v)", ErrConnectionClosed, timeout, err)
}

// handshake runs ApiVersions and, when configured, SASL/PLAIN Authenticate,
// in the order the Java client's ServerConnection uses.
func (c *conn) handshake(ctx context.Context) error {
	if err := c.negotiateVersions(ctx); err != nil {
		return err
	}
	if c.cfg.username != "" {
		if err := c.authenticate(ctx); err != nil {
			return err
		}
	}
	return nil
}

// alive reports whether the connection can still carry requests.
func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// close closes the connection, fails its in-flight requests with
// ErrConnectionClosed and waits for its goroutines. Idempotent.
func (c *conn) close() {
	c.fail(ErrConnectionClosed)
	c.wg.Wait()
}

// version returns the negotiated version of an API, or an error wrapping
// ErrAPINotSupported when this server does not serve it.
func (c *conn) version(apiKey int16) (int16, error) {
	v, ok := c.versions[apiKey]
	if !ok {
		return 0, fmt.Errorf("%w: api key %d on %s", ErrAPINotSupported, apiKey, c.addr)
	}
	return v, nil
}

// call sends req with the negotiated version of apiKey and decodes the
// success payload into resp. An ERROR_RESPONSE becomes an *Error. timeout <= 0
// means the configured request timeout.
func (c *conn) call(ctx context.Context, apiKey int16, req, resp proto.Message, timeout time.Duration) error {
	p, err := c.start(ctx, apiKey, req, timeout)
	if err != nil {
		return err
	}
	return p.decode(ctx, resp)
}

// start queues req with the negotiated version of apiKey (see send); the
// caller reads the answer with decode.
func (c *conn) start(ctx context.Context, apiKey int16, req proto.Message, timeout time.Duration) (*pendingCall, error) {
	v, err := c.version(apiKey)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, frame.RequestHeader{APIKey: apiKey, APIVersion: v}, req, nil, timeout)
}

func (c *conn) callVersion(ctx context.Context, apiKey, version int16, req, resp proto.Message, timeout time.Duration) error {
	r, err := c.roundTrip(ctx, frame.RequestHeader{APIKey: apiKey, APIVersion: version}, req, nil, timeout)
	if err != nil {
		return err
	}
	return decodeResponse(r, resp)
}

// decodeResponse turns a SUCCESS or ERROR response into resp or an *Error.
func decodeResponse(r frame.Response, resp proto.Message) error {
	switch r.Type {
	case frame.SuccessResponse:
		if err := proto.Unmarshal(r.Payload, resp); err != nil {
			return fmt.Errorf("decode response: %w", err)
		}
		return nil
	case frame.ErrorResponse:
		return decodeErrorResponse(r.Payload)
	}
	return fmt.Errorf("unexpected response type %s", r.Type)
}

func decodeErrorResponse(payload []byte) error {
	var er pb.ErrorResponse
	if err := proto.Unmarshal(payload, &er); err != nil {
		return fmt.Errorf("decode error response: %w", err)
	}
	if err := ErrorForCode(er.GetErrorCode(), er.GetErrorMessage()); err != nil {
		return refineUnknownServerError(err.(*Error))
	}
	return ErrorForCode(-1, "error response with code 0: "+er.GetErrorMessage())
}

// roundTrip sends one request and waits for its response, for at most
// timeout (the configured request timeout when <= 0) and never past ctx.
// The payload is msg marshalled, or raw when msg is nil. The request id is
// assigned here; h.RequestID is ignored.
func (c *conn) roundTrip(ctx context.Context, h frame.RequestHeader, msg proto.Message, raw []byte, timeout time.Duration) (frame.Response, error) {
	p, err := c.send(ctx, h, msg, raw, timeout)
	if err != nil {
		return frame.Response{}, err
	}
	return p.wait(ctx)
}

// pendingCall is a request handed to the connection's writer whose response
// has not been read yet.
type pendingCall struct {
	c       *conn
	apiKey  int16
	id      int32
	ch      chan connResult
	timer   *time.Timer // the request's deadline, started by send
	timeout time.Duration
}

// send is the first half of roundTrip: it returns as soon as the frame is
// handed to the connection's writer (frames reach the server in the order
// they are handed over), or with an error when it cannot be. The timeout
// counts from here and also bounds the wait for the answer.
func (c *conn) send(ctx context.Context, h frame.RequestHeader, msg proto.Message, raw []byte, timeout time.Duration) (*pendingCall, error) {
	return c.sendFrame(ctx, h, msg, raw, nil, timeout)
}

// sendFrame is send with the request given as a message, raw payload bytes,
// or a splicedWrite whose batches go out without being copied.
func (c *conn) sendFrame(ctx context.Context, h frame.RequestHeader, msg proto.Message, raw []byte, spliced *splicedWrite, timeout time.Duration) (*pendingCall, error) {
	if timeout <= 0 {
		timeout = c.cfg.requestTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("api %d to %s: %w", h.APIKey, c.addr, err)
	}
	ch := make(chan connResult, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	id := c.nextID
	c.nextID++
	c.pending[id] = waiter{ch: ch, sent: time.Now(), write: h.APIKey == apiProduceLog || h.APIKey == apiPutKv}
	c.mu.Unlock()

	h.RequestID = id
	var buf [][]byte
	switch {
	case spliced != nil:
		var err error
		if buf, err = spliced.segments(h); err != nil {
			c.forget(id)
			return nil, err
		}
	case msg != nil:
		b, err := frame.AppendRequestMessage(nil, h, msg)
		if err != nil {
			c.forget(id)
			return nil, err
		}
		buf = [][]byte{b}
	default:
		buf = [][]byte{frame.AppendRequest(nil, h, raw)}
	}

	p := &pendingCall{c: c, apiKey: h.APIKey, id: id, ch: ch, timer: time.NewTimer(timeout), timeout: timeout}
	select {
	case c.writeCh <- buf:
	case <-c.done:
		// fail() delivered the reason to ch; wait returns it.
	case <-ctx.Done():
		p.timer.Stop()
		c.forget(id)
		return nil, fmt.Errorf("api %d to %s: %w", h.APIKey, c.addr, ctx.Err())
	case <-p.timer.C:
		c.forget(id)
		return nil, fmt.Errorf("api %d to %s: %w (waiting %s to send)", h.APIKey, c.addr, ErrRequestTimeout, timeout)
	}
	return p, nil
}

// wait is the second half of roundTrip: the response, until the request's
// deadline or ctx ends. Call it once.
func (p *pendingCall) wait(ctx context.Context) (frame.Response, error) {
	defer p.timer.Stop()
	c := p.c
	select {
	case r := <-p.ch:
		return r.resp, r.err
	case <-ctx.Done():
		c.forget(p.id)
		return frame.Response{}, fmt.Errorf("api %d to %s: %w", p.apiKey, c.addr, ctx.Err())
	case <-p.timer.C:
		c.forget(p.id)
		return frame.Response{}, fmt.Errorf("api %d to %s: %w after %s", p.apiKey, c.addr, ErrRequestTimeout, p.timeout)
	}
}

// watchSilence is the connection's third goroutine (when the client gave
// it gone): every silentAfter, if requests wait and nothing was read for
// that long, it asks whether the server is still in the cluster. If the
// cluster has dropped it (a crashed or paused tablet server whose
// ZooKeeper session expired, its buckets led elsewhere now), the
// connection fails with ErrConnectionClosed, so that its requests are
// retried on the new leaders at once instead of at their request timeout.
// A server that is slow but still a member keeps its requests.
func (c *conn) watchSilence() {
	defer c.wg.Done()
	// A check under way ends when the connection does: close() waits for
	// this goroutine.
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	go func() {
		select {
		case <-c.done:
			cancelBase()
		case <-base.Done():
		}
	}()
	tick := time.NewTicker(c.cfg.silentAfter)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		quiet := time.Since(time.Unix(0, c.lastRead.Load()))
		c.mu.Lock()
		waiting := len(c.pending) > 0
		c.mu.Unlock()
		if !waiting || quiet < c.cfg.silentAfter {
			continue
		}
		ctx, cancel := context.WithTimeout(base, c.cfg.silentAfter)
		gone := c.cfg.gone(ctx, c.addr)
		cancel()
		if gone {
			c.log.Warn("fluss server left the cluster while requests waited on it; failing them for a retry on the new leaders",
				slog.Duration("silent", quiet.Round(time.Millisecond)))
			c.fail(fmt.Errorf("%w: %s left the cluster (no answer for %s)", ErrConnectionClosed, c.addr, quiet.Round(time.Millisecond)))
			return
		}
	}
}

// decode waits for the response and decodes it into resp (see call).
func (p *pendingCall) decode(ctx context.Context, resp proto.Message) error {
	r, err := p.wait(ctx)
	if err != nil {
		return err
	}
	return decodeResponse(r, resp)
}

// forget drops a request whose caller gave up; a late response is discarded
// by the reader.
func (c *conn) forget(id int32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// fail marks the connection dead with err (first reason wins), closes the
// socket and fails every in-flight request.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()

	close(c.done)
	if cerr := c.nc.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		c.log.Debug("close fluss connection", slog.Any("err", cerr))
	}
	for _, w := range pending {
		w.ch <- connResult{err: err}
	}
}

// abandonWrites fails the writes sent before `before` that still wait for
// their answer with err; a late answer is discarded. The connection stays
// up for the other requests.
func (c *conn) abandonWrites(before time.Time, err error) int {
	c.mu.Lock()
	var out []waiter
	for id, w := range c.pending {
		if w.write && w.sent.Before(before) {
			delete(c.pending, id)
			out = append(out, w)
		}
	}
	c.mu.Unlock()
	for _, w := range out {
		w.ch <- connResult{err: err}
	}
	return len(out)
}

func (c *conn) readLoop() {
	defer c.wg.Done()
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		body, err := frame.ReadFrame(br, c.cfg.maxFrameSize)
		if err != nil {
			if c.alive() {
				c.log.Debug("fluss connection read failed", slog.Any("err", err))
			}
			c.fail(fmt.Errorf("%w: read from %s: %w", ErrConnectionClosed, c.addr, err))
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		resp, err := frame.ParseResponse(body)
		if err != nil {
			c.fail(fmt.Errorf("%w: from %s: %w", ErrConnectionClosed, c.addr, err))
			return
		}
		if resp.Type == frame.ServerFailure {
			// The server closes the connection after a SERVER_FAILURE;
			// every request in flight on it is lost.
			ferr := decodeErrorResponse(resp.Payload)
			c.log.Warn("fluss server failure, connection closed", slog.Any("err", ferr))
			c.fail(fmt.Errorf("%w: server failure from %s: %w", ErrConnectionClosed, c.addr, ferr))
			return
		}
		c.mu.Lock()
		w, ok := c.pending[resp.RequestID]
		delete(c.pending, resp.RequestID)
		c.mu.Unlock()
		if !ok {
			c.log.Debug("discard response to abandoned request", slog.Int("corr_id", int(resp.RequestID)))
			continue
		}
		w.ch <- connResult{resp: resp}
	}
}

// writeLoop writes queued frames, coalescing those queued together into one
// write through a buffer (a frame larger than the buffer bypasses it).
func (c *conn) writeLoop() {
	defer c.wg.Done()
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	write := func(buf [][]byte) error {
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.cfg.requestTimeout)); err != nil {
			return err
		}
		// bufio passes a piece larger than its free space straight to
		// the socket once its buffer is flushed: batches are not copied.
		for _, b := range buf {
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		select {
		case buf := <-c.writeCh:
			err := write(buf)
		drain:
			for err == nil {
				select {
				case buf = <-c.writeCh:
					err = write(buf)
				default:
					break drain
				}
			}
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				c.fail(fmt.Errorf("%w: write to %s: %w", ErrConnectionClosed, c.addr, err))
				return
			}
		case <-c.done:
			return
		}
	}
}
