package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

const minimal = `
fluss:
  bootstrap: [127.0.0.1:9123]
`

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(minimal))
	require.NoError(t, err)

	require.Len(t, cfg.Listeners, 1)
	assert.Equal(t, Listener{Name: "plain", Bind: DefaultListenerBind, Advertised: DefaultListenerAdvertised}, cfg.Listeners[0])
	assert.Equal(t, []string{"127.0.0.1:9123"}, cfg.Fluss.Bootstrap)
	// The defaults come from the components; the literals are the ones
	// docs/configuration.md documents.
	assert.Equal(t, Kafka{
		ClusterID:             "fluss-kafka-gateway",
		MaxMessageBytes:       1048588,
		MaxRequestBytes:       100 << 20,
		MaxFirstRequestBytes:  2 << 20,
		RequestReadTimeout:    10 * time.Second,
		MinReadBytesPerSecond: 1 << 20,
		MaxInFlightRequests:   16,
		IdleTimeout:           10 * time.Minute,
		ProducerStateTTL:      time.Hour,
		MaxProducerStates:     100000,
		Transactions:          true,
		TransactionMaxTimeout: time.Hour,
		TransactionMaxBytes:   64 << 20,
	}, cfg.Kafka)
	assert.Equal(t, "fluss-kafka-gateway", cfg.Fluss.ClientID)
	assert.Equal(t, 30*time.Second, cfg.Fluss.RequestTimeout)
	assert.Equal(t, 10*time.Second, cfg.Fluss.DialTimeout)
	assert.Equal(t, Writer{
		Linger:               20 * time.Millisecond,
		BatchSize:            2 << 20,
		BufferMemory:         64 << 20,
		MaxTableShare:        0.5,
		MaxRequestSize:       10 << 20,
		Retries:              2147483647,
		RetryBackoff:         100 * time.Millisecond,
		DeliveryTimeout:      2 * time.Minute,
		Acks:                 AcksAll,
		Idempotence:          true,
		MaxInFlightPerBucket: 5,
		KvMaxThrottle:        3 * time.Second,
		LeaderWait:           5 * time.Second,
	}, cfg.Writer)
	assert.Equal(t, DefaultAdminAddress, cfg.Admin.Address)
	assert.Equal(t, Logging{Level: LevelInfo, Format: FormatText}, cfg.Logging)
	assert.Equal(t, DefaultShutdownDeadline, cfg.Shutdown.Deadline)
	assert.Empty(t, cfg.Routes)
}

func TestParseExplicitValues(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
listeners:
  - bind: 10.0.0.1:19092
  - name: ext
    bind: 0.0.0.0:19093
    advertised: kafka.example.com:443
    tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem, principal_mapping_rules: ["RULE:^CN=([^,]+)$/$1/L", DEFAULT]}
    sasl:
      mechanisms: [SCRAM-SHA-256, SCRAM-SHA-512]
      users: [{username: u, password: p}]
  - name: plainsasl
    bind: 127.0.0.1:19094
    max_connections: 500
    sasl:
      users: [{username: u, password: p}]
kafka:
  max_connections_per_ip: 20
  max_connections_per_ip_overrides: {10.0.0.7: 200, "::1": 0, "::ffff:10.0.0.8": 3}
  quotas:
    producer_byte_rate: 1048576
    principals: {"User:alice": {producer_byte_rate: 5000000}, "User:root": {producer_byte_rate: 0}}
    client_ids: {bulk-loader: {producer_byte_rate: 200000}}
fluss:
  bootstrap: [a:1, b:2]
  sasl: {username: gw, password: secret}
  client_id: gw-1
writer:
  linger: 0s
  batch_size: 512KiB
  buffer_memory: 1GB
  max_request_size: 1048576
  retries: 0
  acks: 1
  idempotence: false
  max_in_flight_per_bucket: 10
admin:
  address: ""
logging: {level: debug, format: json}
shutdown: {deadline: 5s}
`))
	require.NoError(t, err)
	require.Len(t, cfg.Listeners, 3)
	assert.Equal(t, "listener-0", cfg.Listeners[0].Name)
	assert.Equal(t, "10.0.0.1:19092", cfg.Listeners[0].Advertised, "advertised defaults to a specific bind address")
	assert.Equal(t, &TLS{CertFile: "c.pem", KeyFile: "k.pem", ClientCAFile: "ca.pem",
		PrincipalMappingRules: []string{"RULE:^CN=([^,]+)$/$1/L", "DEFAULT"}}, cfg.Listeners[1].TLS)
	assert.Equal(t, []string{MechanismScramSHA256, MechanismScramSHA512}, cfg.Listeners[1].SASL.Mechanisms)
	assert.Equal(t, []string{MechanismPlain}, cfg.Listeners[2].SASL.Mechanisms, "mechanisms default to PLAIN")
	assert.Equal(t, []int{0, 0, 500}, []int{cfg.Listeners[0].MaxConnections, cfg.Listeners[1].MaxConnections, cfg.Listeners[2].MaxConnections},
		"max_connections is per listener, 0 (no limit) by default")
	assert.Equal(t, 20, cfg.Kafka.MaxConnectionsPerIP)
	assert.Equal(t, map[string]int{"10.0.0.7": 200, "::1": 0, "::ffff:10.0.0.8": 3}, cfg.Kafka.MaxConnectionsPerIPOverrides)
	rate := func(n int64) Quota { return Quota{ProducerByteRate: &n} }
	assert.Equal(t, Quotas{ProducerByteRate: 1 << 20,
		Principals: map[string]Quota{"User:alice": rate(5000000), "User:root": rate(0)},
		ClientIDs:  map[string]Quota{"bulk-loader": rate(200000)}}, cfg.Kafka.Quotas)
	assert.Equal(t, &FlussSASL{Mechanism: MechanismPlain, Username: "gw", Password: "secret"}, cfg.Fluss.SASL)
	assert.Equal(t, "gw-1", cfg.Fluss.ClientID)
	assert.Equal(t, time.Duration(0), cfg.Writer.Linger, "explicit zero is kept")
	assert.Equal(t, ByteSize(512<<10), cfg.Writer.BatchSize)
	assert.Equal(t, ByteSize(1_000_000_000), cfg.Writer.BufferMemory)
	assert.Equal(t, ByteSize(1<<20), cfg.Writer.MaxRequestSize)
	assert.Equal(t, 0, cfg.Writer.Retries, "explicit zero is kept")
	assert.Equal(t, Acks(1), cfg.Writer.Acks)
	assert.False(t, cfg.Writer.Idempotence)
	assert.Equal(t, 10, cfg.Writer.MaxInFlightPerBucket)
	assert.Empty(t, cfg.Admin.Address)
	assert.Equal(t, Logging{Level: LevelDebug, Format: FormatJSON}, cfg.Logging)
	assert.Equal(t, 5*time.Second, cfg.Shutdown.Deadline)
}

func TestParseRouteDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(minimal + `
routes:
  - topic: orders
    table: shop.orders
  - pattern: 'logs\..*'
    table: ops.logs
    value: {format: raw, column: payload}
    partition:
      - column: dt
        format: yyyyMMdd
      - column: region
`))
	require.NoError(t, err)
	require.Len(t, cfg.Routes, 2)
	assert.Equal(t, mapping.RouteSpec{
		Name:     "orders",
		Topic:    "orders",
		Table:    fluss.TablePath{Database: "shop", Table: "orders"},
		Value:    mapping.ValueSpec{Format: mapping.ValueJSON, UnknownFields: mapping.FieldIgnore, MissingFields: mapping.FieldNull, EmptyRows: mapping.FieldReject},
		Key:      mapping.KeySpec{Format: mapping.KeyNone},
		Metadata: mapping.MetadataSpec{HeadersFormat: mapping.HeadersJSON},
		Errors:   mapping.ErrorSpec{Mode: mapping.ErrorsReject},
	}, cfg.Routes[0])
	r := cfg.Routes[1]
	assert.Equal(t, `logs\..*`, r.Name)
	assert.Equal(t, fluss.TablePath{Database: "ops", Table: "logs"}, r.Table)
	assert.Equal(t, mapping.ValueSpec{Format: mapping.ValueRaw, Column: "payload", UnknownFields: mapping.FieldIgnore, MissingFields: mapping.FieldNull, EmptyRows: mapping.FieldReject}, r.Value)
	assert.Equal(t, []mapping.PartitionSpec{
		{Column: "dt", From: mapping.PartitionFromTimestamp, Format: "yyyyMMdd", TimeZone: "UTC"},
		{Column: "region", From: mapping.PartitionFromField},
	}, r.Partition)
}

// TestParseRouteKeys decodes every route key into mapping.RouteSpec.
func TestParseRouteKeys(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(minimal + `
routes:
  - name: orders
    topic: orders
    table: shop.orders
    value:
      format: json
      columns: {customer: customer.name}
      unknown_fields: reject
      missing_fields: reject
    key: {format: json, columns: {id: $.id}}
    metadata: {key: k, headers: h, headers_format: json, timestamp: ts, partition: p, offset: o, topic: tp}
    tombstone: reject
    exactly_once: false
    partition:
      - {column: dt, from: timestamp, format: yyyyMMdd, time_zone: Europe/Paris}
    errors: {mode: dlq, dlq_table: ops.dead_letters}
`))
	require.NoError(t, err)
	require.Len(t, cfg.Routes, 1)
	assert.Equal(t, mapping.RouteSpec{
		Name:  "orders",
		Topic: "orders",
		Table: fluss.TablePath{Database: "shop", Table: "orders"},
		Value: mapping.ValueSpec{Format: mapping.ValueJSON, Paths: map[string]string{"customer": "customer.name"},
			UnknownFields: mapping.FieldReject, MissingFields: mapping.FieldReject, EmptyRows: mapping.FieldReject},
		Key: mapping.KeySpec{Format: mapping.KeyJSON, Paths: map[string]string{"id": "$.id"}},
		Metadata: mapping.MetadataSpec{Key: "k", Headers: "h", HeadersFormat: mapping.HeadersJSON, Timestamp: "ts",
			Partition: "p", Offset: "o", Topic: "tp"},
		Tombstone:   mapping.TombstoneReject,
		ExactlyOnce: mapping.ExactlyOnceOff,
		Partition:   []mapping.PartitionSpec{{Column: "dt", From: mapping.PartitionFromTimestamp, Format: "yyyyMMdd", TimeZone: "Europe/Paris"}},
		Errors:      mapping.ErrorSpec{Mode: mapping.ErrorsDLQ, DLQTable: fluss.TablePath{Database: "ops", Table: "dead_letters"}},
	}, cfg.Routes[0])
	_, err = mapping.NewRoutes(cfg.Routes)
	require.NoError(t, err, "what configs accepts, mapping compiles")
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"empty", ``, []string{"config is empty"}},
		{"unknown top-level key", minimal + "writr: {}\n", []string{"field writr not found"}},
		{"unknown nested key", minimal + "writer: {lingr: 1s}\n", []string{"field lingr not found"}},
		{"unknown route key", minimal + "routes: [{topic: a, table: d.t, valu: {}}]\n", []string{"field valu not found"}},
		{"two documents", minimal + "---\nadmin: {address: ':1'}\n", []string{"more than one yaml document"}},
		{"no bootstrap", "admin: {address: ':1'}\n", []string{"fluss.bootstrap: at least one"}},
		{"bad bootstrap", "fluss: {bootstrap: [nohostport]}\n", []string{"fluss.bootstrap[0]", "not host:port"}},
		{"bad size", minimal + "writer: {batch_size: 2 parsecs}\n", []string{"invalid size"}},
		{"bad acks", minimal + "writer: {acks: 2}\n", []string{"acks \"2\""}},
		{"bad duration", minimal + "writer: {linger: soon}\n", []string{"soon"}},
		{"idempotence needs acks all", minimal + "writer: {acks: 1}\n", []string{"writer.idempotence: requires writer.acks = all, got 1"}},
		{"idempotence in flight", minimal + "writer: {max_in_flight_per_bucket: 6}\n", []string{"writer.idempotence: allows writer.max_in_flight_per_bucket of at most 5"}},
		{"buffer below batch", minimal + "writer: {batch_size: 8MiB, buffer_memory: 4MiB}\n", []string{"writer.buffer_memory", "writer.batch_size"}},
		{"delivery below linger", minimal + "writer: {linger: 5s, delivery_timeout: 1s}\n", []string{"writer.delivery_timeout: 1s must be greater than writer.linger (5s)"}},
		{"negative retries", minimal + "writer: {retries: -1}\n", []string{"writer.retries"}},
		{"no leader wait", minimal + "writer: {leader_wait: 0s}\n", []string{"writer.leader_wait: must be positive, got 0s"}},
		{"table share above 1", minimal + "writer: {max_table_share: 2}\n", []string{"writer.max_table_share"}},
		{"table share below a batch", minimal + "writer: {max_table_share: 0.01}\n", []string{"writer.max_table_share"}},
		{"log level", minimal + "logging: {level: loud}\n", []string{"logging.level"}},
		{"log format", minimal + "logging: {format: xml}\n", []string{"logging.format"}},
		{"shutdown", minimal + "shutdown: {deadline: 0s}\n", []string{"shutdown.deadline"}},
		{"kafka message above request", minimal + "kafka: {max_message_bytes: 2MiB, max_request_bytes: 1MiB}\n", []string{"kafka.max_message_bytes: 2097152 exceeds kafka.max_request_bytes 1048576"}},
		{"kafka read below a batch", minimal + "kafka: {max_read_bytes: 1MiB}\n", []string{"kafka.max_read_bytes"}},
		{"kafka read the whole buffer", minimal + "kafka: {max_read_bytes: 64MiB}\n", []string{"kafka.max_read_bytes"}},
		{"kafka read leaves less than a writer batch", minimal + "kafka: {max_read_bytes: 63MiB}\n", []string{"kafka.max_read_bytes"}},
		{"half a small buffer below a batch", minimal + "writer: {buffer_memory: 2MiB, batch_size: 1MiB}\n", []string{"kafka.max_read_bytes"}},
		{"kafka in flight", minimal + "kafka: {max_in_flight_requests: 0}\n", []string{"kafka.max_in_flight_requests"}},
		{"kafka idle", minimal + "kafka: {idle_timeout: 0s}\n", []string{"kafka.idle_timeout"}},
		{"kafka cluster id", minimal + "kafka: {cluster_id: ''}\n", []string{"kafka.cluster_id"}},
		{"listener max connections", minimal + "listeners: [{name: a, bind: 'h:1', max_connections: -1}]\n", []string{"listeners[0] (a).max_connections: must not be negative (0: no limit), got -1"}},
		{"connections per ip", minimal + "kafka: {max_connections_per_ip: -1}\n", []string{"kafka.max_connections_per_ip: must not be negative (0: no limit), got -1"}},
		{"connections per ip override host name", minimal + "kafka: {max_connections_per_ip_overrides: {gw.example.com: 1}}\n",
			[]string{`kafka.max_connections_per_ip_overrides: "gw.example.com" is not an IP address`, "host names are not supported"}},
		{"connections per ip override network", minimal + "kafka: {max_connections_per_ip_overrides: {10.0.0.0/8: 1}}\n", []string{`kafka.max_connections_per_ip_overrides: "10.0.0.0/8" is not an IP address`}},
		{"connections per ip override zone", minimal + "kafka: {max_connections_per_ip_overrides: {'fe80::1%eth0': 1}}\n", []string{`kafka.max_connections_per_ip_overrides: "fe80::1%eth0": an IPv6 zone is not allowed`}},
		{"connections per ip override negative", minimal + "kafka: {max_connections_per_ip_overrides: {10.0.0.1: -1}}\n", []string{"kafka.max_connections_per_ip_overrides.10.0.0.1: must not be negative (0 refuses the address), got -1"}},
		{"connections per ip override twice", minimal + "kafka: {max_connections_per_ip_overrides: {10.0.0.1: 1, '::ffff:10.0.0.1': 2}}\n",
			[]string{`kafka.max_connections_per_ip_overrides: "10.0.0.1" and "::ffff:10.0.0.1" are the same address 10.0.0.1`}},
		{"quota default negative", minimal + "kafka: {quotas: {producer_byte_rate: -1}}\n", []string{"kafka.quotas.producer_byte_rate: must not be negative (0: no quota), got -1"}},
		{"quota principal negative", minimal + "kafka: {quotas: {principals: {'User:a': {producer_byte_rate: -5}}}}\n",
			[]string{"kafka.quotas.principals.User:a.producer_byte_rate: must not be negative (0: no quota), got -5"}},
		{"quota client id negative", minimal + "kafka: {quotas: {client_ids: {bulk: {producer_byte_rate: -5}}}}\n",
			[]string{"kafka.quotas.client_ids.bulk.producer_byte_rate: must not be negative (0: no quota), got -5"}},
		{"quota override without rate", minimal + "kafka: {quotas: {client_ids: {bulk: {}}}}\n",
			[]string{"kafka.quotas.client_ids.bulk.producer_byte_rate: required"}},
		{"quota principal not a principal", minimal + "kafka: {quotas: {principals: {alice: {producer_byte_rate: 1}}}}\n",
			[]string{`kafka.quotas.principals: "alice" is not a principal: write User:alice`}},
		{"quota rate not a number", minimal + "kafka: {quotas: {producer_byte_rate: 1MiB}}\n", []string{"1MiB"}},
		{"connections per ip override not a number", minimal + "kafka: {max_connections_per_ip_overrides: {10.0.0.1: many}}\n", []string{"many"}},
		{"admin address", minimal + "admin: {address: localhost}\n", []string{"admin.address"}},
		{"listener unspecified advertised", minimal + "listeners: [{bind: '0.0.0.0:9092'}]\n", []string{"listeners[0] (listener-0).advertised: required"}},
		{"listener advertised unspecified", minimal + "listeners: [{bind: ':9092', advertised: '0.0.0.0:9092'}]\n", []string{"not an address clients can reach"}},
		{"listener duplicate", minimal + "listeners: [{name: a, bind: 'h:1'}, {name: a, bind: 'h:1'}]\n", []string{"listeners[1] (a).name: duplicate", "listeners[1] (a).bind"}},
		{"listener tls", minimal + "listeners: [{bind: 'h:1', tls: {cert_file: c}}]\n", []string{"tls.key_file: required"}},
		{"principal rules without client ca", minimal + "listeners: [{bind: 'h:1', tls: {cert_file: c, key_file: k, principal_mapping_rules: [DEFAULT]}}]\n",
			[]string{"tls.principal_mapping_rules: needs client_ca_file"}},
		{"bad principal rule", minimal + "listeners: [{bind: 'h:1', tls: {cert_file: c, key_file: k, client_ca_file: ca, principal_mapping_rules: ['RULE:^CN=(.*)$/$1/X']}}]\n",
			[]string{"tls.principal_mapping_rules: principal mapping rule 1", "neither L nor U"}},
		{"listener sasl mechanism", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [GSSAPI], users: [{username: u, password: p}]}}]\n", []string{"\"GSSAPI\" is not one of"}},
		{"listener sasl users", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [PLAIN]}}]\n", []string{"sasl.users: at least one user"}},
		{"listener sasl user named like a principal", minimal + "listeners: [{bind: 'h:1', sasl: {users: [{username: 'User:alice', password: p}]}}]\n", []string{`listeners[0] (listener-0).sasl.users[0].username: "User:alice": ':' is not allowed`}},
		{"listener sasl user ANONYMOUS", minimal + "listeners: [{bind: 'h:1', sasl: {users: [{username: ANONYMOUS, password: p}]}}]\n", []string{`listeners[0] (listener-0).sasl.users[0].username: "ANONYMOUS"`}},
		{"listener sasl user wildcard", minimal + "listeners: [{bind: 'h:1', sasl: {users: [{username: '*', password: p}]}}]\n", []string{`listeners[0] (listener-0).sasl.users[0].username: "*": * is the wildcard`}},
		{"listener sasl users and credentials file", minimal + "listeners: [{bind: 'h:1', sasl: {credentials_file: /c.yaml, users: [{username: u, password: p}]}}]\n", []string{"sasl.credentials_file: set it or users, not both"}},
		{"oauthbearer without its settings", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [OAUTHBEARER]}}]\n", []string{"listeners[0] (listener-0).sasl.oauthbearer: required when mechanisms has OAUTHBEARER"}},
		{"oauthbearer settings without the mechanism", minimal + "listeners: [{bind: 'h:1', sasl: {credentials_file: /c.yaml, oauthbearer: {jwks_file: /j.json, issuer: i}}}]\n", []string{"sasl.oauthbearer: set, but mechanisms does not offer OAUTHBEARER"}},
		{"oauthbearer no jwks", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {issuer: i}}}]\n", []string{"sasl.oauthbearer.jwks_url: jwks_url or jwks_file is required"}},
		{"oauthbearer two jwks", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {jwks_url: 'https://i/j', jwks_file: /j.json, issuer: i}}}]\n", []string{"sasl.oauthbearer.jwks_file: set it or jwks_url, not both"}},
		{"oauthbearer jwks url", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {jwks_url: 'ftp://i/j', issuer: i}}}]\n", []string{`sasl.oauthbearer.jwks_url: "ftp://i/j" is not an http(s) URL`}},
		{"oauthbearer issuer", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {jwks_file: /j.json}}}]\n", []string{"sasl.oauthbearer.issuer: required"}},
		{"oauthbearer durations", minimal + "listeners: [{bind: 'h:1', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {jwks_file: /j.json, issuer: i, clock_skew: -1s, jwks_refresh: 10ms}}}]\n",
			[]string{"sasl.oauthbearer.clock_skew: must not be negative", "sasl.oauthbearer.jwks_refresh: at least 1s"}},
		{"listener sasl password", minimal + "listeners: [{bind: 'h:1', sasl: {users: [{username: u}]}}]\n", []string{"sasl.users[0].password: required"}},
		{"fluss sasl mechanism", "fluss: {bootstrap: ['a:1'], sasl: {mechanism: SCRAM-SHA-256, username: u, password: p}}\n", []string{"fluss.sasl.mechanism"}},
		{"route without topic", minimal + "routes: [{name: r, table: d.t}]\n", []string{"routes[0] (r): one of topic and pattern is required"}},
		{"route topic and pattern", minimal + "routes: [{topic: a, pattern: b, table: d.t}]\n", []string{"mutually exclusive"}},
		{"route bad pattern", minimal + "routes: [{pattern: 'a(', table: d.t}]\n", []string{"routes[0] (a().pattern"}},
		{"route bad topic", minimal + "routes: [{topic: 'a b', table: d.t}]\n", []string{"not a valid Kafka topic name"}},
		{"route duplicate topic", minimal + "routes: [{topic: a, table: d.t}, {name: b, topic: a, table: d.u}]\n", []string{"routes[1] (b).topic: \"a\" is also routed by routes[0]"}},
		{"route duplicate name", minimal + "routes: [{name: x, topic: a, table: d.t}, {name: x, topic: b, table: d.u}]\n", []string{"routes[1] (x).name: duplicate"}},
		{"route table", minimal + "routes: [{topic: a, table: nodot}]\n", []string{"routes[0] (a).table: \"nodot\" is not database.table"}},
		{"route table chars", minimal + "routes: [{topic: a, table: 'd.t x'}]\n", []string{"must be 1 to 200 characters"}},
		{"value format", minimal + "routes: [{topic: a, table: d.t, value: {format: xml}}]\n", []string{"routes[0] (a).value.format: \"xml\""}},
		{"raw needs column", minimal + "routes: [{topic: a, table: d.t, value: {format: raw}}]\n", []string{"value.column: required for value.format raw"}},
		{"json no column", minimal + "routes: [{topic: a, table: d.t, value: {column: c}}]\n", []string{"value.column: only applies"}},
		{"json path", minimal + "routes: [{topic: a, table: d.t, value: {columns: {c: 'a..b'}}}]\n", []string{"value.columns.c", "not a JSON path"}},
		{"unknown fields", minimal + "routes: [{topic: a, table: d.t, value: {unknown_fields: drop}}]\n", []string{"value.unknown_fields"}},
		{"missing fields", minimal + "routes: [{topic: a, table: d.t, value: {missing_fields: zero}}]\n", []string{"value.missing_fields"}},
		{"key format", minimal + "routes: [{topic: a, table: d.t, key: {format: xml}}]\n", []string{"key.format: \"xml\""}},
		{"key column", minimal + "routes: [{topic: a, table: d.t, key: {format: string}}]\n", []string{"key.column: required"}},
		{"key none with column", minimal + "routes: [{topic: a, table: d.t, key: {column: k}}]\n", []string{"key.format is none"}},
		{"headers format", minimal + "routes: [{topic: a, table: d.t, metadata: {headers: h, headers_format: xml}}]\n", []string{"metadata.headers_format"}},
		{"column claimed twice", minimal + "routes: [{topic: a, table: d.t, key: {format: raw, column: k}, metadata: {key: k}}]\n", []string{"key.column: column \"k\" is already filled by metadata.key"}},
		{"tombstone", minimal + "routes: [{topic: a, table: d.t, tombstone: ignore}]\n", []string{"routes[0] (a).tombstone"}},
		{"exactly once", minimal + "routes: [{topic: a, table: d.t, exactly_once: always}]\n", []string{`routes[0] (a).exactly_once: "always" is not one of true, false`}},
		{"partition from", minimal + "routes: [{topic: a, table: d.t, partition: [{column: dt, from: header}]}]\n", []string{"partition[0].from"}},
		{"partition zone", minimal + "routes: [{topic: a, table: d.t, partition: [{column: dt, format: yyyy, time_zone: Mars/Base}]}]\n", []string{"partition[0].time_zone"}},
		{"partition field format", minimal + "routes: [{topic: a, table: d.t, partition: [{column: dt, from: field, time_zone: UTC}]}]\n", []string{"only apply to from: timestamp"}},
		{"partition column", minimal + "routes: [{topic: a, table: d.t, partition: [{from: field}]}]\n", []string{"partition[0].column: required"}},
		{"errors mode", minimal + "routes: [{topic: a, table: d.t, errors: {mode: skip}}]\n", []string{"errors.mode"}},
		{"dlq table required", minimal + "routes: [{topic: a, table: d.t, errors: {mode: dlq}}]\n", []string{"errors.dlq_table: required"}},
		{"dlq table same", minimal + "routes: [{topic: a, table: d.t, errors: {mode: dlq, dlq_table: d.t}}]\n", []string{"must differ"}},
		{"dlq table reject", minimal + "routes: [{topic: a, table: d.t, errors: {dlq_table: d.x}}]\n", []string{"only applies to errors.mode dlq"}},
		{"several problems at once", minimal + "writer: {acks: 0}\nlogging: {level: x}\n", []string{"writer.idempotence", "logging.level"}},
		{"acks 0", minimal + "writer: {acks: 0, idempotence: false}\n", []string{"writer.acks: 0 is not supported towards Fluss: use 1 or all"}},
		{"route table missing", minimal + "routes: [{topic: a}]\n", []string{"routes[0] (a).table: required"}},
		{"route table empty", minimal + "routes: [{topic: a, table: ''}]\n", []string{`routes[0] (a).table: "" is not database.table`}},
		{"route table null", minimal + "routes: [{topic: a, table: ~}]\n", []string{"routes[0] (a).table: required"}},
		{"route table not a string", minimal + "routes: [{topic: a, table: {database: d, table: t}}]\n", []string{"routes[0] (a).table: line 4: must be a string database.table"}},
		{"route tables named by key", minimal + "routes: [{topic: a, table: d.t}, {name: b, topic: b, table: a.b.c, errors: {mode: dlq, dlq_table: 'x y.z'}}]\n",
			[]string{`routes[1] (b).table: "a.b.c" is not database.table`, `routes[1] (b).errors.dlq_table: "x y.z": "x y" must be 1 to 200 characters`}},
		{"partition time format", minimal + "routes: [{topic: a, table: d.t, partition: [{column: dt, format: yyyy/MM}]}]\n", []string{`routes[0] (a).partition[0].format: timestamp format "yyyy/MM": unexpected "/"`}},
		{"route duplicate pattern", minimal + "routes: [{pattern: 'a.*', table: d.t}, {name: b, pattern: 'a.*', table: d.u}]\n", []string{`routes[1] (b).pattern: "a.*" is also used by routes[0]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want ByteSize
		err  bool
	}{
		{"0", 0, false},
		{"1024", 1024, false},
		{"10B", 10, false},
		{"1KB", 1000, false},
		{"1KiB", 1024, false},
		{"64MiB", 64 << 20, false},
		{"2 MB", 2_000_000, false},
		{"1GiB", 1 << 30, false},
		{"-1", 0, true},
		{"1.5MiB", 0, true},
		{"MiB", 0, true},
		{"9223372036854775807GiB", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseByteSize(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	cfg, err := Load("gateway.yaml")
	require.NoError(t, err)
	assert.NotEmpty(t, cfg.Routes)
	names := make([]string, 0, len(cfg.Routes))
	for _, r := range cfg.Routes {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"orders", "customers", "clicks", "raw-logs"}, names)
}

// TestConfigurationDocCoversEveryKey keeps docs/configuration.md complete:
// every yaml key of every config struct must be mentioned there.
func TestConfigurationDocCoversEveryKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	for _, key := range yamlKeys() {
		assert.True(t, strings.Contains(string(doc), "`"+key+"`"), "docs/configuration.md does not document `%s`", key)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read config")
}

func TestParseOutageAndReadinessDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, cfg.Fluss.InitWriterTimeout)
	assert.Equal(t, 10*time.Second, cfg.Fluss.InitWriterBackoffMax)
	assert.Equal(t, 2*time.Second, cfg.Admin.ReadyInterval)
	assert.Equal(t, 10*time.Second, cfg.Admin.ReadyGrace)
	assert.Empty(t, cfg.ACLs, "no ACLs: allow all")
}

func TestParseACLs(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(minimal + `
acls:
  - {principal: "User:alice", operation: write, topic: orders}
  - {principal: "User:*", operation: DESCRIBE, topic: "*", permission: Allow}
  - {principal: "User:bob", operation: All, topic: "logs.", pattern_type: Prefixed, permission: deny}
  - {principal: "User:ANONYMOUS", operation: Write, topic: "a,b=ü"}
  - {principal: "User:a,b=ünï", operation: Write, topic: t}
`))
	require.NoError(t, err)
	assert.Equal(t, []ACL{
		{Principal: "User:alice", Operation: ACLOperationWrite, Topic: "orders", PatternType: ACLPatternLiteral, Permission: ACLAllow},
		{Principal: "User:*", Operation: ACLOperationDescribe, Topic: "*", PatternType: ACLPatternLiteral, Permission: ACLAllow},
		{Principal: "User:bob", Operation: ACLOperationAll, Topic: "logs.", PatternType: ACLPatternPrefixed, Permission: ACLDeny},
		{Principal: "User:ANONYMOUS", Operation: ACLOperationWrite, Topic: "a,b=ü", PatternType: ACLPatternLiteral, Permission: ACLAllow},
		{Principal: "User:a,b=ünï", Operation: ACLOperationWrite, Topic: "t", PatternType: ACLPatternLiteral, Permission: ACLAllow},
	}, cfg.ACLs, "defaults filled, spellings normalised")
}

func TestParseACLAndOutageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown acl key", minimal + "acls: [{principal: 'User:a', operation: Write, topic: t, host: '*'}]\n", []string{"field host not found"}},
		{"principal missing", minimal + "acls: [{operation: Write, topic: t}]\n", []string{"acls[0].principal: required"}},
		{"principal without type", minimal + "acls: [{principal: alice, operation: Write, topic: t}]\n", []string{`acls[0].principal: "alice" is not User:<name> or User:*`}},
		{"principal group", minimal + "acls: [{principal: 'Group:ops', operation: Write, topic: t}]\n", []string{"acls[0].principal"}},
		{"principal empty name", minimal + "acls: [{principal: 'User:', operation: Write, topic: t}]\n", []string{`acls[0].principal: "User:" names no user`}},
		{"principal names a typed principal", minimal + "acls: [{principal: 'User:User:alice', operation: Write, topic: t}]\n", []string{`acls[0].principal: "User:User:alice": ':' is not allowed`}},
		{"principal lower-case anonymous", minimal + "acls: [{principal: 'User:anonymous', operation: Write, topic: t}]\n", []string{`acls[0].principal: "User:anonymous": User:ANONYMOUS is the principal of connections without SASL`}},
		{"operation", minimal + "acls: [{principal: 'User:a', operation: Read, topic: t}]\n", []string{`acls[0].operation: "Read" is not one of Write, Describe, All`}},
		{"operation missing", minimal + "acls: [{principal: 'User:a', topic: t}]\n", []string{"acls[0].operation"}},
		{"topic missing", minimal + "acls: [{principal: 'User:a', operation: Write}]\n", []string{"acls[0].topic: required"}},
		{"prefixed wildcard", minimal + "acls: [{principal: 'User:a', operation: Write, topic: '*', pattern_type: prefixed}]\n", []string{"acls[0].topic: * is a literal wildcard"}},
		{"pattern type", minimal + "acls: [{principal: 'User:a', operation: Write, topic: t, pattern_type: match}]\n", []string{`acls[0].pattern_type: "match" is not one of literal, prefixed`}},
		{"permission", minimal + "acls: [{principal: 'User:a', operation: Write, topic: t, permission: maybe}]\n", []string{`acls[0].permission: "maybe" is not one of allow, deny`}},
		{"second entry named", minimal + "acls: [{principal: 'User:a', operation: Write, topic: t}, {principal: 'User:b', operation: Alter, topic: t}]\n", []string{"acls[1].operation"}},
		{"init writer timeout", "fluss: {bootstrap: ['a:1'], init_writer_timeout: 0s}\n", []string{"fluss.init_writer_timeout: must be positive"}},
		{"init writer above request timeout", "fluss: {bootstrap: ['a:1'], request_timeout: 3s, init_writer_timeout: 5s}\n", []string{"fluss.init_writer_timeout: 5s exceeds fluss.request_timeout (3s)"}},
		{"init writer backoff", "fluss: {bootstrap: ['a:1'], init_writer_backoff_max: -1s}\n", []string{"fluss.init_writer_backoff_max"}},
		{"ready interval", minimal + "admin: {ready_interval: 0s}\n", []string{"admin.ready_interval: must be positive"}},
		{"ready grace", minimal + "admin: {ready_grace: -1s}\n", []string{"admin.ready_grace: must not be negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
