package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/fluss-kafka/gateway/configs"
)

// wiringBase is the configuration every key's change is made on.
const wiringBase = `
listeners: [{name: plain, bind: '127.0.0.1:19092'}]
fluss: {bootstrap: ['127.0.0.1:9123']}
routes:
  - topic: events
    table: db.events
    value: {format: json}
`

// set is one key's new value at a path of the YAML tree ("listeners.0.tls");
// a nil value deletes the key.
type set struct {
	path  string
	value any
}

// keyChange is how a documented key is exercised: base edits make the
// starting point (a parent object the key needs), change edits change the
// key itself.
type keyChange struct {
	base   []set
	change []set
}

func selfSignedCert(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		DNSNames:              []string{name},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile
}

func wiringChanges(t *testing.T) map[string]keyChange {
	dir := t.TempDir()
	certA, keyA := selfSignedCert(t, dir, "a")
	certB, keyB := selfSignedCert(t, dir, "b")
	tlsA := map[string]any{"cert_file": certA, "key_file": keyA}
	users := []any{map[string]any{"username": "u", "password": "p"}}
	saslBase := []set{{"listeners.0.sasl", map[string]any{"users": users}}}
	oauth := map[string]any{"jwks_url": "https://idp.example/keys", "issuer": "https://idp.example"}
	oauthBase := []set{{"listeners.0.sasl", map[string]any{"mechanisms": []any{"OAUTHBEARER"}, "oauthbearer": oauth}}}
	oauthKey := func(key string, v any) keyChange {
		return keyChange{base: oauthBase, change: []set{{"listeners.0.sasl.oauthbearer." + key, v}}}
	}
	flussSASL := []set{{"fluss.sasl", map[string]any{"username": "u", "password": "p"}}}
	route := func(key string, v any) []set { return []set{{"routes.0." + key, v}} }
	registry := []set{{"schema_registry.urls", []any{"http://127.0.0.1:8081/apis/ccompat/v7"}}}
	one := func(path string, v any) keyChange { return keyChange{change: []set{{path, v}}} }
	acl := []set{{"acls", []any{map[string]any{"principal": "User:a", "operation": "Write", "topic": "events"}}}}
	aclKey := func(key string, v any) keyChange { return keyChange{base: acl, change: []set{{"acls.0." + key, v}}} }
	return map[string]keyChange{
		"listeners[].name":               one("listeners.0.name", "other"),
		"listeners[].bind":               one("listeners.0.bind", "127.0.0.1:19093"),
		"listeners[].advertised":         one("listeners.0.advertised", "gw.example.com:9094"),
		"listeners[].tls":                one("listeners.0.tls", tlsA),
		"listeners[].tls.cert_file":      {base: []set{{"listeners.0.tls", tlsA}}, change: []set{{"listeners.0.tls.cert_file", certB}}},
		"listeners[].tls.key_file":       {base: []set{{"listeners.0.tls", tlsA}}, change: []set{{"listeners.0.tls.key_file", keyB}}},
		"listeners[].tls.client_ca_file": {base: []set{{"listeners.0.tls", tlsA}}, change: []set{{"listeners.0.tls.client_ca_file", certB}}},
		"listeners[].tls.principal_mapping_rules": {base: []set{{"listeners.0.tls", tlsA}, {"listeners.0.tls.client_ca_file", certB}},
			change: []set{{"listeners.0.tls.principal_mapping_rules", []any{"RULE:^CN=([^,]+)$/$1/L"}}}},
		"listeners[].sasl":                             one("listeners.0.sasl", map[string]any{"users": users}),
		"listeners[].sasl.mechanisms":                  {base: saslBase, change: []set{{"listeners.0.sasl.mechanisms", []any{"SCRAM-SHA-256"}}}},
		"listeners[].sasl.users":                       {base: saslBase, change: []set{{"listeners.0.sasl.users", []any{map[string]any{"username": "v", "password": "p"}, map[string]any{"username": "w", "password": "q"}}}}},
		"listeners[].sasl.users[].username":            {base: saslBase, change: []set{{"listeners.0.sasl.users.0.username", "v"}}},
		"listeners[].sasl.users[].password":            {base: saslBase, change: []set{{"listeners.0.sasl.users.0.password", "q"}}},
		"listeners[].sasl.credentials_file":            {base: saslBase, change: []set{{"listeners.0.sasl.users", nil}, {"listeners.0.sasl.credentials_file", "/etc/gateway/credentials.yaml"}}},
		"listeners[].sasl.oauthbearer":                 {base: saslBase, change: []set{{"listeners.0.sasl.mechanisms", []any{"PLAIN", "OAUTHBEARER"}}, {"listeners.0.sasl.oauthbearer", oauth}}},
		"listeners[].sasl.oauthbearer.jwks_url":        oauthKey("jwks_url", "https://idp.example/jwks"),
		"listeners[].sasl.oauthbearer.jwks_file":       {base: oauthBase, change: []set{{"listeners.0.sasl.oauthbearer.jwks_url", nil}, {"listeners.0.sasl.oauthbearer.jwks_file", "/etc/jwks.json"}}},
		"listeners[].sasl.oauthbearer.issuer":          oauthKey("issuer", "https://other.example"),
		"listeners[].sasl.oauthbearer.audience":        oauthKey("audience", "kafka"),
		"listeners[].sasl.oauthbearer.principal_claim": oauthKey("principal_claim", "email"),
		"listeners[].sasl.oauthbearer.clock_skew":      oauthKey("clock_skew", "5s"),
		"listeners[].sasl.oauthbearer.jwks_refresh":    oauthKey("jwks_refresh", "10m"),
		"kafka.cluster_id":                             one("kafka.cluster_id", "other"),
		"kafka.max_message_bytes":                      one("kafka.max_message_bytes", "2MiB"),
		"kafka.max_request_bytes":                      one("kafka.max_request_bytes", "8MiB"),
		"kafka.max_read_bytes":                         one("kafka.max_read_bytes", "16MiB"),
		"kafka.max_first_request_bytes":                one("kafka.max_first_request_bytes", "1MiB"),
		"kafka.request_read_timeout":                   one("kafka.request_read_timeout", "20s"),
		"kafka.min_read_bytes_per_second":              one("kafka.min_read_bytes_per_second", "2MiB"),
		"kafka.max_in_flight_requests":                 one("kafka.max_in_flight_requests", 3),
		"kafka.idle_timeout":                           one("kafka.idle_timeout", "1m"),
		"kafka.producer_state_ttl":                     one("kafka.producer_state_ttl", "5m"),
		"kafka.max_producer_states":                    one("kafka.max_producer_states", 7),
		"kafka.transactions":                           one("kafka.transactions", false),
		"kafka.transaction_max_timeout":                one("kafka.transaction_max_timeout", "15m"),
		"kafka.transaction_max_bytes":                  one("kafka.transaction_max_bytes", "1MiB"),
		"listeners[].max_connections":                  one("listeners.0.max_connections", 10),
		"kafka.max_connections_per_ip":                 one("kafka.max_connections_per_ip", 5),
		"kafka.max_connections_per_ip_overrides":       one("kafka.max_connections_per_ip_overrides", map[string]any{"10.0.0.7": 3}),
		"kafka.quotas":                                 one("kafka.quotas", map[string]any{"producer_byte_rate": 1000}),
		"kafka.quotas.producer_byte_rate":              one("kafka.quotas.producer_byte_rate", 1000),
		"kafka.quotas.principals":                      one("kafka.quotas.principals", map[string]any{"User:a": map[string]any{"producer_byte_rate": 1000}}),
		"kafka.quotas.client_ids":                      one("kafka.quotas.client_ids", map[string]any{"bulk": map[string]any{"producer_byte_rate": 0}}),
		"fluss.bootstrap":                              one("fluss.bootstrap", []any{"127.0.0.1:9124"}),
		"fluss.sasl":                                   one("fluss.sasl", map[string]any{"username": "u", "password": "p"}),
		"fluss.sasl.mechanism":                         {base: flussSASL, change: []set{{"fluss.sasl.mechanism", "SCRAM-SHA-256"}}},
		"fluss.sasl.username":                          {base: flussSASL, change: []set{{"fluss.sasl.username", "v"}}},
		"fluss.sasl.password":                          {base: flussSASL, change: []set{{"fluss.sasl.password", "q"}}},
		"fluss.client_id":                              one("fluss.client_id", "other"),
		"fluss.request_timeout":                        one("fluss.request_timeout", "7s"),
		"fluss.dial_timeout":                           one("fluss.dial_timeout", "3s"),
		"fluss.init_writer_timeout":                    one("fluss.init_writer_timeout", "3s"),
		"fluss.init_writer_backoff_max":                one("fluss.init_writer_backoff_max", "20s"),
		"fluss.writer_id_expiration":                   one("fluss.writer_id_expiration", "48h"),
		"admin.ready_interval":                         one("admin.ready_interval", "1s"),
		"admin.ready_grace":                            one("admin.ready_grace", "3s"),
		"acls":                                         {change: acl},
		"acls[].principal":                             aclKey("principal", "User:b"),
		"acls[].operation":                             aclKey("operation", "Describe"),
		"acls[].topic":                                 aclKey("topic", "other"),
		"acls[].pattern_type":                          aclKey("pattern_type", "prefixed"),
		"acls[].permission":                            aclKey("permission", "deny"),
		"writer.linger":                                one("writer.linger", "0s"),
		"writer.batch_size":                            one("writer.batch_size", "1MiB"),
		"writer.buffer_memory":                         one("writer.buffer_memory", "32MiB"),
		"writer.max_table_share":                       one("writer.max_table_share", 0.25),
		"writer.max_request_size":                      one("writer.max_request_size", "5MiB"),
		"writer.retries":                               one("writer.retries", 3),
		"writer.retry_backoff":                         one("writer.retry_backoff", "50ms"),
		"writer.delivery_timeout":                      one("writer.delivery_timeout", "1m"),
		"writer.acks":                                  {base: []set{{"writer.idempotence", false}}, change: []set{{"writer.acks", 1}}},
		"writer.idempotence":                           one("writer.idempotence", false),
		"writer.max_in_flight_per_bucket":              one("writer.max_in_flight_per_bucket", 2),
		"writer.kv_max_throttle":                       one("writer.kv_max_throttle", "1s"),
		"writer.leader_wait":                           one("writer.leader_wait", "2s"),
		"admin.address":                                one("admin.address", "127.0.0.1:19464"),
		"admin.pprof":                                  one("admin.pprof", true),
		"logging.level":                                one("logging.level", "debug"),
		"logging.format":                               one("logging.format", "json"),
		"shutdown.deadline":                            one("shutdown.deadline", "5s"),
		"routes[].name":                                {change: route("name", "other")},
		"routes[].topic":                               {change: route("topic", "other")},
		"routes[].pattern":                             {change: append(route("topic", nil), route("pattern", "ev.*")...)},
		"routes[].table":                               {change: route("table", "db.other")},
		"routes[].value":                               {change: route("value", map[string]any{"format": "raw", "column": "payload"})},
		"routes[].key":                                 {change: route("key", map[string]any{"format": "string", "column": "k"})},
		"routes[].metadata":                            {change: route("metadata", map[string]any{"topic": "t"})},
		"routes[].tombstone":                           {change: route("tombstone", "delete")},
		"routes[].partition":                           {change: route("partition", []any{map[string]any{"column": "dt"}})},
		"routes[].errors":                              {change: route("errors", map[string]any{"mode": "dlq", "dlq_table": "db.dlq"})},
		"routes[].exactly_once":                        {change: route("exactly_once", true)},
		"routes[].follow_schema":                       {change: route("follow_schema", map[string]any{"buckets": 3})},
		"routes[].follow_schema.create":                {change: route("follow_schema", map[string]any{"create": true, "buckets": 2})},
		"routes[].follow_schema.add_columns":           {change: route("follow_schema.add_columns", true)},
		"routes[].follow_schema.primary_key":           {change: route("follow_schema.primary_key", []any{"id"})},
		"routes[].follow_schema.buckets":               {change: route("follow_schema.buckets", 4)},
		"routes[].follow_schema.partition_keys":        {change: route("follow_schema.partition_keys", []any{"dt"})},
		"routes[].follow_schema.properties":            {change: route("follow_schema.properties", map[string]any{"table.log.ttl": "7d"})},
		"routes[].value.format":                        {change: route("value", map[string]any{"format": "string", "column": "payload"})},
		"routes[].value.column":                        {base: route("value", map[string]any{"format": "raw", "column": "payload"}), change: route("value.column", "other")},
		"routes[].value.columns":                       {change: route("value.columns", map[string]any{"c": "a.b"})},
		"routes[].value.unknown_fields":                {change: route("value.unknown_fields", "reject")},
		"routes[].value.missing_fields":                {change: route("value.missing_fields", "reject")},
		"routes[].value.empty_rows":                    {change: route("value.empty_rows", "allow")},
		"routes[].value.framing":                       {base: append(route("value", map[string]any{"format": "avro"}), registry...), change: route("value.framing", "apicurio")},
		"routes[].value.subject":                       {base: append(route("value", map[string]any{"format": "avro"}), registry...), change: route("value.subject", "events-value")},
		"routes[].key.framing":                         {base: append(route("key", map[string]any{"format": "avro"}), registry...), change: route("key.framing", "apicurio")},
		"routes[].key.subject":                         {base: append(route("key", map[string]any{"format": "avro"}), registry...), change: route("key.subject", "events-key")},
		"routes[].value.message":                       {base: append(route("value", map[string]any{"format": "protobuf"}), registry...), change: route("value.message", "shop.Event")},
		"routes[].key.message":                         {base: append(route("key", map[string]any{"format": "protobuf"}), registry...), change: route("key.message", "shop.Key")},
		"routes[].follow_schema.primary_key_from_key":  {base: append(route("key", map[string]any{"format": "avro"}), registry...), change: route("follow_schema.primary_key_from_key", true)},
		"schema_registry.urls":                         one("schema_registry.urls", []any{"http://127.0.0.1:8081"}),
		"schema_registry.apicurio_url":                 {base: registry, change: []set{{"schema_registry.apicurio_url", "http://127.0.0.1:8081/apis/registry/v3"}}},
		"schema_registry.username":                     {base: registry, change: []set{{"schema_registry.username", "u"}, {"schema_registry.password", "p"}}},
		"schema_registry.password":                     {base: append(registry, set{"schema_registry.username", "u"}, set{"schema_registry.password", "p"}), change: []set{{"schema_registry.password", "q"}}},
		"schema_registry.bearer_token":                 {base: registry, change: []set{{"schema_registry.bearer_token", "t"}}},
		"schema_registry.ca_file":                      {base: registry, change: []set{{"schema_registry.ca_file", certA}}},
		"schema_registry.request_timeout":              {base: registry, change: []set{{"schema_registry.request_timeout", "9s"}}},
		"routes[].key.format":                          {change: route("key", map[string]any{"format": "json"})},
		"routes[].key.column":                          {base: route("key", map[string]any{"format": "string", "column": "k"}), change: route("key.column", "other")},
		"routes[].key.columns":                         {base: route("key", map[string]any{"format": "json"}), change: route("key.columns", map[string]any{"id": "a.b"})},
		"routes[].metadata.key":                        {change: route("metadata", map[string]any{"key": "k"})},
		"routes[].metadata.headers":                    {change: route("metadata", map[string]any{"headers": "h"})},
		"routes[].metadata.headers_format":             {base: route("metadata", map[string]any{"headers": "h"}), change: route("metadata.headers_format", "map")},
		"routes[].metadata.timestamp":                  {change: route("metadata", map[string]any{"timestamp": "ts"})},
		"routes[].metadata.partition":                  {change: route("metadata", map[string]any{"partition": "p"})},
		"routes[].metadata.offset":                     {change: route("metadata", map[string]any{"offset": "o"})},
		"routes[].metadata.topic":                      {change: route("metadata", map[string]any{"topic": "t"})},
		"routes[].partition[].column":                  {base: route("partition", []any{map[string]any{"column": "dt"}}), change: route("partition.0.column", "day")},
		"routes[].partition[].from":                    {base: route("partition", []any{map[string]any{"column": "dt"}}), change: route("partition.0", map[string]any{"column": "dt", "from": "timestamp", "format": "yyyyMMdd"})},
		"routes[].partition[].format":                  {base: route("partition", []any{map[string]any{"column": "dt", "format": "yyyyMMdd"}}), change: route("partition.0.format", "yyyyMMddHH")},
		"routes[].partition[].time_zone":               {base: route("partition", []any{map[string]any{"column": "dt", "format": "yyyyMMdd"}}), change: route("partition.0.time_zone", "Europe/Paris")},
		"routes[].errors.mode":                         {change: route("errors", map[string]any{"mode": "dlq", "dlq_table": "db.dlq"})},
		"routes[].errors.dlq_table":                    {base: route("errors", map[string]any{"mode": "dlq", "dlq_table": "db.dlq"}), change: route("errors.dlq_table", "db.other")},
	}
}

// apply edits a YAML tree.
func apply(t *testing.T, tree map[string]any, edits []set) {
	t.Helper()
	for _, e := range edits {
		parts := strings.Split(e.path, ".")
		var node any = tree
		for i, p := range parts {
			last := i == len(parts)-1
			switch n := node.(type) {
			case map[string]any:
				if last {
					if e.value == nil {
						delete(n, p)
					} else {
						n[p] = deepCopy(e.value)
					}
					continue
				}
				if _, ok := n[p]; !ok {
					n[p] = map[string]any{}
				}
				node = n[p]
			case []any:
				idx, err := strconv.Atoi(p)
				require.NoError(t, err, "path %s", e.path)
				if last {
					n[idx] = deepCopy(e.value)
					continue
				}
				node = n[idx]
			default:
				t.Fatalf("path %s: %T at %s", e.path, node, p)
			}
		}
	}
}

// deepCopy copies maps and lists, so that edits never alias each other.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

func settingsOf(t *testing.T, edits ...[]set) (settings, error) {
	t.Helper()
	var tree map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(wiringBase), &tree))
	for _, e := range edits {
		apply(t, tree, e)
	}
	doc, err := yaml.Marshal(tree)
	require.NoError(t, err)
	cfg, err := configs.Parse(doc)
	if err != nil {
		return settings{}, err
	}
	return settingsFrom(cfg)
}

// TestEveryDocumentedKeyIsWired: every key docs/configuration.md documents
// changes what the gateway's components are given, or is refused; none is
// silently ignored.
func TestEveryDocumentedKeyIsWired(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	keys := regexp.MustCompile("(?m)^\\| `([a-z_\\[\\].]+)` \\|").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, keys)
	changes := wiringChanges(t)
	seen := map[string]bool{}
	for _, m := range keys {
		key := m[1]
		if seen[key] {
			continue
		}
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			c, ok := changes[key]
			if !ok {
				t.Fatalf("docs/configuration.md documents %s but this test does not exercise it: add it to wiringChanges", key)
			}
			before, err := settingsOf(t, c.base)
			require.NoError(t, err, "the starting point must be valid")
			after, err := settingsOf(t, c.base, c.change)
			if err != nil {
				t.Logf("refused: %v", err)
				return
			}
			if reflect.DeepEqual(before, after) {
				t.Errorf("changing %s changes nothing the gateway is given: the key is ignored", key)
			}
		})
	}
	for key := range changes {
		if !seen[key] {
			t.Errorf("wiringChanges exercises %s, which docs/configuration.md does not document", key)
		}
	}
}
