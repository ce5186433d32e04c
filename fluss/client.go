package fluss

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
)

// Config configures a Client. The zero value of a field means its default.
type Config struct {
	// Bootstrap lists host:port addresses of any Fluss servers (coordinator
	// or tablet servers); the client learns the rest from metadata.
	Bootstrap []string
	// Username and Password enable SASL/PLAIN authentication on every
	// connection when Username is non-empty.
	Username, Password string
	// RequestTimeout bounds every request without its own timeout, and is
	// added as overhead to the server-side timeout of writes. Default 30s.
	RequestTimeout time.Duration
	// DialTimeout bounds connecting plus the ApiVersions/Authenticate
	// handshake. Default 10s.
	DialTimeout time.Duration
	// ClientID is sent as client_software_name in ApiVersions.
	// Default "fluss-kafka-gateway".
	ClientID string
	// MaxResponseSize bounds one response frame. Default 100 MiB.
	MaxResponseSize int
}

// Defaults applied by NewClient.
const (
	DefaultRequestTimeout  = 30 * time.Second
	DefaultDialTimeout     = 10 * time.Second
	DefaultClientID        = "fluss-kafka-gateway"
	DefaultMaxResponseSize = frame.DefaultMaxFrameSize
	clientSoftwareVersion  = "0.1.0"
)

func (c Config) withDefaults() Config {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.MaxResponseSize == 0 {
		c.MaxResponseSize = DefaultMaxResponseSize
	}
	c.Bootstrap = append([]string(nil), c.Bootstrap...)
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if len(c.Bootstrap) == 0 {
		return errors.New("fluss config: bootstrap needs at least one host:port")
	}
	for _, a := range c.Bootstrap {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("fluss config: bootstrap address %q: %w", a, err)
		}
		if host == "" {
			return fmt.Errorf("fluss config: bootstrap address %q has no host", a)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("fluss config: bootstrap address %q has an invalid port", a)
		}
	}
	if c.Password != "" && c.Username == "" {
		return errors.New("fluss config: password is set but username is empty")
	}
	if c.RequestTimeout < 0 {
		return fmt.Errorf("fluss config: request timeout %s is negative", c.RequestTimeout)
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("fluss config: dial timeout %s is negative", c.DialTimeout)
	}
	if c.MaxResponseSize < 0 {
		return fmt.Errorf("fluss config: max response size %d is negative", c.MaxResponseSize)
	}
	return nil
}

// Option sets a collaborator of the Client.
type Option func(*options)

type options struct {
	logger *slog.Logger
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDialer replaces the TCP dialer (tests, virtual networks).
func WithDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(o *options) { o.dial = dial }
}

// Client talks to one Fluss cluster: one connection per server, opened on
// first use, a metadata cache, and the admin, write and read calls.
//
// NewClient starts no goroutine and opens no connection. Each connection
// owns a reader, a writer and a silence watcher (conn.watchSilence)
// goroutine, stopped by Close. A bucket-leader
// refresh shared by concurrent BucketLeader callers runs on its own
// goroutine, which ends within the dial and request timeouts (at once after
// Close). All methods are safe for concurrent use.
type Client struct {
	cfg     Config
	connCfg *connConfig
	log     *slog.Logger

	// meta is the current metadata snapshot; metaMu serializes writers
	// (readers only Load).
	meta   atomic.Pointer[clusterSnapshot]
	metaMu sync.Mutex

	// refreshMu guards refreshing: bucket-leader refreshes in flight.
	refreshMu  sync.Mutex
	refreshing map[physicalKey]*refreshCall

	// coordDownUntil is when (unix ns) callAnyServer stops trying the
	// coordinator last, after failing to reach it.
	coordDownUntil atomic.Int64

	// initAddr is the tablet server InitWriter last succeeded on (nil:
	// none yet, or it failed since).
	initAddr atomic.Pointer[string]

	// poolMu guards conns and closed.
	poolMu sync.Mutex
	conns  map[string]*connSlot
	closed bool
}

// connSlot is a pool entry; ready is closed once c or err is set.
type connSlot struct {
	ready chan struct{}
	c     *conn
	err   error
}

// NewClient validates cfg and returns a Client. It does not connect.
func NewClient(cfg Config, opts ...Option) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.dial == nil {
		var d net.Dialer
		o.dial = d.DialContext
	}
	c := &Client{
		cfg: cfg,
		connCfg: &connConfig{
			dial:           o.dial,
			dialTimeout:    cfg.DialTimeout,
			requestTimeout: cfg.RequestTimeout,
			clientName:     cfg.ClientID,
			clientVersion:  clientSoftwareVersion,
			username:       cfg.Username,
			password:       cfg.Password,
			maxFrameSize:   cfg.MaxResponseSize,
			logger:         o.logger,
			silentAfter:    min(silentConnCheck, cfg.RequestTimeout/2),
		},
		log:        o.logger,
		conns:      make(map[string]*connSlot),
		refreshing: make(map[physicalKey]*refreshCall),
	}
	c.connCfg.gone = c.serverLeft
	c.meta.Store(emptySnapshot())
	return c, nil
}

// silentConnCheck is how long a connection with requests waiting may stay
// silent before the client asks whether its server is still in the
// cluster (see conn.watchSilence).
const silentConnCheck = 2 * time.Second

// serverLeft reports whether fresh cluster metadata no longer lists the
// tablet server at addr: Fluss has declared it dead (its ZooKeeper session
// expired) and moved its buckets' leadership. The coordinator and the
// bootstrap addresses are never reported; an error fetching metadata
// reports nothing either. (The refresh itself retries the writes stuck on
// other servers behind it: see getMetadata.)
func (c *Client) serverLeft(ctx context.Context, addr string) bool {
	if slices.Contains(c.cfg.Bootstrap, addr) {
		return false
	}
	if co := c.meta.Load().coordinator; co == nil || co.Addr() == addr {
		return false
	}
	if err := c.refreshCluster(ctx); err != nil {
		return false
	}
	snap := c.meta.Load()
	return len(snap.servers) > 0 && !snap.lists(addr)
}

// abandonStuckWrites fails, for a retry, the writes on the other servers'
// connections that have waited longer than silentConnCheck when server
// addr left the cluster: with acks=all they wait for addr as a follower,
// and Fluss does not answer them when it drops addr from the in-sync
// replicas, only at their timeout (REQUEST_TIME_OUT after the request's
// 30 s). A retry is answered once the shrunk replica set has the rows;
// writes are idempotent (writer id and sequence), so the copy a retry
// makes of a write the leader already holds is dropped.
func (c *Client) abandonStuckWrites(addr string) {
	before := time.Now().Add(-c.connCfg.silentAfter)
	err := fmt.Errorf("%w: waited on a write while %s left the cluster; retrying", ErrRequestTimeout, addr)
	c.poolMu.Lock()
	var conns []*conn
	for a, s := range c.conns {
		select {
		case <-s.ready:
			if a != addr && s.c != nil {
				conns = append(conns, s.c)
			}
		default:
		}
	}
	c.poolMu.Unlock()
	n := 0
	for _, cn := range conns {
		n += cn.abandonWrites(before, err)
	}
	if n > 0 {
		c.log.Warn("fluss server left the cluster: retrying the writes that waited on it as a follower",
			slog.String("server", addr), slog.Int("writes", n))
	}
}

// Close closes every connection, failing requests in flight with
// ErrConnectionClosed; later calls return ErrClosed. Idempotent.
func (c *Client) Close() error {
	c.poolMu.Lock()
	if c.closed {
		c.poolMu.Unlock()
		return nil
	}
	c.closed = true
	slots := c.conns
	c.conns = nil
	c.poolMu.Unlock()
	for _, s := range slots {
		<-s.ready // a dial in progress ends within DialTimeout
		if s.c != nil {
			s.c.close()
		}
	}
	return nil
}

// connTo returns the live connection to addr, dialling it if needed.
// Concurrent callers share one dial.
func (c *Client) connTo(ctx context.Context, addr string) (*conn, error) {
	var lastErr error
	for range 3 {
		c.poolMu.Lock()
		if c.closed {
			c.poolMu.Unlock()
			return nil, ErrClosed
		}
		s, ok := c.conns[addr]
		if !ok {
			s = &connSlot{ready: make(chan struct{})}
			c.conns[addr] = s
			c.poolMu.Unlock()
			s.c, s.err = dialConn(ctx, addr, c.connCfg)
			close(s.ready)
			if s.err != nil {
				c.dropSlot(addr, s)
				return nil, s.err
			}
			return s.c, nil
		}
		c.poolMu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s.err == nil && s.c.alive() {
			return s.c, nil
		}
		if s.err != nil {
			lastErr = s.err
		}
		c.dropSlot(addr, s)
	}
	if lastErr == nil {
		lastErr = ErrConnectionClosed
	}
	return nil, fmt.Errorf("connect to %s: %w", addr, lastErr)
}

// dropSlot removes s from the pool if it is still the entry for addr, and
// closes its (dead) connection.
func (c *Client) dropSlot(addr string, s *connSlot) {
	c.poolMu.Lock()
	if c.conns[addr] == s {
		delete(c.conns, addr)
	}
	c.poolMu.Unlock()
	if s.c != nil {
		s.c.close()
	}
}

// serverConn returns the connection to a tablet server by id, refreshing
// cluster metadata once when the id is unknown (still unknown:
// LEADER_NOT_AVAILABLE, retriable after a leader refresh).
func (c *Client) serverConn(ctx context.Context, serverID int32) (*conn, error) {
	node, ok := c.meta.Load().servers[serverID]
	if !ok {
		if err := c.refreshCluster(ctx); err != nil {
			return nil, err
		}
		if node, ok = c.meta.Load().servers[serverID]; !ok {
			// Metadata no longer lists it: the caller's leader is stale.
			// Retriable after a leader refresh, as Java's LeaderNotAvailable
			// for an unknown destination node.
			return nil, ErrorForCode(44, fmt.Sprintf("tablet server %d is not in cluster metadata", serverID))
		}
	}
	cn, err := c.connTo(ctx, node.Addr())
	if err == nil || ctx.Err() != nil {
		return cn, err
	}
	// A restarted server may listen on another port: learn where it is now
	// and try once more if it moved.
	if rerr := c.refreshCluster(ctx); rerr != nil {
		return nil, err
	}
	moved, ok := c.meta.Load().servers[serverID]
	if !ok || moved.Addr() == node.Addr() {
		return nil, err
	}
	return c.connTo(ctx, moved.Addr())
}

// coordinatorConn returns the connection to the coordinator.
func (c *Client) coordinatorConn(ctx context.Context) (*conn, error) {
	snap := c.meta.Load()
	if snap.coordinator == nil {
		if err := c.refreshCluster(ctx); err != nil {
			return nil, err
		}
		if snap = c.meta.Load(); snap.coordinator == nil {
			return nil, errors.New("fluss: metadata names no coordinator")
		}
	}
	return c.connTo(ctx, snap.coordinator.Addr())
}

// coordinatorBackoff is how long callAnyServer tries the coordinator last
// after failing to reach it, so that a coordinator outage does not cost
// every metadata request a dial (up to DialTimeout when packets are dropped).
const coordinatorBackoff = 5 * time.Second

// callAnyServer sends a read-only request (GET_METADATA, GET_TABLE_INFO and
// the other calls both roles serve) and decodes the answer into resp. Since
// any server will do, a coordinator outage is survived through tablet
// servers: it tries the coordinator when known (last, for
// coordinatorBackoff after it failed), then the bootstrap addresses, then
// the tablet servers metadata listed, each address once, moving on when a
// server cannot be reached, its connection fails or it answers that it is
// not serving yet (notServing); any other error answer is returned as is.
func (c *Client) callAnyServer(ctx context.Context, apiKey int16, req, resp proto.Message) error {
	snap := c.meta.Load()
	addrs := make([]string, 0, 1+len(c.cfg.Bootstrap)+len(snap.servers))
	coordAddr := ""
	coordLast := false
	if co := snap.coordinator; co != nil {
		coordAddr = co.Addr()
		coordLast = time.Now().UnixNano() < c.coordDownUntil.Load()
		if !coordLast {
			addrs = append(addrs, coordAddr)
		}
	}
	addrs = append(addrs, c.cfg.Bootstrap...)
	for _, id := range snap.serverIDs() {
		addrs = append(addrs, snap.servers[id].Addr())
	}
	if coordLast {
		addrs = append(addrs, coordAddr)
	}
	var errs []error
	tried := make(map[string]bool, len(addrs))
	for _, addr := range addrs {
		if tried[addr] {
			continue
		}
		tried[addr] = true
		cn, err := c.connTo(ctx, addr)
		if err == nil {
			if err = cn.call(ctx, apiKey, req, resp, 0); err == nil {
				if addr == coordAddr {
					c.coordDownUntil.Store(0)
				}
				return nil
			}
			err = fmt.Errorf("on %s: %w", addr, err)
			if answered(err) && !notServing(err) {
				return err
			}
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
		if addr == coordAddr {
			c.coordDownUntil.Store(time.Now().Add(coordinatorBackoff).UnixNano())
		}
	}
	return fmt.Errorf("no fluss server answered: %w", errors.Join(errs...))
}

// notServing reports an answer that says the server cannot serve any
// request yet, not that this one is wrong: a coordinator just started
// answers UNKNOWN_SERVER_ERROR ("CoordinatorEventProcessor is not
// initialized yet") for seconds, and a standby one NOT_COORDINATOR_LEADER.
// Another server may answer.
func notServing(err error) bool {
	return errors.Is(err, ErrUnknownServerError) || errors.Is(err, ErrNotCoordinatorLeader)
}

// Reach opens a TCP connection to addr through the client's dialer and
// closes it: whether this process reaches the server at all, whatever its
// answers wait on (its requests may queue behind writes it holds, or it may
// be stalled by a fault elsewhere in the cluster). Bounded by
// Config.DialTimeout.
func (c *Client) Reach(ctx context.Context, addr string) error {
	dctx, cancel := context.WithTimeout(ctx, c.connCfg.dialTimeout)
	defer cancel()
	nc, err := c.connCfg.dial(dctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial fluss server %s: %w", addr, dialTimeoutError(ctx, err, c.connCfg.dialTimeout))
	}
	return nc.Close()
}

// RawRequest sends one request frame with the given api key, version and
// protobuf payload to addr (host:port), bypassing version negotiation, and
// returns the raw response. timeout <= 0 means Config.RequestTimeout. For
// tests and fakes.
func (c *Client) RawRequest(ctx context.Context, addr string, apiKey, apiVersion int16, payload []byte, timeout time.Duration) (RawResponse, error) {
	cn, err := c.connTo(ctx, addr)
	if err != nil {
		return RawResponse{}, err
	}
	r, err := cn.roundTrip(ctx, frame.RequestHeader{APIKey: apiKey, APIVersion: apiVersion}, nil, payload, timeout)
	if err != nil {
		return RawResponse{}, err
	}
	return RawResponse{ErrorResponse: r.Type == frame.ErrorResponse, Payload: r.Payload}, nil
}

// RawResponse is the answer to RawRequest: the protobuf payload of a
// SUCCESS_RESPONSE, or of an ERROR_RESPONSE (an ErrorResponse message).
type RawResponse struct {
	ErrorResponse bool
	Payload       []byte
}

// Err returns the *Error carried by an ERROR_RESPONSE, or nil.
func (r RawResponse) Err() error {
	if !r.ErrorResponse {
		return nil
	}
	return decodeErrorResponse(r.Payload)
}

// callCoordinator sends an admin request to the coordinator.
func (c *Client) callCoordinator(ctx context.Context, what string, apiKey int16, req, resp proto.Message) error {
	cn, err := c.coordinatorConn(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := cn.call(ctx, apiKey, req, resp, 0); err != nil {
		return fmt.Errorf("%s on coordinator %s: %w", what, cn.addr, err)
	}
	return nil
}

// callServer sends a request to one tablet server with a timeout.
func (c *Client) callServer(ctx context.Context, what string, serverID int32, apiKey int16, req, resp proto.Message, timeout time.Duration) error {
	p, err := c.startServer(ctx, what, serverID, apiKey, req, timeout)
	if err != nil {
		return err
	}
	return c.finishServer(ctx, what, serverID, p, resp)
}

// startServer is the first half of callServer: it returns once the request
// is queued on the tablet server's connection (requests queued on one
// connection reach the server in that order).
func (c *Client) startServer(ctx context.Context, what string, serverID int32, apiKey int16, req proto.Message, timeout time.Duration) (*pendingCall, error) {
	cn, err := c.serverConn(ctx, serverID)
	if err != nil {
		return nil, fmt.Errorf("%s to tablet server %d: %w", what, serverID, err)
	}
	return c.startOn(ctx, what, serverID, cn, apiKey, req, timeout)
}

// serverVersion returns the connection to a tablet server and the version
// it negotiated for apiKey, for requests whose fields depend on it.
func (c *Client) serverVersion(ctx context.Context, what string, serverID int32, apiKey int16) (*conn, int16, error) {
	cn, err := c.serverConn(ctx, serverID)
	if err != nil {
		return nil, 0, fmt.Errorf("%s to tablet server %d: %w", what, serverID, err)
	}
	v, err := cn.version(apiKey)
	if err != nil {
		return nil, 0, fmt.Errorf("%s to tablet server %d: %w", what, serverID, err)
	}
	return cn, v, nil
}

// startOn queues req on cn, a tablet server's connection, at the version
// it negotiated for apiKey.
func (c *Client) startOn(ctx context.Context, what string, serverID int32, cn *conn, apiKey int16, req proto.Message, timeout time.Duration) (*pendingCall, error) {
	p, err := cn.start(ctx, apiKey, req, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s to tablet server %d: %w", what, serverID, err)
	}
	return p, nil
}

// startWrite queues a write request on cn at version v (what serverVersion
// returned), its batches not copied.
func (c *Client) startWrite(ctx context.Context, what string, serverID int32, cn *conn, apiKey, v int16, req *splicedWrite, timeout time.Duration) (*pendingCall, error) {
	p, err := cn.sendFrame(ctx, frame.RequestHeader{APIKey: apiKey, APIVersion: v}, nil, nil, req, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s to tablet server %d: %w", what, serverID, err)
	}
	return p, nil
}

// finishServer is the second half of callServer: it waits for the answer of
// a request startServer queued and decodes it into resp.
func (c *Client) finishServer(ctx context.Context, what string, serverID int32, p *pendingCall, resp proto.Message) error {
	if err := p.decode(ctx, resp); err != nil {
		return fmt.Errorf("%s to tablet server %d: %w", what, serverID, err)
	}
	return nil
}
