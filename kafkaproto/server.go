package kafkaproto

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/backoff"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("kafka server closed")

// Server serves the producer side of the Kafka protocol. Its methods are safe
// for concurrent use.
type Server struct {
	cfg    Config
	topics Topics
	sink   Sink
	pids   ProducerIDs
	txns   Transactions // nil: transactional producers are refused
	log    *slog.Logger
	m      *metrics
	dec    *batchDecoder
	states *producerStates
	sasl   *saslAuthenticator // nil without SASL
	authz  Authorizer         // nil: everything allowed
	ready  func() error       // nil: always ready
	quota  ProduceQuota       // nil: no client quotas
	// unready is whether the last ready check failed (to log transitions).
	unready atomic.Bool
	// budget charges the memory of the requests being read and handled,
	// and of the batches decoded from them (Config.Memory).
	budget *readBudget
	// denyLog, connLog, authLog, txnLog, limitLog (per-address refusals)
	// and fullLog (listeners at MaxConnections) rate-limit lines clients
	// can trigger; the two limit kinds apart, so that a flood of one does
	// not hide the other.
	denyLog, connLog, authLog, txnLog, limitLog, fullLog *logLimiter
	// readers are the connections' read buffers: a connection holds one
	// only while it reads a request (or has more buffered), so that idle
	// connections, of which clients keep several each, hold none.
	readers sync.Pool

	// stopAccept is closed when the listeners close, ending Serve's wait
	// for a connection slot of a full listener.
	stopAccept     chan struct{}
	stopAcceptOnce sync.Once

	// ctx is the lifetime of every connection; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts connection goroutines.
	wg sync.WaitGroup

	// mu guards the fields below.
	mu        sync.Mutex
	closed    bool
	released  bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
}

// New builds a Server on top of b, which answers Metadata, takes the
// records and allocates producer ids for idempotent producers; if b also
// implements [Authorizer], it decides which principal may see and write
// which topic. It starts nothing: call Serve.
func New(cfg Config, b Backend, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka server config: %w", err)
	}
	if b == nil {
		return nil, errors.New("kafka server needs a backend")
	}
	cfg = cfg.withDefaults()
	o := options{logger: slog.New(slog.DiscardHandler), registerer: prometheus.NewRegistry(), now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	budget := newReadBudget(cfg.Memory, cfg.MaxReadBytes, cfg.MaxFrameBytes)
	dec, err := newBatchDecoder(cfg.MaxDecompressedBytes, budget)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        cfg,
		topics:     b,
		sink:       b,
		pids:       b,
		log:        o.logger,
		dec:        dec,
		states:     newProducerStates(cfg.MaxProducerStates, cfg.ProducerStateTTL, o.now),
		ready:      o.ready,
		quota:      o.quota,
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[*conn]struct{}),
		budget:     budget,
		denyLog:    newLogLimiter(time.Second),
		connLog:    newLogLimiter(time.Second),
		authLog:    newLogLimiter(time.Second),
		txnLog:     newLogLimiter(time.Second),
		limitLog:   newLogLimiter(time.Second),
		fullLog:    newLogLimiter(time.Second),
		stopAccept: make(chan struct{}),
	}
	s.readers.New = func() any { return bufio.NewReaderSize(nil, connReadBuffer) }
	if a, ok := b.(Authorizer); ok {
		s.authz = a
	}
	if t, ok := b.(Transactions); ok {
		s.txns = t
	}
	if cfg.SASL != nil {
		if s.sasl, err = newSASLAuthenticator(cfg.SASL); err != nil {
			dec.close()
			return nil, err
		}
	}
	s.m = newMetrics(o.registerer, func() float64 { return float64(s.states.len()) },
		func() float64 { return float64(s.budget.inUse.Load()) },
		func() float64 { return float64(s.budget.collected.Load()) })
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Serve accepts connections on l (wrapped in TLS when configured) until
// Shutdown or Close, and then returns ErrServerClosed. Each connection gets
// one reader and one writer goroutine, counted and awaited by Shutdown and
// Close. Config.MaxConnections bounds the connections of l alone (each
// call of Serve is one listener); Config.ConnectionLimits is shared.
func (s *Server) Serve(l net.Listener) error {
	if s.cfg.TLS != nil {
		l = tls.NewListener(l, s.cfg.TLS)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	s.log.Info("kafka listener started", "addr", l.Addr().String())

	// A temporary accept error (out of file descriptors, say) lasts a
	// while: retrying at once would spin.
	acceptRetry := backoff.Policy{Initial: 5 * time.Millisecond, Max: time.Second}.Sequence()
	// slots holds a token per open connection of l when MaxConnections
	// bounds them (nil otherwise); a connection gives its token back in
	// removeConn.
	var slots chan struct{}
	if s.cfg.MaxConnections > 0 {
		slots = make(chan struct{}, s.cfg.MaxConnections)
	}
	for {
		if !s.awaitSlot(l, slots) {
			return ErrServerClosed
		}
		nc, err := l.Accept()
		if err != nil {
			releaseSlot(slots)
			if s.isClosed() {
				return ErrServerClosed
			}
			if temporaryAcceptError(err) {
				d := acceptRetry.Next()
				s.log.Warn("accept", "err", err, "retry_in", d)
				backoff.Sleep(s.ctx, d) // closing ends the wait; Accept then fails for good
				continue
			}
			return fmt.Errorf("accept on %s: %w", l.Addr(), err)
		}
		acceptRetry.Reset()
		ip := remoteIP(nc)
		if ok, limit := s.cfg.ConnectionLimits.acquire(ip); !ok {
			releaseSlot(slots)
			s.refuse(nc, ip, limit)
			continue
		}
		if !s.startConn(nc, ip, slots) {
			s.cfg.ConnectionLimits.release(ip)
			releaseSlot(slots)
			_ = nc.Close()
			return ErrServerClosed
		}
	}
}

// awaitSlot takes one of l's connection slots (none to take when slots
// is nil), waiting while the listener is full: as with Kafka's
// max.connections, new connections then wait in the listen backlog (and
// time out there) until one closes. False once the listeners close.
func (s *Server) awaitSlot(l net.Listener, slots chan struct{}) bool {
	if slots == nil {
		return true
	}
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	s.m.listenerFull.Inc()
	if ok, suppressed := s.fullLog.allow(time.Now()); ok {
		s.log.Warn("listener at its connection limit: new connections wait until one closes",
			"addr", l.Addr().String(), "max_connections", cap(slots), "suppressed", suppressed)
	}
	select {
	case slots <- struct{}{}:
		return true
	case <-s.stopAccept:
		return false
	}
}

// releaseSlot gives back a slot awaitSlot took.
func releaseSlot(slots chan struct{}) {
	if slots != nil {
		<-slots
	}
}

// refuse closes a connection past its address's limit (Kafka's
// max.connections.per.ip), logged and counted.
func (s *Server) refuse(nc net.Conn, ip netip.Addr, limit int) {
	s.m.connsRefused.WithLabelValues("per_ip").Inc()
	if ok, suppressed := s.limitLog.allow(time.Now()); ok {
		s.log.Warn("connection refused: its address is at its connection limit", "remote", nc.RemoteAddr().String(),
			"ip", ip.String(), "max_connections_per_ip", limit, "suppressed", suppressed)
	}
	_ = nc.Close()
}

// temporaryAcceptError reports whether an accept failure may go away by
// itself (out of file descriptors, EMFILE/ENFILE, or a timeout), so Serve
// backs off and retries as net/http does, instead of returning.
func temporaryAcceptError(err error) bool {
	var te interface{ Temporary() bool }
	var ne net.Error
	return (errors.As(err, &te) && te.Temporary()) || (errors.As(err, &ne) && ne.Timeout())
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// startConn registers a connection and starts its goroutines, unless the
// server is closing.
func (s *Server) startConn(nc net.Conn, ip netip.Addr, slots chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	c := newConn(s, nc)
	c.ip, c.slots = ip, slots
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	go c.readLoop() // the writer starts when there is something to write
	return true
}

// removeConn forgets a connection and gives back its limits' slots, once:
// only a registered connection holds them (test connections on pipes are
// never registered).
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	_, ok := s.conns[c]
	delete(s.conns, c)
	s.mu.Unlock()
	if ok {
		s.cfg.ConnectionLimits.release(c.ip)
		releaseSlot(c.slots)
	}
}

// Shutdown stops accepting, stops reading new requests, and waits until
// every request already read is answered and every connection is closed; if
// ctx ends first, it calls Close and returns ctx's error.
//
// A request is answered once read, so a client never has to resend one
// whose records reached the Sink (it would be written twice, by this
// instance and the next): a request fully received (in the connection's
// buffer, or being handled) is handled and answered, a Produce once its
// PartitionWrites complete (or its timeout_ms passes); a request only
// partly received is abandoned, and none of it has reached the Sink. After
// the last response a connection is half-closed (FIN) and lingers briefly
// for the client to close its side, so that the responses are not lost to
// a reset caused by unread bytes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	// Connections drain before the listeners close, so that a client that
	// sees the port closed knows nothing it sends from then on is read.
	for c := range s.conns {
		c.drain()
	}
	s.closeListenersLocked()
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { // owned here: exits once wg is done, which Close guarantees
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.release()
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// Close closes the listeners and every connection at once, abandoning
// pending responses, and waits for the connection goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.closeListenersLocked()
	s.cancel()
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.release()
	return nil
}

func (s *Server) closeListenersLocked() {
	s.stopAcceptOnce.Do(func() { close(s.stopAccept) })
	for l := range s.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Warn("close listener", "addr", l.Addr().String(), "err", err)
		}
		delete(s.listeners, l)
	}
}

// release frees the decoder once all connections are gone.
func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released && len(s.conns) == 0 {
		s.released = true
		s.dec.close()
		s.cancel()
	}
}
