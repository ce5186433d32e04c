package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/acl"
	"github.com/fluss-kafka/gateway/backoff"
	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/jwtauth"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/outage"
	"github.com/fluss-kafka/gateway/produce"
	"github.com/fluss-kafka/gateway/producerstate"
	"github.com/fluss-kafka/gateway/quota"
	"github.com/fluss-kafka/gateway/schemafollow"
	"github.com/fluss-kafka/gateway/schemaregistry"
	"github.com/fluss-kafka/gateway/sender"
	"github.com/fluss-kafka/gateway/transactions"
)

// Gateway owns every component and their lifetimes: the Fluss client, the
// writer, the produce path, the Kafka listeners and the admin server.
type Gateway struct {
	cfg *configs.Config
	set settings
	log *slog.Logger
	reg *prometheus.Registry
	m   *gatewayMetrics

	client  *fluss.Client
	acc     *accumulator.Accumulator
	snd     *sender.Sender
	tables  *produce.TableRegistry
	path    *produce.Path
	txn     *transactions.Coordinator // nil: transactional producers are refused
	acls    *acl.InForce
	quotas  *quota.Quotas // shared by every listener, swapped at reload
	health  *writeReadiness
	servers []*kafkaproto.Server
	admin   *adminServer
	// credentials are the listeners' credentials files in force, one per
	// path.
	credentials []*credentials.Store
	// tokenValidators check the listeners' OAUTHBEARER tokens; Run keeps
	// their keys fresh.
	tokenValidators []*jwtauth.Validator
	// loadLog reports the start-up load's retries while Fluss is away.
	loadLog *outage.Log

	// listeners are opened by listen, before Run, so that callers (tests,
	// the demo) know the ports.
	kafkaListeners []net.Listener
	adminListener  net.Listener

	mu       sync.Mutex // guards loadErr
	loadErr  error
	reloadMu sync.Mutex // one reload at a time
	// specs are the routes in force (the last applied), under reloadMu.
	specs []mapping.RouteSpec
}

func New(cfg *configs.Config, log *slog.Logger) (*Gateway, error) {
	set, err := settingsFrom(cfg)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g := &Gateway{cfg: cfg, set: set, log: log, reg: reg, m: newGatewayMetrics(reg), loadErr: errors.New("routes not loaded yet")}

	client, err := fluss.NewClient(set.fluss, fluss.WithLogger(log.With(slog.String("component", "fluss"))))
	if err != nil {
		return nil, fmt.Errorf("fluss client: %w", err)
	}
	g.client = client
	acc, err := accumulator.New(set.accumulator, accumulator.WithRegisterer(reg))
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("accumulator: %w", err)
	}
	snd, err := sender.New(set.sender, acc, client,
		sender.WithLogger(log.With(slog.String("component", "sender"))), sender.WithRegisterer(reg))
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("sender: %w", err)
	}
	g.acc, g.snd = acc, snd
	parts := produce.NewPartitionCache(client)
	g.tables = produce.NewTableRegistry(acc, parts)
	ids := newProducerIDs(client, set.initWriterTimeout, set.initWriterBackoffMax,
		outage.New(log, "fluss writer ids unavailable", "fluss writer ids available again", 0, nil), nil)
	pm := produce.NewMetrics(reg)
	g.path = produce.New(acc, parts, ids, pm, log.With(slog.String("component", "produce")))
	g.path.Leaderless = snd.Leaderless
	g.path.Follower = &schemafollow.Follower{Tables: client, Rebind: g.rebindRoutes, Log: log.With(slog.String("component", "produce")),
		Added: pm.ColumnsAdded, NotAdded: pm.FieldsNotAdded}
	// A table's batches waiting for Fluss may hold its share of the
	// requests' part of the memory budget, as its rows may of the rest.
	g.path.Appending = produce.NewTableAppends(int64(float64(set.accumulator.RequestMemory)*set.accumulator.MaxTableShare),
		log.With(slog.String("component", "produce")))
	states := producerstate.New(client, acc, producerstate.DefaultTable)
	states.Expiration, states.Log = set.stateExpiration, log.With(slog.String("component", "producerstate"))
	if err := g.path.EnableExactlyOnce(states, reg); err != nil {
		client.Close()
		return nil, fmt.Errorf("exactly-once metrics: %w", err)
	}
	if set.transactions {
		if g.txn, err = transactions.New(g.path, acc, ids, log.With(slog.String("component", "transactions")), client, set.txnMaxTimeout, set.txnMaxBytes, reg); err != nil {
			client.Close()
			return nil, fmt.Errorf("transaction metrics: %w", err)
		}
		g.path.Transactions = g.txn
	}
	g.acls = acl.NewInForce(set.acls)
	warnPlainTextUsers(log, cfg)
	if err := g.openCredentials(); err != nil {
		client.Close()
		return nil, err
	}
	if err := g.openTokenValidators(); err != nil {
		client.Close()
		return nil, err
	}
	g.health = newReadiness(flussProbe(client, g.path.Current), set.readyInterval, set.readyGrace,
		outage.New(log, "fluss not writable: readiness check failing", "fluss writable again: readiness check passing", 0, nil), nil)
	g.loadLog = outage.New(log, "cannot load routes yet; retrying", "routes loaded after retries", 0, nil)
	if set.registry != nil {
		if g.path.Registry, err = schemaregistry.New(*set.registry); err != nil {
			client.Close()
			return nil, fmt.Errorf("schema_registry: %w", err)
		}
		registerRegistryStats(reg, g.path.Registry)
		g.path.Follower.Registry = g.path.Registry
	}
	// One set of rates over every listener, as Kafka's quotas are per broker.
	if g.quotas, err = quota.New(quota.DefaultConfig(), set.quotas, reg,
		quota.WithLogger(log.With(slog.String("component", "quota")))); err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka.quotas: %w", err)
	}
	for i, l := range set.listeners {
		name := l.name
		l.kafka.Memory = acc.RequestMemory() // shared by every listener
		// One count per client address over every listener, as Kafka's
		// broker-wide max.connections.per.ip.
		l.kafka.ConnectionLimits = set.connLimits
		srv, err := kafkaproto.New(l.kafka, backend{g.path, g.txn, g.acls},
			kafkaproto.WithReadyCheck(g.routesReady),
			kafkaproto.WithProduceQuota(g.quotas),
			kafkaproto.WithLogger(log.With(slog.String("listener", name))),
			kafkaproto.WithRegisterer(prometheus.WrapRegistererWith(prometheus.Labels{"listener": name}, reg)))
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("listeners[%d] (%s): %w", i, name, err)
		}
		g.servers = append(g.servers, srv)
	}
	g.admin = newAdminServer(reg, g.ready, set.pprof, log.With(slog.String("component", "admin")))
	return g, nil
}

// settings are the components' configurations a configuration file
// yields: configs decodes and checks the file, each component keeps its own
// defaults and checks, and this is the one place that joins the two.
type settings struct {
	fluss fluss.Config
	// accumulator and sender: the two halves of the Fluss writer, from
	// the writer section.
	accumulator accumulator.Config
	sender      sender.Config
	listeners   []listenerSettings
	// connLimits are the per client address connection limits, shared by
	// every listener (kafka.max_connections_per_ip and its overrides).
	connLimits *kafkaproto.ConnectionLimits
	admin      string // admin server address; "" for none
	pprof      bool   // serve /debug/pprof/ on the admin address
	shutdown   time.Duration
	logLevel   slog.Level
	logJSON    bool
	routes     []mapping.RouteSpec    // compiled and bound by bindRoutes
	registry   *schemaregistry.Config // nil: no schema_registry
	acls       []configs.ACL          // compiled by acl.NewSet; none: allow all
	quotas     quota.Limits           // kafka.quotas

	initWriterTimeout    time.Duration // one InitWriter for a Kafka producer id
	initWriterBackoffMax time.Duration
	// stateExpiration: how long producer states outlive their producers
	// (fluss.writer_id_expiration).
	stateExpiration time.Duration
	readyInterval   time.Duration // readiness probe period
	readyGrace      time.Duration // failing probes tolerated this long
	transactions    bool          // serve transactional producers
	txnMaxTimeout   time.Duration
	txnMaxBytes     int64
}

// listenerSettings is one Kafka listener.
type listenerSettings struct {
	name  string
	bind  string
	kafka kafkaproto.Config
	// credentialsFile, when set, holds the SASL users; New opens it and
	// sets kafka.SASL.Credentials.
	credentialsFile string
	// oauth, when set, validates OAUTHBEARER tokens; New makes the
	// validator and sets kafka.SASL.Tokens.
	oauth *jwtauth.Config
}

func settingsFrom(cfg *configs.Config) (settings, error) {
	var set settings
	set.fluss = fluss.Config{
		Bootstrap:      cfg.Fluss.Bootstrap,
		RequestTimeout: cfg.Fluss.RequestTimeout,
		DialTimeout:    cfg.Fluss.DialTimeout,
		ClientID:       cfg.Fluss.ClientID,
	}
	if s := cfg.Fluss.SASL; s != nil {
		set.fluss.Username, set.fluss.Password = s.Username, s.Password
	}

	w := cfg.Writer
	set.accumulator = accumulator.DefaultConfig()
	set.accumulator.BatchSize = int(w.BatchSize)
	set.accumulator.Linger = w.Linger
	set.accumulator.BufferMemory = int64(w.BufferMemory)
	set.accumulator.MaxTableShare = w.MaxTableShare
	// An append waits for buffer memory at most as long as a record may
	// take to be delivered.
	set.accumulator.BufferWaitTimeout = w.DeliveryTimeout
	// One memory budget: the Kafka requests being read and decoded hold
	// their part of the buffer memory (Accumulator.RequestMemory).
	set.accumulator.RequestMemory = cfg.RequestMemory()
	if err := set.accumulator.Validate(); err != nil {
		return set, fmt.Errorf("writer: %w", err)
	}
	set.sender = sender.DefaultConfig()
	set.sender.Acks = int(w.Acks)
	set.sender.RequestTimeout = cfg.Fluss.RequestTimeout
	set.sender.MaxRequestSize = int(w.MaxRequestSize)
	set.sender.MaxInflightPerBucket = w.MaxInFlightPerBucket
	set.sender.DisableIdempotence = !w.Idempotence
	set.sender.Retries = w.Retries
	set.sender.RetryBackoff = w.RetryBackoff
	set.sender.RetryBackoffMax = max(w.RetryBackoff, set.sender.RetryBackoffMax)
	set.sender.DeliveryTimeout = w.DeliveryTimeout
	set.sender.KvMaxThrottle = w.KvMaxThrottle
	set.sender.LeaderWait = w.LeaderWait
	if err := set.sender.Validate(); err != nil {
		return set, fmt.Errorf("writer: %w", err)
	}

	limits, err := kafkaproto.NewConnectionLimits(cfg.Kafka.MaxConnectionsPerIP, cfg.Kafka.MaxConnectionsPerIPOverrides)
	if err != nil {
		return set, fmt.Errorf("kafka: %w", err)
	}
	set.connLimits = limits
	for i, l := range cfg.Listeners {
		kc, err := kafkaConfig(cfg, l)
		if err != nil {
			return set, fmt.Errorf("listeners[%d] (%s): %w", i, l.Name, err)
		}
		ls := listenerSettings{name: l.Name, bind: l.Bind, kafka: kc}
		if l.SASL != nil {
			ls.credentialsFile = l.SASL.CredentialsFile
			if o := l.SASL.OAuthBearer; o != nil {
				ls.oauth = &jwtauth.Config{JWKSURL: o.JWKSURL, JWKSFile: o.JWKSFile, Issuer: o.Issuer, Audience: o.Audience,
					PrincipalClaim: o.PrincipalClaim, ClockSkew: o.ClockSkew, JWKSRefresh: o.JWKSRefresh}
			}
		}
		set.listeners = append(set.listeners, ls)
	}
	set.admin, set.pprof = cfg.Admin.Address, cfg.Admin.Pprof
	set.readyInterval, set.readyGrace = cfg.Admin.ReadyInterval, cfg.Admin.ReadyGrace
	set.initWriterTimeout, set.initWriterBackoffMax = cfg.Fluss.InitWriterTimeout, cfg.Fluss.InitWriterBackoffMax
	set.stateExpiration = cfg.Fluss.WriterIDExpiration
	set.transactions, set.txnMaxTimeout = cfg.Kafka.Transactions, cfg.Kafka.TransactionMaxTimeout
	set.txnMaxBytes = int64(cfg.Kafka.TransactionMaxBytes)
	set.acls = cfg.ACLs
	set.quotas = quotaLimits(cfg.Kafka.Quotas)
	set.shutdown = cfg.Shutdown.Deadline
	set.logLevel, set.logJSON = logLevel(cfg.Logging)
	set.routes = cfg.Routes
	if r := cfg.SchemaRegistry; len(r.URLs) > 0 {
		rc := schemaregistry.DefaultConfig()
		rc.URLs, rc.ApicurioURL = r.URLs, r.ApicurioURL
		rc.Username, rc.Password, rc.BearerToken = r.Username, r.Password, r.BearerToken
		rc.CAFile, rc.RequestTimeout = r.CAFile, r.RequestTimeout
		set.registry = &rc
	}
	return set, nil
}

// quotaLimits turns kafka.quotas into the quotas' limits.
func quotaLimits(q configs.Quotas) quota.Limits {
	l := quota.Limits{ProducerByteRate: q.ProducerByteRate}
	overrides := func(m map[string]configs.Quota) map[string]int64 {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]int64, len(m))
		for k, v := range m {
			if v.ProducerByteRate != nil { // required: configs refuses a missing one
				out[k] = *v.ProducerByteRate
			}
		}
		return out
	}
	l.Principals, l.ClientIDs = overrides(q.Principals), overrides(q.ClientIDs)
	return l
}

func logLevel(c configs.Logging) (slog.Level, bool) {
	var level slog.Level
	switch strings.ToLower(c.Level) {
	case configs.LevelDebug:
		level = slog.LevelDebug
	case configs.LevelWarn:
		level = slog.LevelWarn
	case configs.LevelError:
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	return level, c.Format == configs.FormatJSON
}

// NewLogger is the logger the logging section asks for, writing to w.
func NewLogger(c configs.Logging, w io.Writer) *slog.Logger {
	level, json := logLevel(c)
	opts := &slog.HandlerOptions{Level: level}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// kafkaConfig turns a configured listener into the Kafka server's config.
// Its memory budget (Memory) is the writer's, set once the writer exists.
func kafkaConfig(cfg *configs.Config, l configs.Listener) (kafkaproto.Config, error) {
	k := cfg.Kafka
	kc := kafkaproto.Config{
		ClusterID:             k.ClusterID,
		MaxMessageBytes:       int(k.MaxMessageBytes),
		MaxFrameBytes:         int(cfg.MaxFrameBytes()),
		MaxFirstRequestBytes:  int(min(int64(k.MaxFirstRequestBytes), cfg.MaxFrameBytes())),
		RequestReadTimeout:    k.RequestReadTimeout,
		MinReadBytesPerSecond: int64(k.MinReadBytesPerSecond),
		MaxInFlightRequests:   k.MaxInFlightRequests,
		IdleTimeout:           k.IdleTimeout,
		ProducerStateTTL:      k.ProducerStateTTL,
		MaxProducerStates:     k.MaxProducerStates,
		MaxConnections:        l.MaxConnections, // per listener
	}
	adv := l.Advertised
	if adv == "" {
		adv = l.Bind
	}
	host, port, err := net.SplitHostPort(adv)
	if err != nil {
		return kc, fmt.Errorf("advertised address %q: %w", adv, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return kc, fmt.Errorf("advertised port %q: %w", port, err)
	}
	kc.AdvertisedHost, kc.AdvertisedPort = host, int32(p)
	if l.SASL != nil {
		sc := &kafkaproto.SASLConfig{Mechanisms: l.SASL.Mechanisms}
		for _, u := range l.SASL.Users {
			sc.Users = append(sc.Users, kafkaproto.SASLUser{Name: u.Username, Password: u.Password})
		}
		kc.SASL = sc
	}
	if l.TLS != nil {
		cert, err := tls.LoadX509KeyPair(l.TLS.CertFile, l.TLS.KeyFile)
		if err != nil {
			return kc, fmt.Errorf("tls key pair: %w", err)
		}
		tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if l.TLS.ClientCAFile != "" {
			pem, err := os.ReadFile(l.TLS.ClientCAFile)
			if err != nil {
				return kc, fmt.Errorf("tls client ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return kc, fmt.Errorf("tls client ca %s: no certificates found", l.TLS.ClientCAFile)
			}
			tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
			if kc.PrincipalRules, err = kafkaproto.ParsePrincipalRules(l.TLS.PrincipalMappingRules); err != nil {
				return kc, fmt.Errorf("tls principal mapping rules: %w", err)
			}
		}
		kc.TLS = tc
	}
	return kc, nil
}

// Listen opens the Kafka and admin listeners, before Run, so that the
// caller knows the ports.
func (g *Gateway) Listen() error {
	for _, l := range g.set.listeners {
		ln, err := net.Listen("tcp", l.bind)
		if err != nil {
			g.closeListeners()
			return fmt.Errorf("listen %s (%s): %w", l.bind, l.name, err)
		}
		g.kafkaListeners = append(g.kafkaListeners, ln)
	}
	if addr := g.set.admin; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			g.closeListeners()
			return fmt.Errorf("listen admin %s: %w", addr, err)
		}
		g.adminListener = ln
	}
	return nil
}

func (g *Gateway) closeListeners() {
	for _, l := range g.kafkaListeners {
		l.Close()
	}
	if g.adminListener != nil {
		g.adminListener.Close()
	}
}

// load binds the configured routes to their tables, retrying while Fluss
// cannot be reached. A route that does not fit its table is an error at
// once: retrying would not fix the configuration.
func (g *Gateway) load(ctx context.Context) error {
	retry := backoff.Policy{Initial: 500 * time.Millisecond, Max: 10 * time.Second}.Sequence()
	for {
		err := g.applyStartup(ctx)
		if err == nil {
			g.loadLog.OK()
			return nil
		}
		g.setLoadErr(err)
		if ctx.Err() != nil {
			return err
		}
		if !fluss.IsTransient(err) {
			return err
		}
		d := retry.Next()
		g.loadLog.Fail(err, slog.Duration("backoff", d))
		if !backoff.Sleep(ctx, d) {
			return err
		}
	}
}

// applyStartup applies the start-up configuration, unless a reload has
// already applied newer routes while load was retrying (the reload would
// otherwise be silently undone).
func (g *Gateway) applyStartup(ctx context.Context) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if g.path.Loaded() {
		return nil
	}
	return g.apply(ctx, g.set.routes, false)
}

// apply binds cfg's routes and swaps them in; fresh as in bindRoutes.
func (g *Gateway) apply(ctx context.Context, specs []mapping.RouteSpec, fresh bool) error {
	routes, infos, creating, err := bindRoutes(ctx, g.client, specs, fresh)
	if err != nil {
		return err
	}
	if err := g.path.PrepareExactlyOnce(ctx, routes); err != nil {
		return err
	}
	st, err := g.tables.Bind(routes, infos, creating)
	if err != nil {
		return err
	}
	g.path.SetState(st)
	g.specs = specs
	g.m.routes.Set(float64(len(routes.All())))
	g.setLoadErr(nil)
	all := routes.All()
	for i, r := range all {
		if i == maxListed {
			g.log.Info("routes bound (and more)", slog.Int("routes", len(all)-i), slog.Int("tables", len(infos)))
			break
		}
		info := infos[r.Table()]
		g.log.Info("route bound", slog.String("route", r.Name()), slog.String("table", r.Table().String()),
			slog.Int("buckets", info.Descriptor.BucketCount), slog.Bool("primary_key", info.Descriptor.HasPrimaryKey()))
	}
	logDurability(g.log, durabilityWarnings(routes, infos))
	return nil
}

// rebindRoutes binds the routes in force again with fresh table infos:
// columns were added to a table (schemafollow.Follower).
func (g *Gateway) rebindRoutes(ctx context.Context) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	return g.apply(ctx, g.specs, true)
}

// errShuttingDown is the final readiness error: once shutdown began, no
// load or reload makes the gateway ready again.
var errShuttingDown = errors.New("shutting down")

func (g *Gateway) setLoadErr(err error) {
	g.mu.Lock()
	if g.loadErr != errShuttingDown {
		g.loadErr = err
	}
	g.mu.Unlock()
}

// ready is /readyz: routes bound to tables found in Fluss, and Fluss
// writable (see writeReadiness).
func (g *Gateway) ready() error {
	if err := g.routesReady(); err != nil {
		return err
	}
	return g.health.err()
}

// routesReady is the Kafka listeners' ready check: until routes are bound
// (and once shutdown began) a client is told to retry. A Fluss blip does
// not refuse clients: their writes get the Fluss error's Kafka code.
func (g *Gateway) routesReady() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.loadErr
}

// Run serves until ctx ends, then shuts down in order (see shutdown) within
// the configured deadline. A second cancellation (force) abandons the wait
// at once.
func (g *Gateway) Run(ctx, force context.Context) error {
	r := &running{}
	if g.adminListener != nil {
		r.adminDone = make(chan error, 1)
		go func() { r.adminDone <- g.admin.Serve(g.adminListener) }()
	}
	credCtx, stopCred := context.WithCancel(ctx)
	defer g.watchCredentials(credCtx, credentialsPoll)() // deferred calls run last first: stopCred, then this wait
	defer g.refreshTokenKeys(credCtx)()
	defer stopCred()
	healthCtx, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		g.health.run(healthCtx)
	}()
	r.endHealth = sync.OnceFunc(func() {
		stopHealth()
		<-healthDone
	})
	defer r.endHealth()

	// The listeners serve from the start: until the routes are loaded the
	// ready check answers every client with a retriable error, instead of
	// leaving early connections unanswered in the accept queue.
	grp, gctx := errgroup.WithContext(ctx)
	r.serving = grp
	for i, srv := range g.servers {
		ln := g.kafkaListeners[i]
		grp.Go(func() error {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, kafkaproto.ErrServerClosed) {
				return fmt.Errorf("kafka listener %s: %w", ln.Addr(), err)
			}
			return nil
		})
	}
	if err := g.load(gctx); err != nil {
		// Nothing was accepted for writing yet (the writer does not run):
		// shutdown stops at once.
		errs := g.shutdown(context.WithoutCancel(ctx), r)
		return fmt.Errorf("load routes: %w", errors.Join(append([]error{err}, errs...)...))
	}

	runCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	r.stopWriter, r.writerDone = stopWriter, make(chan error, 1)
	go func() { r.writerDone <- g.snd.Run(runCtx) }()
	r.endSweep = func() {}
	if g.txn != nil {
		sweepCtx, stopSweep := context.WithCancel(runCtx)
		sweepDone := make(chan struct{})
		go func() {
			defer close(sweepDone)
			g.txn.Sweep(sweepCtx, g.client.FetchLog)
		}()
		r.endSweep = func() {
			stopSweep()
			<-sweepDone
		}
	}

	for _, ln := range g.kafkaListeners {
		g.log.Info("kafka listener serving", slog.String("addr", ln.Addr().String()))
	}
	<-gctx.Done()
	g.log.Info("shutting down", slog.Duration("deadline", g.set.shutdown))
	// Load balancers stop sending new connections while we drain.
	g.setLoadErr(errShuttingDown)

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.set.shutdown)
	defer cancel()
	go func() {
		select {
		case <-force.Done():
			g.log.Warn("second signal: stopping at once")
			cancel()
		case <-sctx.Done():
		}
		// Out of time: appends waiting for buffer memory give up too.
		<-sctx.Done()
		g.path.StopAppends()
	}()
	errs := g.shutdown(sctx, r)
	if len(errs) == 0 {
		g.log.Info("stopped cleanly")
	}
	return errors.Join(errs...)
}

// running is what Run started, for shutdown to stop.
type running struct {
	serving   *errgroup.Group // the Kafka listeners' Serve
	adminDone chan error      // nil: no admin server
	endHealth func()          // stops the readiness probe and waits for it
	// stopWriter and writerDone are nil until the routes are loaded and
	// the writer runs.
	stopWriter context.CancelFunc
	writerDone chan error
	// endSweep stops the transaction sweeper and waits for it (set with
	// the writer).
	endSweep func()
}

// shutdown is the gateway's one teardown, for a normal stop and for a
// failed start alike. Each step relies on the ones before it:
//  1. Every Kafka listener stops accepting and reading at once. Once the
//     writer runs, the Produce requests already read are answered within
//     ctx; before, none was accepted for writing and they close at once.
//  2. The listeners' Serve goroutines end.
//  3. The transaction sweeper stops (what it left undone, the next sweep
//     of any instance does). Batches still waiting for a Fluss partition
//     are appended, before the flush (only acks=0 ones can remain: the
//     others' answers were waited for).
//  4. The writer flushes, closes and its Run ends.
//  5. The readiness probe stops before the Fluss client closes, so that its
//     last probe does not report the closed client as an outage.
//  6. The Fluss client closes.
//  7. The admin server stops last: /metrics and /readyz answer throughout.
//  8. Listeners opened by Listen are closed, in case a Serve never took
//     them.
func (g *Gateway) shutdown(ctx context.Context, r *running) []error {
	var errs []error
	writing := r.writerDone != nil
	if writing {
		errs = shutdownServers(ctx, g.servers)
	} else {
		for _, srv := range g.servers {
			if err := srv.Close(); err != nil {
				errs = append(errs, fmt.Errorf("kafka close: %w", err))
			}
		}
	}
	if err := r.serving.Wait(); err != nil {
		errs = append(errs, err)
	}
	if writing {
		r.endSweep()
		if err := g.path.Drain(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain queued batches: %w", err))
		}
		if err := g.acc.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush: %w", err))
		}
		if err := g.snd.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("writer: %w", err))
		}
		r.stopWriter()
		if err := <-r.writerDone; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("writer: %w", err))
		}
	}
	r.endHealth()
	if err := g.client.Close(); err != nil {
		errs = append(errs, fmt.Errorf("fluss client: %w", err))
	}
	g.shutdownAdmin(r.adminDone)
	g.closeListeners()
	return errs
}

// shutdownServers shuts every Kafka server down at once: all listeners stop
// accepting and reading together, then their pending responses drain in
// parallel within ctx. (One after the other, a listener would keep taking
// new requests while another drains, and the last ones would find the
// deadline spent and abandon their responses.)
func shutdownServers(ctx context.Context, servers []*kafkaproto.Server) []error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() {
			if err := srv.Shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("kafka shutdown: %w", err)
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

func (g *Gateway) shutdownAdmin(done chan error) {
	if done == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := g.admin.Shutdown(ctx); err != nil {
		g.log.Warn("admin server shutdown", slog.Any("err", err))
	}
	<-done
}

// Validation is what `gateway validate` reports for a configuration the
// tables accept.
type Validation struct {
	// Routes are the routes bound to their tables.
	Routes *mapping.Routes
	// Warnings are what is accepted but unsafe, each naming its route and
	// table (replication factor 1).
	Warnings []string
}

// Validate binds cfg's routes to the real Fluss tables without starting
// anything, for `gateway validate`: every problem is reported, each naming
// its route, table and column.
func Validate(ctx context.Context, cfg *configs.Config) (*Validation, error) {
	set, err := settingsFrom(cfg)
	if err != nil {
		return nil, err
	}
	for i, l := range set.listeners {
		if l.oauth != nil && l.oauth.JWKSFile != "" {
			if _, err := jwtauth.New(*l.oauth, slog.New(slog.DiscardHandler)); err != nil {
				return nil, fmt.Errorf("listeners[%d] (%s).sasl.oauthbearer: %w", i, l.name, err)
			}
		}
		if l.credentialsFile == "" {
			continue
		}
		if _, err := credentials.Open(l.credentialsFile, slog.New(slog.DiscardHandler), nil); err != nil {
			return nil, fmt.Errorf("listeners[%d] (%s).sasl.credentials_file: %w", i, l.name, err)
		}
	}
	client, err := fluss.NewClient(set.fluss)
	if err != nil {
		return nil, fmt.Errorf("fluss client: %w", err)
	}
	defer client.Close()
	routes, infos, _, err := bindRoutes(ctx, client, set.routes, false)
	if err != nil {
		return nil, err
	}
	v := &Validation{Routes: routes}
	for _, w := range durabilityWarnings(routes, infos) {
		v.Warnings = append(v.Warnings, w.String())
	}
	if set.registry == nil {
		return v, nil
	}
	reg, err := schemaregistry.New(*set.registry)
	if err != nil {
		return nil, fmt.Errorf("schema_registry: %w", err)
	}
	defer reg.Close()
	if err := checkSubjects(ctx, reg, routes); err != nil {
		return nil, err
	}
	return v, nil
}

// checkSubjects checks each route that names a value or key subject
// against that subject's latest schema in the registry.
func checkSubjects(ctx context.Context, reg *schemaregistry.Client, routes *mapping.Routes) error {
	var errs []error
	for _, r := range routes.All() {
		spec := r.Spec()
		for _, sub := range []struct {
			what, subject string
			key           bool
		}{{"value", spec.Value.Subject, false}, {"key", spec.Key.Subject, true}} {
			if sub.subject == "" {
				continue
			}
			schema, err := reg.LatestSchema(ctx, sub.subject)
			if err != nil {
				errs = append(errs, fmt.Errorf("route %q: %s.subject %q: %w", r.Name(), sub.what, sub.subject, err))
				continue
			}
			if err := r.Converter().CheckWriterSchema(schema, sub.key); err != nil {
				errs = append(errs, fmt.Errorf("route %q (table %s): latest schema of %s.subject %q (id %d): %w",
					r.Name(), r.Table(), sub.what, sub.subject, schema.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
