package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
	"github.com/fluss-kafka/gateway/sender"
)

// Config is the whole gateway configuration file. Load and Parse return it
// with every default filled in and validated.
type Config struct {
	// Listeners are the Kafka-protocol listeners. Default: one listener
	// named "plain" binding 0.0.0.0:9092 and advertising localhost:9092.
	Listeners []Listener `yaml:"listeners"`
	// Kafka holds the Kafka-protocol limits shared by every listener.
	Kafka Kafka `yaml:"kafka"`
	// Fluss is how the gateway reaches the Fluss cluster.
	Fluss Fluss `yaml:"fluss"`
	// Writer holds the write-path defaults towards Fluss.
	Writer Writer `yaml:"writer"`
	// SchemaRegistry is the registry routes with avro, protobuf or
	// json_schema values or keys read writer schemas from.
	SchemaRegistry SchemaRegistry `yaml:"schema_registry"`
	// Admin is the HTTP server for /metrics, /livez and /readyz.
	Admin Admin `yaml:"admin"`
	// Logging selects the log level and format.
	Logging Logging `yaml:"logging"`
	// Shutdown bounds a graceful stop.
	Shutdown Shutdown `yaml:"shutdown"`
	// Routes map Kafka topics to Fluss tables. Exact topic routes are
	// matched first, then pattern routes in file order. The route type,
	// its defaults and its checks are mapping's (mapping.RouteSpec).
	Routes []mapping.RouteSpec `yaml:"routes"`
	// ACLs say which principals may produce to (Write) or see (Describe)
	// which topics, in Kafka's ACL model. None: every client may use every
	// routed topic. Reloaded with the routes.
	ACLs []ACL `yaml:"acls"`
}

// ACL is one access control entry, as Kafka's kafka-acls.sh writes them
// for topics: a principal, an operation, a topic name or prefix, allow or
// deny. Once any ACL is configured, what no ACL allows is denied, and a
// deny wins over any allow.
type ACL struct {
	// Principal is "User:<name>" (the SASL username; User:ANONYMOUS on a
	// listener without SASL) or "User:*" for every principal.
	Principal string `yaml:"principal"`
	// Operation is Write (produce; implies Describe), Describe (see the
	// topic in Metadata) or All.
	Operation string `yaml:"operation"`
	// Topic is a topic name, a name prefix (PatternType prefixed) or "*"
	// for every topic.
	Topic string `yaml:"topic"`
	// PatternType is literal or prefixed. Default literal.
	PatternType string `yaml:"pattern_type"`
	// Permission is allow or deny. Default allow.
	Permission string `yaml:"permission"`
}

// ACL values.
const (
	ACLOperationWrite    = "Write"
	ACLOperationDescribe = "Describe"
	ACLOperationAll      = "All"

	ACLPatternLiteral  = "literal"
	ACLPatternPrefixed = "prefixed"

	ACLAllow = "allow"
	ACLDeny  = "deny"

	// ACLPrincipalPrefix starts every principal; "User:*" is every one.
	ACLPrincipalPrefix = kafkaproto.UserPrincipalPrefix
	ACLWildcard        = "*"
)

// Listener is one Kafka-protocol listener.
type Listener struct {
	// Name identifies the listener in logs and metrics. Default
	// "listener-<index>".
	Name string `yaml:"name"`
	// Bind is the host:port to listen on.
	Bind string `yaml:"bind"`
	// Advertised is the host:port returned to clients in Metadata. Default:
	// Bind, which must then name a specific host.
	Advertised string `yaml:"advertised"`
	// TLS, when set, makes the listener speak TLS.
	TLS *TLS `yaml:"tls"`
	// SASL, when set, requires clients to authenticate.
	SASL *SASL `yaml:"sasl"`
	// MaxConnections bounds the connections open at once on this listener
	// (Kafka's listener.name.<name>.max.connections): while it is reached
	// the listener accepts nothing, and new connections wait in the
	// listen backlog until one closes. Default 0: no limit.
	MaxConnections int `yaml:"max_connections"`
}

// TLS is a listener's server certificate and optional client CA.
type TLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, requires and verifies client certificates.
	ClientCAFile string `yaml:"client_ca_file"`
	// PrincipalMappingRules map a client certificate's subject to the
	// connection's principal, in Kafka's ssl.principal.mapping.rules
	// syntax (kafkaproto.PrincipalRules); none is DEFAULT, the whole
	// subject. Only with ClientCAFile.
	PrincipalMappingRules []string `yaml:"principal_mapping_rules"`
}

// SASL mechanisms a listener can offer.
const (
	MechanismPlain       = kafkaproto.MechanismPlain
	MechanismScramSHA256 = kafkaproto.MechanismSCRAMSHA256
	MechanismScramSHA512 = kafkaproto.MechanismSCRAMSHA512
	MechanismOAuthBearer = kafkaproto.MechanismOAuthBearer
)

// SASL lists the mechanisms a listener offers and the users it accepts.
type SASL struct {
	// Mechanisms offered, in order. Default [PLAIN].
	Mechanisms []string `yaml:"mechanisms"`
	// Users are the accepted credentials with plain-text passwords; SCRAM
	// credentials are derived from the same passwords. Either Users or
	// CredentialsFile.
	Users []User `yaml:"users"`
	// CredentialsFile is the path of a credentials file (package
	// credentials: salted keys and hashes, no passwords), re-read when its
	// content changes.
	CredentialsFile string `yaml:"credentials_file"`
	// OAuthBearer validates the JWTs of mechanism OAUTHBEARER; required
	// with it.
	OAuthBearer *OAuthBearer `yaml:"oauthbearer"`
}

// OAuthBearer says where a listener's JWT signing keys are and what a
// token must claim (package jwtauth).
type OAuthBearer struct {
	// JWKSURL or JWKSFile (exactly one) holds the JSON Web Key Set.
	JWKSURL  string `yaml:"jwks_url"`
	JWKSFile string `yaml:"jwks_file"`
	// Issuer must equal the tokens' iss.
	Issuer string `yaml:"issuer"`
	// Audience, when set, must be one of the tokens' aud.
	Audience string `yaml:"audience"`
	// PrincipalClaim names the claim holding the user name. Default sub.
	PrincipalClaim string `yaml:"principal_claim"`
	// ClockSkew is the leeway of exp, nbf and iat. Default 30s.
	ClockSkew time.Duration `yaml:"clock_skew"`
	// JWKSRefresh is how often the JWKS is re-read. Default 1h.
	JWKSRefresh time.Duration `yaml:"jwks_refresh"`
}

// User is one SASL credential.
type User struct {
	Username string `yaml:"username"`
	Password string `yaml:"password"`
}

// Kafka holds the Kafka-protocol limits shared by every listener. The
// defaults are kafkaproto.DefaultConfig's.
type Kafka struct {
	// ClusterID is returned in Metadata. Default "fluss-kafka-gateway".
	ClusterID string `yaml:"cluster_id"`
	// MaxMessageBytes bounds one record batch on the wire (Kafka's
	// max.message.bytes); larger batches get MESSAGE_TOO_LARGE. Default
	// 1048588.
	MaxMessageBytes ByteSize `yaml:"max_message_bytes"`
	// MaxRequestBytes bounds one request frame (Kafka's
	// socket.request.max.bytes); larger frames close the connection.
	// Default 100MiB.
	MaxRequestBytes ByteSize `yaml:"max_request_bytes"`
	// MaxReadBytes is the part of writer.buffer_memory that requests being
	// read and decoded may hold, across all connections (one memory budget:
	// frames, decoded batches and the rows buffered for Fluss); past it, or
	// once the whole budget is in use, connections are not read. Default
	// (left 0 here, see RequestMemory) half of writer.buffer_memory.
	MaxReadBytes ByteSize `yaml:"max_read_bytes"`
	// MaxFirstRequestBytes bounds a connection's first request when no
	// SASL is configured (with SASL, 512KiB before authentication), so an
	// unauthenticated socket cannot make the gateway hold a giant frame.
	// Default 2MiB.
	MaxFirstRequestBytes ByteSize `yaml:"max_first_request_bytes"`
	// RequestReadTimeout and MinReadBytesPerSecond give each request's body
	// a read deadline of RequestReadTimeout + size/MinReadBytesPerSecond:
	// slow senders are closed instead of pinning memory. Defaults 10s and
	// 1MiB (per second).
	RequestReadTimeout    time.Duration `yaml:"request_read_timeout"`
	MinReadBytesPerSecond ByteSize      `yaml:"min_read_bytes_per_second"`
	// MaxInFlightRequests bounds the requests read from one connection and
	// not yet answered; past it the connection is not read. Default 16.
	MaxInFlightRequests int `yaml:"max_in_flight_requests"`
	// IdleTimeout closes connections that send nothing for this long.
	// Default 10m.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ProducerStateTTL forgets the sequence state of an idempotent
	// producer's partition idle this long. Default 1h.
	ProducerStateTTL time.Duration `yaml:"producer_state_ttl"`
	// MaxProducerStates bounds the (producer id, partition) sequence
	// states kept; the least recently used go first. Default 100000.
	MaxProducerStates int `yaml:"max_producer_states"`
	// MaxConnectionsPerIP bounds the connections one client IP address
	// holds over all listeners together (Kafka's max.connections.per.ip);
	// a connection past it is closed as soon as it is accepted. Default 0:
	// no limit.
	MaxConnectionsPerIP int `yaml:"max_connections_per_ip"`
	// MaxConnectionsPerIPOverrides replaces MaxConnectionsPerIP for the
	// IP addresses it names (Kafka's max.connections.per.ip.overrides,
	// without host names); 0 refuses every connection of that address.
	MaxConnectionsPerIPOverrides map[string]int `yaml:"max_connections_per_ip_overrides"`
	// Quotas are the client quotas (Kafka's producer_byte_rate), per
	// instance; reloaded with the routes.
	Quotas Quotas `yaml:"quotas"`
	// Transactions serves producers with a transactional.id
	// (docs/transactions.md): their transactions are staged in Fluss and
	// applied to the tables at commit, through the exactly-once path, so
	// they need the producer-state table and routes that do not set
	// exactly_once: false. Default true.
	Transactions bool `yaml:"transactions"`
	// TransactionMaxTimeout is the longest transaction.timeout.ms a
	// producer may ask for (Kafka's transaction.max.timeout.ms). Default
	// 1h: Flink's exactly-once sink asks for 1h.
	TransactionMaxTimeout time.Duration `yaml:"transaction_max_timeout"`
	// TransactionMaxBytes bounds the records one transaction may stage on
	// an instance (encoded, uncompressed); a batch past it is refused with
	// MESSAGE_TOO_LARGE and the producer must abort. A commit holds its
	// transaction's records in memory while it applies them. Default 64MiB.
	TransactionMaxBytes ByteSize `yaml:"transaction_max_bytes"`
}

// Quotas are produce byte-rate quotas in bytes per second (0: none),
// Kafka's producer_byte_rate: an entity over its quota is throttled. A
// client is held to, first match wins, its principal's entry (shared by all
// that principal's client ids), its client id's entry (shared by every
// principal using it), or ProducerByteRate for its (principal, client id)
// pair.
type Quotas struct {
	ProducerByteRate int64            `yaml:"producer_byte_rate"`
	Principals       map[string]Quota `yaml:"principals"`
	ClientIDs        map[string]Quota `yaml:"client_ids"`
}

// Quota is one entity's quota. ProducerByteRate is required; 0 exempts the
// entity from the default.
type Quota struct {
	ProducerByteRate *int64 `yaml:"producer_byte_rate"`
}

// Fluss is the connection to the Fluss cluster. The defaults are the fluss
// client's (fluss.Default*).
type Fluss struct {
	// Bootstrap lists coordinator or tablet server host:port addresses.
	Bootstrap []string `yaml:"bootstrap"`
	// SASL, when set, authenticates to Fluss (mechanism PLAIN).
	SASL *FlussSASL `yaml:"sasl"`
	// ClientID is sent to Fluss. Default "fluss-kafka-gateway".
	ClientID string `yaml:"client_id"`
	// RequestTimeout bounds one RPC. Default 30s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// DialTimeout bounds one connection attempt. Default 10s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// InitWriterTimeout bounds the wait for a Fluss writer id when a Kafka
	// producer asks for a producer id; then the producer is told to retry.
	// Default 5s: below franz-go's 10s request overhead, far below
	// request_timeout.
	InitWriterTimeout time.Duration `yaml:"init_writer_timeout"`
	// InitWriterBackoffMax bounds the back-off after failed writer-id
	// requests, during which producers are answered at once from the last
	// failure. It starts at 1s and doubles. Default 10s.
	InitWriterBackoffMax time.Duration `yaml:"init_writer_backoff_max"`
	// WriterIDExpiration is the cluster's server.writer-id.expiration-time:
	// how long exactly-once producer states outlive their producers' last
	// write (at most twice that) before they are swept. Default 7d, Fluss's
	// default.
	WriterIDExpiration time.Duration `yaml:"writer_id_expiration"`
}

// FlussSASL is the gateway's own credential towards Fluss.
type FlussSASL struct {
	// Mechanism is PLAIN (the only one Fluss 0.9 offers). Default PLAIN.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
}

// Writer holds the write-path settings towards Fluss. The defaults are
// the writer's (writerDefaults).
type Writer struct {
	// Linger is how long a batch waits for more rows; 0 is no linger (a
	// batch is sent as soon as it can be). Default 20ms: Kafka producers
	// batch already, and wait for their acks.
	Linger time.Duration `yaml:"linger"`
	// BatchSize is the target size of one bucket's batch. Default 2MiB.
	BatchSize ByteSize `yaml:"batch_size"`
	// BufferMemory bounds the rows buffered for Fluss; when it is used up,
	// Kafka connections stop being read. Default 64MiB.
	BufferMemory ByteSize `yaml:"buffer_memory"`
	// MaxTableShare is the fraction of BufferMemory one table may hold
	// (above 0, at most 1). A table whose Fluss writes stall fills its
	// share and its producers wait; the rest stays for the other tables.
	// Default 0.5.
	MaxTableShare float64 `yaml:"max_table_share"`
	// MaxRequestSize bounds one ProduceLog/PutKv request. Default 10MiB.
	MaxRequestSize ByteSize `yaml:"max_request_size"`
	// Retries is how often a failed batch is resent (0 = never); bounded
	// by DeliveryTimeout anyway. Default 2147483647.
	Retries int `yaml:"retries"`
	// RetryBackoff is the pause before a retry. Default 100ms.
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	// DeliveryTimeout bounds the time from accepting a record to its Fluss
	// ack; after it the Kafka producer gets REQUEST_TIMED_OUT. Default 2m.
	DeliveryTimeout time.Duration `yaml:"delivery_timeout"`
	// Acks towards Fluss: AcksAll (-1) or 1; 0 is refused by Validate.
	// Default all.
	Acks Acks `yaml:"acks"`
	// Idempotence makes the writer use a Fluss writer id and batch
	// sequences. Requires acks=all. Default true.
	Idempotence bool `yaml:"idempotence"`
	// MaxInFlightPerBucket bounds unacknowledged requests per bucket.
	// At most 5 with idempotence. Default 5.
	MaxInFlightPerBucket int `yaml:"max_in_flight_per_bucket"`
	// KvMaxThrottle is the longest a primary-key bucket is held back when
	// Fluss reports KV storage pressure (Fluss 1.0). Default 3s.
	KvMaxThrottle time.Duration `yaml:"kv_max_throttle"`
	// LeaderWait is how long a table's buckets may stay without a leader
	// before the batches waiting for them fail with LEADER_NOT_AVAILABLE
	// and Metadata reports the topic leaderless. Default 5s.
	LeaderWait time.Duration `yaml:"leader_wait"`
}

// SchemaRegistry is a Confluent-compatible schema registry (Confluent,
// Karapace, Apicurio's /apis/ccompat/v7). Unset (no URLs) when no route
// reads a schema-registry format.
type SchemaRegistry struct {
	// URLs of one registry, tried in turn.
	URLs []string `yaml:"urls"`
	// ApicurioURL is Apicurio's native v3 API, for globalId/contentId
	// framings. Default: derived from a URL ending in /apis/ccompat/vN.
	ApicurioURL string `yaml:"apicurio_url"`
	// Username and Password send basic auth; BearerToken a bearer token.
	Username    string `yaml:"username"`
	Password    string `yaml:"password"`
	BearerToken string `yaml:"bearer_token"`
	// CAFile is a PEM bundle trusted for https URLs.
	CAFile string `yaml:"ca_file"`
	// RequestTimeout bounds one registry request. Default 5s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
}

// Admin is the HTTP admin server.
type Admin struct {
	// Address is host:port of /metrics, /livez and /readyz; "" disables
	// the server. Default ":9464".
	Address string `yaml:"address"`
	// ReadyInterval is how often readiness checks Fluss (metadata, the
	// coordinator, the routes' bucket leaders). Default 2s.
	ReadyInterval time.Duration `yaml:"ready_interval"`
	// ReadyGrace is how long those checks may keep failing before /readyz
	// turns 503, so that short blips do not take the instance out of a
	// load balancer. Default 10s.
	ReadyGrace time.Duration `yaml:"ready_grace"`
	// Pprof serves Go's profiles under /debug/pprof/ on the admin address.
	// Off by default: a CPU profile costs CPU while it runs, and the
	// endpoints show internals. Read at start only.
	Pprof bool `yaml:"pprof"`
}

// Log levels and formats.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"

	FormatText = "text"
	FormatJSON = "json"
)

// Logging selects the slog handler.
type Logging struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is text or json. Default text.
	Format string `yaml:"format"`
}

// Shutdown bounds a graceful stop.
type Shutdown struct {
	// Deadline is how long a stop may take to answer produces already read
	// and flush; then the gateway exits anyway. Default 30s.
	Deadline time.Duration `yaml:"deadline"`
}

// Defaults of the settings that belong to the gateway itself; the other
// defaults come from the components (defaultConfig).
const (
	DefaultListenerBind       = "0.0.0.0:9092"
	DefaultListenerAdvertised = "localhost:9092"
	DefaultAdminAddress       = ":9464"
	DefaultShutdownDeadline   = 30 * time.Second
	DefaultInitWriterTimeout  = 5 * time.Second
	DefaultInitWriterBackoff  = 10 * time.Second
	// DefaultWriterIDExpiration is Fluss's default
	// server.writer-id.expiration-time.
	DefaultWriterIDExpiration = 7 * 24 * time.Hour
	DefaultReadyInterval      = 2 * time.Second
	DefaultReadyGrace         = 10 * time.Second
)

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a YAML document strictly (unknown keys are errors), fills in
// defaults and validates the result. A malformed "database.table" stops the
// decoding (fluss.TablePath refuses it), so Parse checks those values first
// and then reports only them, each with its key path.
func Parse(data []byte) (*Config, error) {
	if err := checkTablePaths(data); err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("config is empty")
		}
		return nil, fmt.Errorf("decode yaml: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("config holds more than one yaml document")
	}
	cfg.fillDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// defaultConfig returns the defaults of every scalar setting, taken from
// the components that own them. The YAML is decoded over it, so a key given
// as 0 or false keeps that value.
func defaultConfig() *Config {
	k := kafkaproto.DefaultConfig()
	return &Config{
		Kafka: Kafka{
			ClusterID:             k.ClusterID,
			MaxMessageBytes:       ByteSize(k.MaxMessageBytes),
			MaxRequestBytes:       ByteSize(k.MaxFrameBytes),
			MaxFirstRequestBytes:  ByteSize(k.MaxFirstRequestBytes),
			RequestReadTimeout:    k.RequestReadTimeout,
			MinReadBytesPerSecond: ByteSize(k.MinReadBytesPerSecond),
			MaxInFlightRequests:   k.MaxInFlightRequests,
			IdleTimeout:           k.IdleTimeout,
			ProducerStateTTL:      k.ProducerStateTTL,
			MaxProducerStates:     k.MaxProducerStates,
			Transactions:          true,
			TransactionMaxTimeout: time.Hour,
			TransactionMaxBytes:   64 << 20,
		},
		Fluss: Fluss{
			ClientID:             fluss.DefaultClientID,
			RequestTimeout:       fluss.DefaultRequestTimeout,
			DialTimeout:          fluss.DefaultDialTimeout,
			InitWriterTimeout:    DefaultInitWriterTimeout,
			InitWriterBackoffMax: DefaultInitWriterBackoff,
			WriterIDExpiration:   DefaultWriterIDExpiration,
		},
		Writer: writerDefaults(),
		SchemaRegistry: SchemaRegistry{
			RequestTimeout: schemaregistry.DefaultConfig().RequestTimeout,
		},
		Admin:    Admin{Address: DefaultAdminAddress, ReadyInterval: DefaultReadyInterval, ReadyGrace: DefaultReadyGrace},
		Logging:  Logging{Level: LevelInfo, Format: FormatText},
		Shutdown: Shutdown{Deadline: DefaultShutdownDeadline},
	}
}

// writerDefaults are the defaults of the accumulator and sender packages,
// the two halves of the writer section.
func writerDefaults() Writer {
	a, w := accumulator.DefaultConfig(), sender.DefaultConfig()
	return Writer{
		Linger:               a.Linger,
		BatchSize:            ByteSize(a.BatchSize),
		BufferMemory:         ByteSize(a.BufferMemory),
		MaxTableShare:        a.MaxTableShare,
		MaxRequestSize:       ByteSize(w.MaxRequestSize),
		Retries:              w.Retries,
		RetryBackoff:         w.RetryBackoff,
		DeliveryTimeout:      w.DeliveryTimeout,
		Acks:                 Acks(w.Acks),
		Idempotence:          !w.DisableIdempotence,
		MaxInFlightPerBucket: w.MaxInflightPerBucket,
		KvMaxThrottle:        w.KvMaxThrottle,
		LeaderWait:           w.LeaderWait,
	}
}

// fillDefaults fills the defaults that live inside lists (listeners,
// routes), which the decoder creates from zero values.
func (c *Config) fillDefaults() {
	if len(c.Listeners) == 0 {
		c.Listeners = []Listener{{Name: "plain", Bind: DefaultListenerBind, Advertised: DefaultListenerAdvertised}}
	}
	for i := range c.Listeners {
		l := &c.Listeners[i]
		if l.Name == "" {
			l.Name = fmt.Sprintf("listener-%d", i)
		}
		if l.Advertised == "" && !unspecifiedHost(l.Bind) {
			l.Advertised = l.Bind
		}
		if l.SASL != nil && len(l.SASL.Mechanisms) == 0 {
			l.SASL.Mechanisms = []string{MechanismPlain}
		}
	}
	if c.Fluss.SASL != nil && c.Fluss.SASL.Mechanism == "" {
		c.Fluss.SASL.Mechanism = MechanismPlain
	}
	for i := range c.Routes {
		c.Routes[i] = c.Routes[i].WithDefaults()
	}
	for i := range c.ACLs {
		// kafka-acls.sh takes any case; keep one spelling from here on.
		a := &c.ACLs[i]
		a.PatternType, a.Permission = strings.ToLower(a.PatternType), strings.ToLower(a.Permission)
		if a.PatternType == "" {
			a.PatternType = ACLPatternLiteral
		}
		if a.Permission == "" {
			a.Permission = ACLAllow
		}
		if op := NormalizeACLOperation(a.Operation); op != "" {
			a.Operation = op
		}
	}
}

// checkTablePaths reports, with key paths, the route tables
// (routes[].table, routes[].errors.dlq_table) that are not a
// "database.table" fluss.ParseTablePath accepts. A document that is not
// valid YAML is left to the strict decoder to report.
func checkTablePaths(data []byte) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	routes := mapValue(doc.Content[0], "routes")
	if routes == nil || routes.Kind != yaml.SequenceNode {
		return nil
	}
	var p problems
	for i, r := range routes.Content {
		r = resolveAlias(r)
		if r.Kind != yaml.MappingNode {
			continue
		}
		name := mapping.RouteSpec{Name: scalarValue(r, "name"), Topic: scalarValue(r, "topic"), Pattern: scalarValue(r, "pattern")}.WithDefaults().Name
		key := fmt.Sprintf("routes[%d] (%s)", i, name)
		checkTablePathNode(&p, key+".table", mapValue(r, "table"))
		if e := mapValue(r, "errors"); e != nil && e.Kind == yaml.MappingNode {
			checkTablePathNode(&p, key+".errors.dlq_table", mapValue(e, "dlq_table"))
		}
	}
	return p.err()
}

func checkTablePathNode(p *problems, key string, n *yaml.Node) {
	switch {
	case n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		// Absent: Validate says whether it is required.
	case n.Kind != yaml.ScalarNode:
		p.add(key, "line %d: must be a string database.table", n.Line)
	default:
		if _, err := fluss.ParseTablePath(n.Value); err != nil {
			p.add(key, "%v", err)
		}
	}
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	m = resolveAlias(m)
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return resolveAlias(m.Content[i+1])
		}
	}
	return nil
}

func scalarValue(m *yaml.Node, key string) string {
	if n := mapValue(m, key); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// RequestMemory is the part of writer.buffer_memory that Kafka requests
// being read and decoded may hold: kafka.max_read_bytes, or half of the
// buffer.
func (c *Config) RequestMemory() int64 {
	if c.Kafka.MaxReadBytes != 0 {
		return int64(c.Kafka.MaxReadBytes)
	}
	return int64(c.Writer.BufferMemory) / 2
}

// MaxFrameBytes is the largest request frame the gateway reads:
// kafka.max_request_bytes, but no more than the requests' part of the
// memory budget (a frame is held whole while it is handled).
func (c *Config) MaxFrameBytes() int64 {
	return min(int64(c.Kafka.MaxRequestBytes), c.RequestMemory())
}
