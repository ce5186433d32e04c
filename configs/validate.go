package configs

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// problems collects validation errors, each prefixed with its key path.
type problems struct{ errs []error }

func (p *problems) add(key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

func (p *problems) err() error { return errors.Join(p.errs...) }

// Validate checks every setting and returns all problems found, joined;
// each names its key ("writer.acks", "routes[1] (orders): key.column").
// Parse calls it after filling defaults.
func (c *Config) Validate() error {
	var p problems
	c.validateListeners(&p)
	c.validateKafka(&p)
	c.validateFluss(&p)
	c.validateWriter(&p)
	if c.Admin.Address != "" {
		checkHostPort(&p, "admin.address", c.Admin.Address, true)
	}
	if c.Admin.ReadyInterval <= 0 {
		p.add("admin.ready_interval", "must be positive, got %s", c.Admin.ReadyInterval)
	}
	if c.Admin.ReadyGrace < 0 {
		p.add("admin.ready_grace", "must not be negative, got %s", c.Admin.ReadyGrace)
	}
	switch c.Logging.Level {
	case LevelDebug, LevelInfo, LevelWarn, LevelError:
	default:
		p.add("logging.level", "%q is not one of debug, info, warn, error", c.Logging.Level)
	}
	switch c.Logging.Format {
	case FormatText, FormatJSON:
	default:
		p.add("logging.format", "%q is not one of text, json", c.Logging.Format)
	}
	if c.Shutdown.Deadline <= 0 {
		p.add("shutdown.deadline", "must be positive, got %s", c.Shutdown.Deadline)
	}
	c.validateRoutes(&p)
	c.validateSchemaRegistry(&p)
	c.validateACLs(&p)
	return p.err()
}

// validateACLs checks each entry's fields against Kafka's ACL model for
// topics; names match case-insensitively as kafka-acls.sh accepts them, so
// only unknown values are errors.
func (c *Config) validateACLs(p *problems) {
	for i, a := range c.ACLs {
		key := fmt.Sprintf("acls[%d]", i)
		switch name, ok := strings.CutPrefix(a.Principal, ACLPrincipalPrefix); {
		case a.Principal == "":
			p.add(key+".principal", "required (User:<name> or User:*)")
		case !ok:
			p.add(key+".principal", "%q is not User:<name> or User:*", a.Principal)
		case name == "":
			p.add(key+".principal", "%q names no user", a.Principal)
		case name == ACLWildcard || a.Principal == kafkaproto.AnonymousPrincipal:
		default:
			// A principal no login can reach would be a rule that
			// silently never applies.
			if err := kafkaproto.CheckSASLUserName(name); err != nil {
				p.add(key+".principal", "%q: %v", a.Principal, err)
			}
		}
		if NormalizeACLOperation(a.Operation) == "" {
			p.add(key+".operation", "%q is not one of Write, Describe, All", a.Operation)
		}
		pattern := strings.ToLower(a.PatternType)
		switch pattern {
		case ACLPatternLiteral, ACLPatternPrefixed:
		default:
			p.add(key+".pattern_type", "%q is not one of literal, prefixed", a.PatternType)
		}
		switch {
		case a.Topic == "":
			p.add(key+".topic", "required (a topic name, a prefix, or * for every topic)")
		case a.Topic == ACLWildcard && pattern == ACLPatternPrefixed:
			p.add(key+".topic", "* is a literal wildcard; a prefixed pattern of every topic is an empty prefix, which Kafka refuses too")
		}
		switch strings.ToLower(a.Permission) {
		case ACLAllow, ACLDeny:
		default:
			p.add(key+".permission", "%q is not one of allow, deny", a.Permission)
		}
	}
}

// NormalizeACLOperation returns an ACL operation in its canonical
// spelling (Write, Describe, All), or "" when it is none of them.
func NormalizeACLOperation(op string) string {
	for _, o := range []string{ACLOperationWrite, ACLOperationDescribe, ACLOperationAll} {
		if strings.EqualFold(op, o) {
			return o
		}
	}
	return ""
}

func (c *Config) validateSchemaRegistry(p *problems) {
	r := c.SchemaRegistry
	for i, u := range r.URLs {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			p.add(fmt.Sprintf("schema_registry.urls[%d]", i), "%q is not an http or https URL", u)
		} else if pu.User != nil {
			p.add(fmt.Sprintf("schema_registry.urls[%d]", i), "credentials go in schema_registry.username/password, not in the URL")
		}
	}
	if (r.Username == "") != (r.Password == "") {
		p.add("schema_registry.password", "username and password go together")
	}
	if r.Username != "" && r.BearerToken != "" {
		p.add("schema_registry.bearer_token", "use either basic auth (username/password) or a bearer token, not both")
	}
	if r.RequestTimeout <= 0 {
		p.add("schema_registry.request_timeout", "must be positive, got %s", r.RequestTimeout)
	}
	if len(r.URLs) > 0 {
		return
	}
	for i, rt := range c.Routes {
		rt = rt.WithDefaults()
		for _, f := range []struct{ what, format string }{{"value", string(rt.Value.Format)}, {"key", string(rt.Key.Format)}} {
			if mapping.IsRegistryFormat(f.format) {
				p.add("schema_registry.urls", "required: routes[%d] (%s) reads %s.format %s", i, rt.Name, f.what, f.format)
			}
		}
	}
}

func (c *Config) validateKafka(p *problems) {
	k := &c.Kafka
	if k.ClusterID == "" {
		p.add("kafka.cluster_id", "must not be empty")
	}
	if k.MaxRequestBytes < 1024 {
		p.add("kafka.max_request_bytes", "must be at least 1KiB, got %d", k.MaxRequestBytes)
	}
	if k.MaxMessageBytes < 61 {
		p.add("kafka.max_message_bytes", "must be at least 61 bytes (a record batch header), got %d", k.MaxMessageBytes)
	}
	if k.MaxMessageBytes > k.MaxRequestBytes {
		p.add("kafka.max_message_bytes", "%d exceeds kafka.max_request_bytes %d", k.MaxMessageBytes, k.MaxRequestBytes)
	}
	// One memory budget: the requests' part lies inside writer.buffer_memory.
	req, buf := c.RequestMemory(), int64(c.Writer.BufferMemory)
	origin := "kafka.max_read_bytes"
	if k.MaxReadBytes == 0 {
		origin = "half of writer.buffer_memory (the default of kafka.max_read_bytes)"
	}
	switch {
	case k.MaxReadBytes < 0:
		p.add("kafka.max_read_bytes", "must not be negative, got %d", k.MaxReadBytes)
	case req >= buf:
		p.add("kafka.max_read_bytes", "%d must be below writer.buffer_memory %d: it is the part of that budget requests may hold", req, buf)
	case buf-req < int64(c.Writer.BatchSize):
		p.add("kafka.max_read_bytes", "%d leaves %d bytes of writer.buffer_memory to the writer, less than writer.batch_size %d", req, buf-req, c.Writer.BatchSize)
	case req < int64(k.MaxMessageBytes):
		p.add("kafka.max_read_bytes", "%s, %d bytes, is below kafka.max_message_bytes %d: such a batch could never be read", origin, req, k.MaxMessageBytes)
	}
	if k.MaxFirstRequestBytes < 1024 {
		p.add("kafka.max_first_request_bytes", "must be at least 1KiB, got %d", k.MaxFirstRequestBytes)
	}
	if k.RequestReadTimeout <= 0 {
		p.add("kafka.request_read_timeout", "must be positive, got %s", k.RequestReadTimeout)
	}
	if k.MinReadBytesPerSecond < 1024 {
		p.add("kafka.min_read_bytes_per_second", "must be at least 1KiB, got %d", k.MinReadBytesPerSecond)
	}
	if k.MaxInFlightRequests < 1 {
		p.add("kafka.max_in_flight_requests", "must be at least 1, got %d", k.MaxInFlightRequests)
	}
	if k.IdleTimeout <= 0 {
		p.add("kafka.idle_timeout", "must be positive, got %s", k.IdleTimeout)
	}
	if k.ProducerStateTTL <= 0 {
		p.add("kafka.producer_state_ttl", "must be positive, got %s", k.ProducerStateTTL)
	}
	if k.TransactionMaxTimeout <= 0 || k.TransactionMaxTimeout > 24*time.Hour {
		p.add("kafka.transaction_max_timeout", "must be in (0, 24h], got %s", k.TransactionMaxTimeout)
	}
	if k.TransactionMaxBytes < 1<<10 {
		p.add("kafka.transaction_max_bytes", "must be at least 1KiB, got %d", k.TransactionMaxBytes)
	}
	if k.MaxProducerStates < 1 {
		p.add("kafka.max_producer_states", "must be at least 1, got %d", k.MaxProducerStates)
	}
	if k.MaxConnectionsPerIP < 0 {
		p.add("kafka.max_connections_per_ip", "must not be negative (0: no limit), got %d", k.MaxConnectionsPerIP)
	}
	validateConnectionOverrides(p, k.MaxConnectionsPerIPOverrides)
	validateQuotas(p, k.Quotas)
}

// validateQuotas checks kafka.quotas, in key order so that the report is
// stable: rates not negative, overrides with a rate, principal keys
// written as principals are (User:alice).
func validateQuotas(p *problems, q Quotas) {
	const key = "kafka.quotas"
	if q.ProducerByteRate < 0 {
		p.add(key+".producer_byte_rate", "must not be negative (0: no quota), got %d", q.ProducerByteRate)
	}
	overrides := func(kind string, m map[string]Quota) {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			k := fmt.Sprintf("%s.%s.%s.producer_byte_rate", key, kind, name)
			switch r := m[name].ProducerByteRate; {
			case r == nil:
				p.add(k, "required (0 exempts it from kafka.quotas.producer_byte_rate)")
			case *r < 0:
				p.add(k, "must not be negative (0: no quota), got %d", *r)
			}
		}
	}
	overrides("principals", q.Principals)
	overrides("client_ids", q.ClientIDs)
	for _, name := range slices.Sorted(maps.Keys(q.Principals)) {
		if !strings.HasPrefix(name, kafkaproto.UserPrincipalPrefix) {
			p.add(key+".principals", "%q is not a principal: write %s (a SASL user; %s for connections without SASL)", name,
				kafkaproto.UserPrincipal(name), kafkaproto.AnonymousPrincipal)
		}
	}
}

// validateConnectionOverrides checks kafka.max_connections_per_ip_overrides,
// in key order so that the report is stable: each key an IP address
// (kafkaproto parses them), each naming another address, each value not
// negative.
func validateConnectionOverrides(p *problems, overrides map[string]int) {
	const key = "kafka.max_connections_per_ip_overrides"
	seen := map[netip.Addr]string{}
	for _, s := range slices.Sorted(maps.Keys(overrides)) {
		ip, err := kafkaproto.ParseOverrideIP(s)
		switch {
		case err != nil:
			p.add(key, "%v (host names are not supported)", err)
		case seen[ip] != "":
			p.add(key, "%q and %q are the same address %s", seen[ip], s, ip)
		default:
			seen[ip] = s
		}
		if n := overrides[s]; n < 0 {
			p.add(key+"."+s, "must not be negative (0 refuses the address), got %d", n)
		}
	}
}

func (c *Config) validateListeners(p *problems) {
	names := map[string]int{}
	binds := map[string]int{}
	for i, l := range c.Listeners {
		key := fmt.Sprintf("listeners[%d] (%s)", i, l.Name)
		if j, ok := names[l.Name]; ok {
			p.add(key+".name", "duplicate of listeners[%d]", j)
		}
		names[l.Name] = i
		if l.MaxConnections < 0 {
			p.add(key+".max_connections", "must not be negative (0: no limit), got %d", l.MaxConnections)
		}
		if l.Bind == "" {
			p.add(key+".bind", "required")
		} else {
			checkHostPort(p, key+".bind", l.Bind, true)
			if j, ok := binds[l.Bind]; ok {
				p.add(key+".bind", "%s is also bound by listeners[%d]", l.Bind, j)
			}
			binds[l.Bind] = i
		}
		if l.Advertised == "" {
			if l.Bind != "" {
				p.add(key+".advertised", "required because bind %q does not name a host clients can reach", l.Bind)
			}
		} else if checkHostPort(p, key+".advertised", l.Advertised, false) && unspecifiedHost(l.Advertised) {
			p.add(key+".advertised", "%q is not an address clients can reach", l.Advertised)
		}
		if t := l.TLS; t != nil {
			if t.CertFile == "" {
				p.add(key+".tls.cert_file", "required when tls is set")
			}
			if t.KeyFile == "" {
				p.add(key+".tls.key_file", "required when tls is set")
			}
			if len(t.PrincipalMappingRules) > 0 {
				if t.ClientCAFile == "" {
					p.add(key+".tls.principal_mapping_rules", "needs client_ca_file: only verified client certificates name a principal")
				}
				if _, err := kafkaproto.ParsePrincipalRules(t.PrincipalMappingRules); err != nil {
					p.add(key+".tls.principal_mapping_rules", "%v", err)
				}
			}
		}
		if s := l.SASL; s != nil {
			seen, passwords := map[string]bool{}, false
			for _, m := range s.Mechanisms {
				switch m {
				case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
					passwords = true
				case MechanismOAuthBearer:
				default:
					p.add(key+".sasl.mechanisms", "%q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER", m)
				}
				if seen[m] {
					p.add(key+".sasl.mechanisms", "%q listed twice", m)
				}
				seen[m] = true
			}
			p.oauthBearer(key+".sasl", s)
			switch {
			case passwords && len(s.Users) == 0 && s.CredentialsFile == "":
				p.add(key+".sasl.users", "at least one user, or a credentials_file, is required when sasl offers PLAIN or SCRAM")
			case len(s.Users) > 0 && s.CredentialsFile != "":
				p.add(key+".sasl.credentials_file", "set it or users, not both (the file replaces the users)")
			}
			users := map[string]bool{}
			for j, u := range s.Users {
				ukey := fmt.Sprintf("%s.sasl.users[%d]", key, j)
				if u.Username == "" {
					p.add(ukey+".username", "required")
				} else if err := kafkaproto.CheckSASLUserName(u.Username); err != nil {
					p.add(ukey+".username", "%q: %v", u.Username, err)
				}
				if u.Password == "" {
					p.add(ukey+".password", "required")
				}
				if users[u.Username] {
					p.add(ukey+".username", "%q listed twice", u.Username)
				}
				users[u.Username] = true
			}
		}
	}
}

func (c *Config) validateFluss(p *problems) {
	f := c.Fluss
	if len(f.Bootstrap) == 0 {
		p.add("fluss.bootstrap", "at least one host:port is required")
	}
	for i, b := range f.Bootstrap {
		checkHostPort(p, fmt.Sprintf("fluss.bootstrap[%d]", i), b, false)
	}
	if f.RequestTimeout <= 0 {
		p.add("fluss.request_timeout", "must be positive, got %s", f.RequestTimeout)
	}
	if f.DialTimeout <= 0 {
		p.add("fluss.dial_timeout", "must be positive, got %s", f.DialTimeout)
	}
	if f.InitWriterTimeout <= 0 {
		p.add("fluss.init_writer_timeout", "must be positive, got %s", f.InitWriterTimeout)
	} else if f.InitWriterTimeout > f.RequestTimeout && f.RequestTimeout > 0 {
		p.add("fluss.init_writer_timeout", "%s exceeds fluss.request_timeout (%s)", f.InitWriterTimeout, f.RequestTimeout)
	}
	if f.InitWriterBackoffMax <= 0 {
		p.add("fluss.init_writer_backoff_max", "must be positive, got %s", f.InitWriterBackoffMax)
	}
	if f.WriterIDExpiration < time.Second {
		p.add("fluss.writer_id_expiration", "must be at least 1s, got %s", f.WriterIDExpiration)
	}
	if s := f.SASL; s != nil {
		if s.Mechanism != MechanismPlain {
			p.add("fluss.sasl.mechanism", "%q is not supported (Fluss offers PLAIN)", s.Mechanism)
		}
		if s.Username == "" {
			p.add("fluss.sasl.username", "required when fluss.sasl is set")
		}
		if s.Password == "" {
			p.add("fluss.sasl.password", "required when fluss.sasl is set")
		}
	}
}

func (c *Config) validateWriter(p *problems) {
	w := c.Writer
	if w.Linger < 0 {
		p.add("writer.linger", "must not be negative, got %s", w.Linger)
	}
	if w.BatchSize <= 0 {
		p.add("writer.batch_size", "must be positive")
	}
	if w.BufferMemory < w.BatchSize {
		p.add("writer.buffer_memory", "%d bytes must be at least writer.batch_size (%d bytes)", w.BufferMemory, w.BatchSize)
	}
	if w.MaxTableShare <= 0 || w.MaxTableShare > 1 {
		p.add("writer.max_table_share", "must be above 0 and at most 1, got %v", w.MaxTableShare)
	} else if int64(float64(w.BufferMemory)*w.MaxTableShare) < int64(w.BatchSize) {
		p.add("writer.max_table_share", "%v of writer.buffer_memory (%d bytes) must hold a batch of writer.batch_size (%d bytes)", w.MaxTableShare, w.BufferMemory, w.BatchSize)
	}
	if w.MaxRequestSize < w.BatchSize {
		p.add("writer.max_request_size", "%d bytes must be at least writer.batch_size (%d bytes)", w.MaxRequestSize, w.BatchSize)
	}
	if w.Retries < 0 {
		p.add("writer.retries", "must not be negative, got %d", w.Retries)
	}
	if w.RetryBackoff < 0 {
		p.add("writer.retry_backoff", "must not be negative, got %s", w.RetryBackoff)
	}
	if w.DeliveryTimeout <= w.Linger {
		p.add("writer.delivery_timeout", "%s must be greater than writer.linger (%s)", w.DeliveryTimeout, w.Linger)
	}
	if w.Acks == 0 {
		p.add("writer.acks", "0 is not supported towards Fluss: use 1 or all")
	}
	if w.LeaderWait <= 0 {
		p.add("writer.leader_wait", "must be positive, got %s", w.LeaderWait)
	}
	if w.MaxInFlightPerBucket < 1 {
		p.add("writer.max_in_flight_per_bucket", "must be at least 1, got %d", w.MaxInFlightPerBucket)
	}
	if w.Idempotence {
		if w.Acks != AcksAll {
			p.add("writer.idempotence", "requires writer.acks = all, got %s", w.Acks)
		}
		if w.MaxInFlightPerBucket > 5 {
			p.add("writer.idempotence", "allows writer.max_in_flight_per_bucket of at most 5, got %d", w.MaxInFlightPerBucket)
		}
	}
}

// validateRoutes reports mapping's checks of the route specs, each under
// its key path "routes[i] (name).field".
func (c *Config) validateRoutes(p *problems) {
	for _, err := range unjoin(mapping.ValidateSpecs(c.Routes)) {
		var se *mapping.SpecError
		if !errors.As(err, &se) {
			p.errs = append(p.errs, err)
			continue
		}
		key := fmt.Sprintf("routes[%d] (%s)", se.Index, se.Route)
		if se.Field != "" {
			key += "." + se.Field
		}
		p.add(key, "%s", se.Problem)
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// checkHostPort reports whether s is host:port with a valid port; an empty
// host is accepted only when allowEmptyHost.
func checkHostPort(p *problems, key, s string, allowEmptyHost bool) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		p.add(key, "%q is not host:port: %v", s, err)
		return false
	}
	if host == "" && !allowEmptyHost {
		p.add(key, "%q has no host", s)
		return false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		p.add(key, "%q has an invalid port", s)
		return false
	}
	return true
}

func unspecifiedHost(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// oauthBearer checks a listener's OAUTHBEARER settings, which go with the
// mechanism: one without the other is a mistake.
func (p *problems) oauthBearer(key string, s *SASL) {
	o := s.OAuthBearer
	offered := slices.Contains(s.Mechanisms, MechanismOAuthBearer)
	switch {
	case o == nil && offered:
		p.add(key+".oauthbearer", "required when mechanisms has OAUTHBEARER")
		return
	case o == nil:
		return
	case !offered:
		p.add(key+".oauthbearer", "set, but mechanisms does not offer OAUTHBEARER")
	}
	key += ".oauthbearer"
	switch {
	case o.JWKSURL == "" && o.JWKSFile == "":
		p.add(key+".jwks_url", "jwks_url or jwks_file is required")
	case o.JWKSURL != "" && o.JWKSFile != "":
		p.add(key+".jwks_file", "set it or jwks_url, not both")
	case o.JWKSURL != "":
		if u, err := url.Parse(o.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p.add(key+".jwks_url", "%q is not an http(s) URL", o.JWKSURL)
		}
	}
	if o.Issuer == "" {
		p.add(key+".issuer", "required: tokens of any other issuer are refused")
	}
	if o.ClockSkew < 0 {
		p.add(key+".clock_skew", "must not be negative")
	}
	if o.JWKSRefresh < 0 || (o.JWKSRefresh > 0 && o.JWKSRefresh < time.Second) {
		p.add(key+".jwks_refresh", "at least 1s")
	}
}
