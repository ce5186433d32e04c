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
// when it is full the reader stops reading the socket.
type conn struct {
	s   *Server
	nc  net.Conn
	br  *bufio.Reader
	log *slog.Logger

	ctx       context.Context // cancelled when the connection dies
	cancel    context.CancelFunc
	closeOnce sync.Once

	pending  chan *response
	draining atomic.Bool

	// Owned by the reader goroutine.
	auth connAuth
}

// connAuth is the SASL state, owned by the reader.
type connAuth struct {
	authenticated bool
	session       saslSession // after a successful handshake
	raw           bool        // v0 handshake: bare tokens
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
		br:      bufio.NewReaderSize(nc, 64<<10),
		log:     s.log.With("remote", nc.RemoteAddr().String()),
		pending: make(chan *response, s.cfg.MaxInFlightRequests),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	c.auth.authenticated = s.sasl == nil
	s.m.connsTotal.Inc()
	s.m.openConns.Add(1)
	return c
}

// close tears the connection down at once.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		if err := c.nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.log.Debug("close connection", "err", err)
		}
	})
}

// drain stops reading new requests; the writer finishes the pending ones
// and closes the connection.
func (c *conn) drain() {
	c.draining.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
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

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer close(c.pending)
	for {
		if err := c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout)); err != nil {
			return
		}
		if c.draining.Load() {
			return
		}
		maxFrame := c.s.cfg.MaxFrameBytes
		if !c.auth.authenticated {
			maxFrame = min(maxFrame, maxUnauthenticatedFrameBytes)
		}
		size, err := readFrameSize(c.br, maxFrame)
		if err != nil {
			c.readFailed(err)
			return
		}
		if !c.s.readBudget.TryAcquire(int64(size)) {
			c.s.m.readBudgetWaits.Inc()
			c.log.Debug("waiting for read budget", "frame_bytes", size)
			if err := c.s.readBudget.Acquire(c.ctx, int64(size)); err != nil {
				return
			}
		}
		// Waiting for the budget is not idleness (unless draining).
		_ = c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		if c.draining.Load() {
			c.s.readBudget.Release(int64(size))
			return
		}
		frame, err := readFrameBody(c.br, size)
		if err != nil {
			c.s.readBudget.Release(int64(size))
			c.readFailed(err)
			return
		}
		r, closeConn := c.handleFrame(frame)
		c.s.readBudget.Release(int64(size))
		if r != nil {
			select {
			case c.pending <- r:
			case <-c.ctx.Done():
				return
			}
		}
		if closeConn {
			return
		}
	}
}

func (c *conn) readFailed(err error) {
	var fe *frameError
	switch {
	case c.draining.Load() || c.ctx.Err() != nil:
	case errors.As(err, &fe):
		c.s.m.protocolError("bad_frame")
		c.log.Warn("closing connection", "err", err)
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		c.log.Debug("connection closed by client")
	default:
		c.log.Debug("read request", "err", err)
	}
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer c.s.removeConn(c)
	defer c.s.m.openConns.Add(-1)
	defer c.close()
	var buf []byte
	broken := false
	for r := range c.pending {
		if broken {
			continue
		}
		if r.produce != nil && !c.awaitProduce(r.produce) {
			broken = true
			continue
		}
		if r.isRaw {
			buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(r.raw)))
			buf = append(buf, r.raw...)
		} else {
			buf = appendResponse(buf[:0], r.corr, r.msg)
		}
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout)); err != nil {
			broken = true
			c.close()
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.log.Info("closing connection: write response", "api_key", r.key, "corr_id", r.corr, "err", err)
			broken = true
			c.close()
			continue
		}
		c.s.m.requestDone(r.key, r.start)
		if r.closeAfter {
			broken = true
			c.close()
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
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
	c.s.m.request(h.key, h.version)
	if _, ok := c.s.lookupAPI(h.key); !ok {
		c.s.m.protocolError("unknown_api_key")
		c.log.Warn("closing connection: sasl request without sasl configured", "api_key", h.key)
		return nil, true
	}
	if !c.auth.authenticated && h.key != keyApiVersions && h.key != keySASLHandshake && h.key != keySASLAuthenticate {
		c.s.m.protocolError("unauthenticated")
		c.log.Warn("closing connection: request before sasl authentication", "api_key", h.key)
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
		w, closeConn := c.handleProduce(req)
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
		r.msg = c.handleInitProducerID(req)
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

// authenticated marks SASL as complete.
func (c *conn) authenticated() {
	c.auth.authenticated = true
	c.auth.raw = false
	c.log.Debug("sasl authentication succeeded", "user", c.auth.session.user())
}
