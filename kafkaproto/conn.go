package kafkaproto

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one client connection: a reader goroutine that parses requests,
// runs the handlers (the Produce handler hands batches to the sink in arrival
// order) and queues one response slot per request, and a writer goroutine
// that writes the slots in request order, waiting for Produce results as
// needed. The queue's capacity (MaxInFlightRequests) is the back-pressure:
// when it is full the reader stops reading the socket. The writer runs only
// while responses are queued (an idle connection is one blocked reader: its
// stack is most of what an idle connection costs, and clients keep idle
// connections by the thousand).
type conn struct {
	// ip is the client address its ConnectionLimits slot is counted under,
	// and slots its listener's MaxConnections tokens (nil: no limit); both
	// given back by Server.removeConn.
	ip    netip.Addr
	slots chan struct{}
	s     *Server
	nc    net.Conn
	// br is the read buffer, taken from the server's pool when a request's
	// first byte arrives and given back once nothing more is buffered; nil
	// while the connection is idle. Owned by the reader goroutine.
	br   *bufio.Reader
	head requestHead
	log  *slog.Logger

	ctx       context.Context // cancelled when the connection dies
	cancel    context.CancelFunc
	closeOnce sync.Once
	// drainCtx is cancelled when draining starts (or ctx ends): waits for
	// the read budget of a request not yet received end with it.
	drainCtx    context.Context
	drainCancel context.CancelFunc

	pending  chan *response
	draining atomic.Bool

	// wmu orders the writer's start and exit against the reader's queueing:
	// the writer exits only when the queue is empty and the reader is not
	// done, under wmu, and the reader starts one after queueing (or when it
	// is done) unless one runs.
	wmu        sync.Mutex
	writing    bool // a writer goroutine runs
	readerDone bool // pending is closed
	// Owned by the running writer (handed over under wmu).
	writeBroken bool

	// Owned by the reader goroutine.
	auth connAuth
	// spoke is set once the client sent a valid request (MaxFirstRequestBytes).
	spoke bool
	// certName is the principal name of the client's verified TLS
	// certificate (Config.PrincipalRules), set before its first request
	// is handled (certChecked); "" without one.
	certName    string
	certChecked bool
	// mutedUntil is when a connection throttled by its quota may be read
	// again (zero: not muted).
	mutedUntil time.Time
}

// connAuth is the SASL state, owned by the reader.
type connAuth struct {
	authenticated bool
	session       saslSession // after a successful handshake
	raw           bool        // v0 handshake: bare tokens
	// expiry ends the authenticated session (KIP-368): the next request
	// after it that is not a re-authentication closes the connection.
	expiry time.Time
	// reauth is a re-authentication under way on an authenticated
	// connection; session stays the principal until it succeeds.
	reauth saslSession
}

// response is one slot in the connection's response order.
type response struct {
	corr    int32
	key     int16
	start   time.Time
	msg     kmsg.Response
	produce *produceWait // non-nil: wait for the sink before writing
	raw     []byte       // bare SASL v0 token (no header) when isRaw
	isRaw   bool
	// closeAfter closes the connection once this response is written.
	closeAfter bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:       s,
		nc:      nc,
		head:    requestHead{nc: nc},
		log:     s.log.With("remote", nc.RemoteAddr().String()),
		pending: make(chan *response, s.cfg.MaxInFlightRequests),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	c.drainCtx, c.drainCancel = context.WithCancel(c.ctx)
	c.auth.authenticated = s.sasl == nil
	s.m.connsTotal.Inc()
	s.m.openConns.Add(1)
	return c
}

// close tears the connection down at once.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.drainCancel()
		if err := c.nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.log.Debug("close connection", "err", err)
		}
	})
}

// drain stops reading new requests: the reader handles what is already
// buffered and stops, the writer answers everything pending, half-closes
// and closes the connection (see Server.Shutdown). A request partly read
// is abandoned; none of it has reached the sink.
func (c *conn) drain() {
	c.draining.Store(true)
	c.drainCancel()
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
}

// advertised is the broker address Metadata returns on this connection.
func (c *conn) advertised() (string, int32) {
	host, port := c.s.cfg.AdvertisedHost, c.s.cfg.AdvertisedPort
	if host != "" && port != 0 {
		return host, port
	}
	lh, lp, err := net.SplitHostPort(c.nc.LocalAddr().String())
	if err == nil {
		if host == "" {
			host = lh
		}
		if port == 0 {
			p, _ := strconv.Atoi(lp)
			port = int32(p)
		}
	}
	return host, port
}

// connReadBuffer is a read buffer: room for the small requests and the
// heads of large ones. A frame body larger than what is buffered is read
// straight into the frame (bufio passes large reads through), so a bigger
// buffer would only cost memory per reading connection, outside the memory
// budget. Idle connections hold none (see awaitRequest).
const connReadBuffer = 16 << 10

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer c.readerExit()
	defer c.putReader(true)
	for {
		frame, charged, err := c.readRequest()
		if err != nil {
			c.readFailed(err)
			return
		}
		c.putReader(false)
		if !c.certChecked && !c.nameCertificate() {
			c.s.budget.release(charged)
			return
		}
		r, closeConn := c.handleFrame(frame)
		c.s.budget.release(charged)
		if r != nil {
			// Never dropped while draining: c.ctx only ends on Close.
			select {
			case c.pending <- r:
				c.wakeWriter()
			case <-c.ctx.Done():
				return
			}
		}
		if closeConn {
			return
		}
		if !c.mutedUntil.IsZero() && !c.awaitUnmute() {
			return
		}
	}
}

// Reasons readRequest gives up without a request.
var (
	// errDrained: the connection is draining and no complete request is
	// buffered.
	errDrained = errors.New("connection draining")
	// errSlowRequest: a request did not arrive within its read deadline.
	errSlowRequest = errors.New("request not received within its read deadline")
)

// readRequest reads the next request frame and returns it with the read
// budget it holds (the caller releases it). While draining it only returns
// requests already complete in the connection's buffer: those were received
// and will be answered; anything else is left unread.
func (c *conn) readRequest() ([]byte, int64, error) {
	s := c.s
	if c.draining.Load() && !c.frameBuffered() {
		return nil, 0, errDrained
	}
	// Idle until the request's first byte, then RequestReadTimeout for the
	// rest of its size field.
	if err := c.setReadDeadline(time.Now().Add(s.cfg.IdleTimeout)); err != nil {
		return nil, 0, err
	}
	if err := c.awaitRequest(); err != nil {
		return nil, 0, err
	}
	if err := c.setReadDeadline(time.Now().Add(s.cfg.RequestReadTimeout)); err != nil {
		return nil, 0, err
	}
	size, err := readFrameSize(c.br, c.maxFrameBytes())
	if err != nil {
		return nil, 0, c.slowRead(err, 0, 0)
	}
	if int64(size) > s.budget.readAhead {
		return c.readLargeBody(size)
	}
	// A buffered request is waited for even while draining: it was received.
	ctx := c.drainCtx
	if c.br.Buffered() >= size {
		ctx = c.ctx
	}
	if !s.budget.tryAcquire(int64(size)) {
		c.budgetWait(size)
		if err := s.budget.acquire(ctx, int64(size)); err != nil {
			return nil, 0, fmt.Errorf("wait for read budget: %w", err)
		}
	}
	if err := c.setReadDeadline(c.requestDeadline(size)); err != nil {
		s.budget.release(int64(size))
		return nil, 0, err
	}
	buf := make([]byte, size)
	if n, err := io.ReadFull(c.br, buf); err != nil {
		s.budget.release(int64(size))
		return nil, 0, c.slowRead(err, n, size)
	}
	return buf, int64(size), nil
}

// awaitRequest waits for the next request. An idle connection waits
// without a read buffer: what arrives first is read straight from the
// socket into the connection's small head (a whole request, when it is a
// producer's record or two: one read either way), and a buffer is taken
// from the server's pool only then.
func (c *conn) awaitRequest() error {
	if c.br != nil {
		_, err := c.br.Peek(1)
		return err
	}
	if !c.head.buffered() {
		if err := c.head.await(); err != nil {
			return err
		}
	}
	br := c.s.readers.Get().(*bufio.Reader)
	br.Reset(&c.head)
	c.br = br
	return nil
}

// putReader gives the read buffer back to the pool once nothing is
// buffered in it (always when the connection ends).
func (c *conn) putReader(ending bool) {
	if c.br == nil || (!ending && (c.br.Buffered() > 0 || c.head.buffered())) {
		return
	}
	c.br.Reset(nil) // drop the reference to this connection
	c.s.readers.Put(c.br)
	c.br = nil
}

// headBytes is how much an idle connection reads before it takes a read
// buffer: the small Produce requests of producers that send a record or
// two at a time fit, so that they cost one read, not two.
const headBytes = 1 << 10

// requestHead is the socket as the read buffer sees it: first what was
// read while the connection was idle, then the socket itself.
type requestHead struct {
	nc   net.Conn
	b    [headBytes]byte
	r, w int // b[r:w] is unread
}

func (h *requestHead) buffered() bool { return h.r < h.w }

// await reads what has arrived, at least one byte, into the head.
func (h *requestHead) await() error {
	for {
		n, err := h.nc.Read(h.b[:])
		if n > 0 {
			h.r, h.w = 0, n
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (h *requestHead) Read(p []byte) (int, error) {
	if h.r < h.w {
		n := copy(p, h.b[h.r:h.w])
		h.r += n
		return n, nil
	}
	return h.nc.Read(p)
}

// readLargeBody reads the body of a frame larger than the budget's
// read-ahead, reserving memory as its buffer grows (see readBudget). Waits
// for memory count against the request's read deadline.
func (c *conn) readLargeBody(size int) ([]byte, int64, error) {
	b := c.s.budget
	deadline := c.requestDeadline(size)
	ctx, cancel := context.WithDeadline(c.drainCtx, deadline)
	defer cancel()
	var buf []byte
	var charged int64
	waited := false
	fail := func(err error) ([]byte, int64, error) {
		b.release(charged)
		return nil, 0, err
	}
	for len(buf) < size {
		grown := min(size, len(buf)+max(len(buf), largeFrameStep))
		for charged < int64(grown) {
			n := min(int64(grown)-charged, b.readAhead)
			if !b.tryAcquire(n) {
				if !waited {
					waited = true
					c.budgetWait(size)
				}
				if err := b.acquire(ctx, n); err != nil {
					if errors.Is(err, context.DeadlineExceeded) {
						err = errSlowRequest
					}
					return fail(fmt.Errorf("wait for read budget at %d of %d bytes: %w", len(buf), size, err))
				}
			}
			charged += n
		}
		next := make([]byte, len(buf), grown)
		copy(next, buf)
		buf = next
		if err := c.setReadDeadline(deadline); err != nil {
			return fail(err)
		}
		n, err := io.ReadFull(c.br, buf[len(buf):grown])
		if err != nil {
			return fail(c.slowRead(err, len(buf)+n, size))
		}
		buf = buf[:grown]
	}
	return buf, charged, nil
}

// requestDeadline is when a request of size bytes must have arrived:
// RequestReadTimeout plus its size at MinReadBytesPerSecond, from now.
func (c *conn) requestDeadline(size int) time.Time {
	cfg := &c.s.cfg
	transfer := time.Duration(float64(size) / float64(cfg.MinReadBytesPerSecond) * float64(time.Second))
	return time.Now().Add(cfg.RequestReadTimeout + transfer)
}

// slowRead turns a read error inside a request into errSlowRequest when
// the read deadline expired (and the connection is not draining), and a
// clean EOF into an unexpected one.
func (c *conn) slowRead(err error, got, size int) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && !c.draining.Load():
		return fmt.Errorf("%w: %d of %d bytes", errSlowRequest, got, size)
	case errors.Is(err, io.EOF):
		return io.ErrUnexpectedEOF
	}
	return err
}

// budgetWait counts and logs a request that waits for the read budget.
func (c *conn) budgetWait(size int) {
	c.s.m.readBudgetWaits.Inc()
	c.log.Debug("waiting for read budget", "frame_bytes", size)
}

// maxFrameBytes is the largest request the connection may send next.
func (c *conn) maxFrameBytes() int {
	switch {
	case !c.auth.authenticated:
		return min(c.s.cfg.MaxFrameBytes, maxUnauthenticatedFrameBytes)
	case !c.spoke:
		return c.s.cfg.MaxFirstRequestBytes
	}
	return c.s.cfg.MaxFrameBytes
}

// frameBuffered reports whether a whole request sits in the read buffer.
func (c *conn) frameBuffered() bool {
	if c.br == nil {
		return false
	}
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	b, err := c.br.Peek(4)
	if err != nil {
		return false
	}
	size := int64(int32(binary.BigEndian.Uint32(b)))
	return size >= 0 && int64(n-4) >= size
}

// setReadDeadline sets the read deadline, unless the connection is
// draining: then reads only return what is already buffered. drain stores
// the flag before it expires the deadline, and this checks the flag after
// setting it, so one of the two always has the last word.
func (c *conn) setReadDeadline(t time.Time) error {
	if err := c.nc.SetReadDeadline(t); err != nil {
		return err
	}
	if c.draining.Load() {
		return c.nc.SetReadDeadline(aLongTimeAgo)
	}
	return nil
}

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

func (c *conn) readFailed(err error) {
	var fe *frameError
	switch {
	case c.draining.Load() || c.ctx.Err() != nil:
	case errors.As(err, &fe):
		c.s.m.protocolError("bad_frame")
		c.warnConn("closing connection: bad frame", err)
	case errors.Is(err, errSlowRequest):
		c.s.m.protocolError("read_timeout")
		c.warnConn("closing connection: request too slow", err)
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		c.log.Debug("connection closed by client")
	case c.tlsHandshakeFailed():
		c.s.m.protocolError("tls_handshake")
		c.warnConn("closing connection: tls handshake failed", err)
	default:
		c.log.Debug("read request", "err", err)
	}
}

// warnConn logs a client-caused connection close at Warn, rate-limited.
func (c *conn) warnConn(msg string, err error) {
	if ok, suppressed := c.s.connLog.allow(time.Now()); ok {
		c.log.Warn(msg, "err", err, "suppressed", suppressed)
		return
	}
	c.log.Debug(msg, "err", err)
}

// wakeWriter starts the writer unless it runs. The reader calls it after
// queueing a response and when it is done.
func (c *conn) wakeWriter() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writing {
		return
	}
	c.writing = true
	c.s.wg.Add(1) // the reader's count is held: Shutdown's Wait cannot have returned
	go c.writeLoop()
}

// readerExit closes the queue and has a writer finish the connection.
func (c *conn) readerExit() {
	c.wmu.Lock()
	c.readerDone = true
	close(c.pending)
	c.wmu.Unlock()
	c.wakeWriter()
}

// writeLoop writes the queued responses in order, and exits when the queue
// is empty (the reader starts another when it queues the next one). The
// writer that finds the queue closed ends the connection.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	var buf []byte
	for {
		var r *response
		select {
		case next, ok := <-c.pending:
			if !ok {
				c.finish()
				return
			}
			r = next
		default:
			c.wmu.Lock()
			if len(c.pending) == 0 && !c.readerDone {
				c.writing = false
				c.wmu.Unlock()
				return
			}
			c.wmu.Unlock()
			continue
		}
		if c.writeBroken {
			continue
		}
		if r.produce != nil && !c.awaitProduce(r.produce) {
			c.writeBroken = true
			continue
		}
		if r.isRaw {
			buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(r.raw)))
			buf = append(buf, r.raw...)
		} else {
			buf = appendResponse(buf[:0], r.corr, r.msg)
		}
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout)); err != nil {
			c.writeBroken = true
			c.close()
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.log.Info("closing connection: write response", "api_key", r.key, "corr_id", r.corr, "err", err)
			c.writeBroken = true
			c.close()
			continue
		}
		c.s.m.requestDone(r.key, r.start)
		if r.closeAfter {
			c.writeBroken = true
			c.close()
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// finish ends the connection once every response is written (or the
// connection broke): a drained connection lingers for the client's close.
func (c *conn) finish() {
	if !c.writeBroken && c.draining.Load() {
		c.lingerClose()
	}
	c.close()
	// The limits' slots are free before the gauge drops: whoever sees the
	// connection gone may open another.
	c.s.removeConn(c)
	c.s.m.openConns.Add(-1)
}

// drainLinger bounds how long a drained connection waits for the client to
// close its side after the last response.
const drainLinger = 500 * time.Millisecond

// lingerClose half-closes a drained connection after its last response and
// discards what the client still sends until it closes too (or
// drainLinger passes). Closing at once with unread bytes in the socket
// (a request we abandoned, or one sent meanwhile) makes the kernel send a
// reset, which can destroy responses not yet delivered: the client would
// resend requests that were answered. net/http does the same
// (closeWriteAndWait). Runs on the writer after the reader has exited.
func (c *conn) lingerClose() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok {
		return
	}
	if err := cw.CloseWrite(); err != nil {
		c.log.Debug("half-close connection", "err", err)
		return
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(drainLinger)); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, c.nc)
}

// appendResponse appends a response frame: size, correlation id, the tag
// byte of response header v1 (never for ApiVersions), body.
func appendResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if resp.IsFlexible() && resp.Key() != keyApiVersions {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// frameError is a framing violation; the connection is closed.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

// maxUnauthenticatedFrameBytes bounds the frames of a connection that has
// not completed SASL authentication (ApiVersions, SaslHandshake, SASL
// tokens), as Kafka's sasl.server.max.receive.size does, so unauthenticated
// clients cannot hold the server-wide read budget.
const maxUnauthenticatedFrameBytes = 512 << 10

// minFrameBytes is a request header v1 with a null client id.
const minFrameBytes = 10

// readFrame reads one size-prefixed frame.
func readFrame(r io.Reader, maxBytes int) ([]byte, error) {
	size, err := readFrameSize(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, size)
}

// readFrameSize reads and checks a frame's size prefix.
func readFrameSize(r io.Reader, maxBytes int) (int, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return 0, err
	}
	size := int64(int32(binary.BigEndian.Uint32(sizeBuf[:])))
	switch {
	case size < 0:
		return 0, &frameError{fmt.Sprintf("negative frame size %d", size)}
	case size > int64(maxBytes):
		return 0, &frameError{fmt.Sprintf("frame size %d exceeds the limit of %d%s", size, maxBytes, frameHint(sizeBuf))}
	}
	return int(size), nil
}

// readFrameBody reads a frame of a checked size. The buffer grows as bytes
// arrive, so a large size field alone does not allocate.
func readFrameBody(r io.Reader, n int) ([]byte, error) {
	const chunk = 1 << 20
	buf := make([]byte, 0, min(n, chunk))
	for len(buf) < n {
		step := min(n-len(buf), chunk)
		buf = slices.Grow(buf, step)
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+got]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// frameHint recognises TLS and HTTP clients talking to a Kafka port.
func frameHint(b [4]byte) string {
	switch {
	case b[0] == 0x16 && b[1] == 0x03:
		return " (looks like a TLS handshake: is the client using TLS against a plaintext listener?)"
	case string(b[:]) == "GET " || string(b[:]) == "POST" || string(b[:]) == "HEAD" || string(b[:]) == "PUT ":
		return " (looks like HTTP)"
	}
	return ""
}

// requestHeader is the request header v1/v2.
type requestHeader struct {
	key      int16
	version  int16
	corr     int32
	clientID *string
}

// Request parse failures; each closes the connection.
var (
	errUnknownAPIKey      = errors.New("unknown api key")
	errUnsupportedVersion = errors.New("unsupported api version")
	errMalformedRequest   = errors.New("malformed request")
	// errApiVersionsTooNew is not a failure: it selects the KIP-511 reply.
	errApiVersionsTooNew = errors.New("api versions request newer than supported")
)

// parseRequest decodes one request frame (without its size prefix) for an
// advertised key and version. Requests alias frame.
func parseRequest(frame []byte) (requestHeader, kmsg.Request, error) {
	var h requestHeader
	if len(frame) < minFrameBytes-2 {
		return h, nil, fmt.Errorf("%w: frame of %d bytes", errMalformedRequest, len(frame))
	}
	r := kbin.Reader{Src: frame}
	h.key, h.version, h.corr = r.Int16(), r.Int16(), r.Int32()
	var api apiRange
	found := false
	for _, a := range advertisedAPIs {
		if a.key == h.key {
			api, found = a, true
		}
	}
	switch {
	case !found:
		return h, nil, fmt.Errorf("%w %d (version %d)", errUnknownAPIKey, h.key, h.version)
	case h.key == keyApiVersions && h.version > maxApiVersions:
		return h, nil, errApiVersionsTooNew
	case h.version < api.min || h.version > api.max:
		return h, nil, fmt.Errorf("%w: %s v%d (supported %d-%d)", errUnsupportedVersion, api.name, h.version, api.min, api.max)
	}
	h.clientID = r.UnsafeNullableString()
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d header: %v", errMalformedRequest, api.name, h.version, err)
	}
	var err error
	if u, ok := req.(kmsg.UnsafeReadFrom); ok {
		err = u.UnsafeReadFrom(r.Src)
	} else {
		err = req.ReadFrom(r.Src)
	}
	if err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d: %v", errMalformedRequest, api.name, h.version, err)
	}
	return h, req, nil
}

// handleFrame parses and handles one frame. It returns the response slot to
// queue (nil when no response is due) and whether to close the connection
// after it.
func (c *conn) handleFrame(frame []byte) (*response, bool) {
	start := time.Now()
	if c.auth.raw && !c.auth.authenticated {
		reply, closeConn := c.handleRawSASLToken(frame)
		if closeConn {
			return nil, true
		}
		return &response{key: keySASLAuthenticate, start: start, raw: reply, isRaw: true}, false
	}
	h, req, err := parseRequest(frame)
	if errors.Is(err, errApiVersionsTooNew) {
		c.s.m.request(h.key, -1) // label "unsupported": versions are client input
		return &response{corr: h.corr, key: h.key, start: start, msg: unsupportedApiVersions()}, false
	}
	if err != nil {
		reason := "malformed_request"
		switch {
		case errors.Is(err, errUnknownAPIKey):
			reason = "unknown_api_key"
		case errors.Is(err, errUnsupportedVersion):
			reason = "unsupported_version"
		}
		c.s.m.protocolError(reason)
		c.log.Warn("closing connection: bad request", "err", err)
		return nil, true
	}
	c.spoke = true
	c.s.m.request(h.key, h.version)
	if !c.s.handles(h.key) {
		c.s.m.protocolError("unknown_api_key")
		c.log.Warn("closing connection: sasl request without sasl configured", "api_key", h.key)
		return nil, true
	}
	if !c.auth.authenticated && h.key != keyApiVersions && h.key != keySASLHandshake && h.key != keySASLAuthenticate {
		c.s.m.protocolError("unauthenticated")
		c.log.Warn("closing connection: request before sasl authentication", "api_key", h.key)
		return nil, true
	}
	if c.sessionExpired(h.key, start) {
		return nil, true
	}
	if c.log.Enabled(c.ctx, slog.LevelDebug) {
		cid := ""
		if h.clientID != nil {
			cid = *h.clientID
		}
		c.log.Debug("request", "api_key", h.key, "api_version", h.version, "corr_id", h.corr, "client_id", cid)
	}
	r := &response{corr: h.corr, key: h.key, start: start}
	closeAfter := false
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		w, closeConn := c.handleProduce(req, h.clientID)
		if w == nil {
			return nil, closeConn
		}
		r.msg, r.produce = w.resp, w
	case *kmsg.FetchRequest:
		r.msg = c.handleFetch(req)
	case *kmsg.MetadataRequest:
		r.msg = c.handleMetadata(req)
	case *kmsg.FindCoordinatorRequest:
		r.msg = c.handleFindCoordinator(req)
	case *kmsg.SASLHandshakeRequest:
		r.msg, closeAfter = c.handleSASLHandshake(req)
	case *kmsg.ApiVersionsRequest:
		r.msg = c.s.handleApiVersions(req)
	case *kmsg.InitProducerIDRequest:
		if req.TransactionalID == nil && c.s.notReady(h.key) != nil {
			r.msg = notReadyInitProducerID(req)
			break
		}
		r.msg = c.handleInitProducerID(req)
	case *kmsg.AddPartitionsToTxnRequest:
		r.msg = c.handleAddPartitionsToTxn(req)
	case *kmsg.AddOffsetsToTxnRequest:
		r.msg = c.handleAddOffsetsToTxn(req)
	case *kmsg.EndTxnRequest:
		r.msg = c.handleEndTxn(req)
	case *kmsg.DescribeProducersRequest:
		r.msg = c.handleDescribeProducers(req)
	case *kmsg.DescribeTransactionsRequest:
		r.msg = c.handleDescribeTransactions(req)
	case *kmsg.ListTransactionsRequest:
		r.msg = c.handleListTransactions(req)
	case *kmsg.SASLAuthenticateRequest:
		r.msg, closeAfter = c.handleSASLAuthenticate(req)
	default:
		// Unreachable while advertisedAPIs and this switch agree (tested).
		c.log.Error("advertised api without a handler", "api_key", h.key)
		return nil, true
	}
	r.closeAfter = closeAfter
	return r, closeAfter
}

// authenticated marks SASL as complete with sess, a first authentication
// or a re-authentication.
func (c *conn) authenticated(sess saslSession) {
	reauth := c.auth.authenticated
	c.auth.authenticated = true
	c.auth.raw = false
	c.auth.session, c.auth.reauth = sess, nil
	c.auth.expiry = sess.expiry()
	c.log.Debug("sasl authentication succeeded", "user", sess.user(), "mechanism", sess.mechanism(),
		"reauthentication", reauth, "expiry", c.auth.expiry)
}

// sessionExpired reports, and logs, that the connection's SASL session
// ended before this request (key): Kafka closes such a connection at any
// request but a re-authentication's (KIP-368).
func (c *conn) sessionExpired(key int16, now time.Time) bool {
	if !c.auth.authenticated || c.auth.expiry.IsZero() || now.Before(c.auth.expiry) ||
		key == keySASLHandshake || key == keySASLAuthenticate {
		return false
	}
	c.s.m.protocolError("sasl_session_expired")
	c.log.Info("closing connection: sasl session expired without re-authentication",
		"principal", c.principal(), "expired", c.auth.expiry, "api_key", key)
	return true
}
