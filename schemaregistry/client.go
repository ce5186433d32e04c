package schemaregistry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults applied by New to zero Config fields (DefaultConfig returns them).
const (
	DefaultRequestTimeout    = 5 * time.Second
	DefaultCacheSize         = 10_000
	DefaultNotFoundTTL       = 30 * time.Second
	DefaultMaxReferenceDepth = 16
)

// Config configures a Client.
type Config struct {
	// URLs are base URLs of one registry's Confluent-compatible REST API,
	// e.g. http://sr:8081 (Confluent, Karapace) or
	// http://apicurio:8080/apis/ccompat/v7. Each request tries them in turn,
	// starting with the one that answered last, moving on after a retriable
	// failure. At least one is required; credentials go in Username/Password,
	// not in the URL.
	URLs []string

	// ApicurioURL is the base of Apicurio's native v3 API
	// (http://apicurio:8080/apis/registry/v3), used for globalId and
	// contentId lookups. When empty it is derived from every URLs entry that
	// ends in /apis/ccompat/vN (that suffix replaced by /apis/registry/v3);
	// when neither gives one, those lookups return ErrNoApicurioAPI.
	ApicurioURL string

	// Username and Password send HTTP basic auth; BearerToken sends
	// "Authorization: Bearer <token>". At most one of the two may be set.
	Username, Password string
	BearerToken        string

	// CAFile is a PEM file of CA certificates trusted for https URLs, in
	// addition to the system roots.
	CAFile string

	// RequestTimeout bounds every HTTP request (each URL tried separately),
	// within the caller's context. Default 5s.
	RequestTimeout time.Duration

	// CacheSize bounds the cached schemas (and, separately, the cached
	// "not found" answers), least recently used first out. Default 10000.
	CacheSize int

	// NotFoundTTL is how long a definite "not found" is remembered, so that a
	// flood of records with a bad id does not hammer the registry. Default
	// 30s; negative disables it.
	NotFoundTTL time.Duration

	// MaxReferenceDepth bounds schema-reference nesting; deeper is
	// ErrUnknownSchema. Default 16.
	MaxReferenceDepth int
}

// DefaultConfig returns the defaults; URLs still has to be set.
func DefaultConfig() Config {
	return Config{
		RequestTimeout:    DefaultRequestTimeout,
		CacheSize:         DefaultCacheSize,
		NotFoundTTL:       DefaultNotFoundTTL,
		MaxReferenceDepth: DefaultMaxReferenceDepth,
	}
}

// Schema types as the registries name them.
const (
	TypeAvro     = "AVRO"
	TypeProtobuf = "PROTOBUF"
	TypeJSON     = "JSON"
)

// Schema is a registered schema with the texts of everything it references.
// Schemas are shared by every caller (they are cached): do not modify one.
type Schema struct {
	// Type is "AVRO", "PROTOBUF" or "JSON" (a missing schemaType means AVRO);
	// an Apicurio native lookup may give another artifact type, which the
	// caller rejects.
	Type string
	// Text is the schema text as the registry returns it (for Protobuf from
	// Apicurio this may be a base64 FileDescriptorProto rather than .proto
	// text).
	Text string
	// References are this schema's direct references.
	References []Reference
	// Deps holds the text of every schema referenced, directly or not, by
	// reference name (an Avro full name, a Protobuf import path, a JSON
	// Schema $ref): what a schema parser needs to resolve the references.
	Deps map[string]string

	ID      int64  // the id looked up (or the ccompat id of a subject lookup)
	GUID    string // when known
	Subject string // subject and version, when the answer carried them
	Version int
}

// Reference is one schema reference: Subject/Version on the Confluent API,
// GroupID/ArtifactID/ArtifactVersion on Apicurio's native API.
type Reference struct {
	Name            string
	Subject         string
	Version         int
	GroupID         string
	ArtifactID      string
	ArtifactVersion string
}

// Client looks schemas up in a schema registry and caches them. It is safe
// for concurrent use.
type Client struct {
	ccompat     *endpoints
	native      *endpoints // nil: no Apicurio v3 API
	hc          *http.Client
	auth        string
	timeout     time.Duration
	maxDepth    int
	notFoundTTL time.Duration
	cache       *lru // key -> *Schema
	negative    *lru // key -> error (ErrUnknownSchema)
	sf          singleflight.Group
	st          counters
}

var ccompatSuffix = regexp.MustCompile(`/apis/ccompat/v[0-9]+$`)

// New checks cfg and returns a Client. It sends no request.
func New(cfg Config) (*Client, error) {
	def := DefaultConfig()
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = def.CacheSize
	}
	if cfg.NotFoundTTL == 0 {
		cfg.NotFoundTTL = def.NotFoundTTL
	}
	if cfg.MaxReferenceDepth <= 0 {
		cfg.MaxReferenceDepth = def.MaxReferenceDepth
	}
	if len(cfg.URLs) == 0 {
		return nil, errors.New("schemaregistry: no registry URLs")
	}
	c := &Client{
		ccompat:     &endpoints{},
		timeout:     cfg.RequestTimeout,
		maxDepth:    cfg.MaxReferenceDepth,
		notFoundTTL: cfg.NotFoundTTL,
		cache:       newLRU(cfg.CacheSize, time.Now),
		negative:    newLRU(cfg.CacheSize, time.Now),
	}
	var derived []string
	for _, raw := range cfg.URLs {
		base, err := parseBase(raw)
		if err != nil {
			return nil, err
		}
		c.ccompat.bases = append(c.ccompat.bases, base)
		if loc := ccompatSuffix.FindStringIndex(base); loc != nil {
			derived = append(derived, base[:loc[0]]+"/apis/registry/v3")
		}
	}
	switch {
	case cfg.ApicurioURL != "":
		base, err := parseBase(cfg.ApicurioURL)
		if err != nil {
			return nil, err
		}
		c.native = &endpoints{bases: []string{base}}
	case len(derived) > 0:
		c.native = &endpoints{bases: derived}
	}

	switch {
	case cfg.BearerToken != "" && (cfg.Username != "" || cfg.Password != ""):
		return nil, errors.New("schemaregistry: set either Username/Password or BearerToken, not both")
	case cfg.BearerToken != "":
		c.auth = "Bearer " + cfg.BearerToken
	case cfg.Username != "":
		c.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password))
	case cfg.Password != "":
		return nil, errors.New("schemaregistry: Password without Username")
	}

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("schemaregistry: CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("schemaregistry: CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c.hc = &http.Client{Transport: tr}
	return c, nil
}

func parseBase(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("schemaregistry: URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("schemaregistry: URL %q: scheme must be http or https", raw)
	case u.Host == "":
		return "", fmt.Errorf("schemaregistry: URL %q: no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("schemaregistry: URL %s: put credentials in Username/Password, not in the URL", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("schemaregistry: URL %q: no query or fragment allowed", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// HasApicurioAPI reports whether globalId and contentId lookups are possible.
func (c *Client) HasApicurioAPI() bool { return c.native != nil }

// Resolve looks up the schema a parsed record framing refers to.
func (c *Client) Resolve(ctx context.Context, ref Ref) (*Schema, error) {
	switch ref.Kind {
	case ConfluentID:
		if ref.ID > int64(^uint32(0)) {
			return nil, fmt.Errorf("%w: schema id %d out of range", ErrUnknownSchema, ref.ID)
		}
		return c.SchemaByID(ctx, int(ref.ID))
	case GUID:
		return c.SchemaByGUID(ctx, ref.GUID)
	case GlobalID:
		return c.SchemaByGlobalID(ctx, ref.ID)
	case ContentID:
		return c.SchemaByContentID(ctx, ref.ID)
	}
	return nil, fmt.Errorf("schemaregistry: Resolve: unknown id kind %v", ref.Kind)
}

// SchemaByID returns the schema of a Confluent-API schema id
// (GET /schemas/ids/{id}), with its references resolved.
func (c *Client) SchemaByID(ctx context.Context, id int) (*Schema, error) {
	if id <= 0 {
		c.st.lookups.Add(1)
		return nil, fmt.Errorf("%w: schema id %d", ErrUnknownSchema, id)
	}
	return c.lookup(ctx, "id:"+strconv.Itoa(id), func(ctx context.Context) (*Schema, error) {
		var w wireSchema
		if err := c.getJSON(ctx, c.ccompat, "/schemas/ids/"+strconv.Itoa(id), acceptCCompat, &w); err != nil {
			return nil, err
		}
		s, err := w.schema("/schemas/ids/" + strconv.Itoa(id))
		if err != nil {
			return nil, err
		}
		s.ID = int64(id)
		return s, c.resolveCCompat(ctx, s)
	})
}

// SchemaByGUID returns the schema of a schema GUID (GET /schemas/guids/{guid}),
// with its references resolved. Any 404 is ErrUnknownSchema here: Apicurio
// has no GUIDs and answers this path with an empty 404.
func (c *Client) SchemaByGUID(ctx context.Context, guid string) (*Schema, error) {
	if guid == "" || guid == "00000000-0000-0000-0000-000000000000" {
		c.st.lookups.Add(1)
		return nil, fmt.Errorf("%w: schema GUID %q", ErrUnknownSchema, guid)
	}
	return c.lookup(ctx, "guid:"+guid, func(ctx context.Context) (*Schema, error) {
		path := "/schemas/guids/" + url.PathEscape(guid)
		var w wireSchema
		if err := c.getJSON(ctx, c.ccompat, path, acceptCCompat, &w); err != nil {
			return nil, err
		}
		s, err := w.schema(path)
		if err != nil {
			return nil, err
		}
		s.GUID = guid
		return s, c.resolveCCompat(ctx, s)
	})
}

// LatestSchema returns the latest version of a subject
// (GET /subjects/{subject}/versions/latest), with its references resolved,
// for validating a route's configuration. It is not cached (the latest version
// changes), but the schema is then cached under its id.
func (c *Client) LatestSchema(ctx context.Context, subject string) (*Schema, error) {
	path := "/subjects/" + url.PathEscape(subject) + "/versions/latest"
	var w wireSchema
	if err := c.getJSON(ctx, c.ccompat, path, acceptCCompat, &w); err != nil {
		return nil, err
	}
	s, err := w.schema(path)
	if err != nil {
		return nil, err
	}
	if err := c.resolveCCompat(ctx, s); err != nil {
		return nil, err
	}
	if s.ID > 0 {
		c.cache.add("id:"+strconv.FormatInt(s.ID, 10), s, 0)
	}
	return s, nil
}

// lookup answers from the caches or runs fetch once per key however many
// goroutines ask at once. The fetch runs detached from the caller's
// cancellation (each request still bounded by RequestTimeout), so one caller
// giving up does not fail the others; that caller gets ErrUnavailable
// wrapping its context's error.
func (c *Client) lookup(ctx context.Context, key string, fetch func(context.Context) (*Schema, error)) (*Schema, error) {
	c.st.lookups.Add(1)
	if v, ok := c.cache.get(key); ok {
		c.st.cacheHits.Add(1)
		return v.(*Schema), nil
	}
	if v, ok := c.negative.get(key); ok {
		c.st.notFoundHits.Add(1)
		return nil, v.(error)
	}
	c.st.misses.Add(1)
	fctx := context.WithoutCancel(ctx)
	ch := c.sf.DoChan(key, func() (any, error) {
		// Checked again: a fetch that finished between the check above and
		// this flight starting has filled the cache.
		if v, ok := c.cache.get(key); ok {
			return v, nil
		}
		if v, ok := c.negative.get(key); ok {
			return nil, v.(error)
		}
		c.st.fetches.Add(1)
		s, err := fetch(fctx)
		if err != nil {
			if errors.Is(err, ErrUnknownSchema) {
				c.st.fetchUnknown.Add(1)
				if c.notFoundTTL > 0 {
					c.negative.add(key, err, c.notFoundTTL)
				}
			} else {
				c.st.fetchUnavailable.Add(1)
			}
			return nil, err
		}
		c.cache.add(key, s, 0)
		return s, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Schema), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for %s: %w", ErrUnavailable, key, ctx.Err())
	}
}

// wireSchema is the Confluent API's schema object (GET /schemas/ids/{id},
// /schemas/guids/{guid}, /subjects/{s}/versions/{v}).
type wireSchema struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         int64  `json:"id"`
	GUID       string `json:"guid"`
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType"`
	References []struct {
		Name    string `json:"name"`
		Subject string `json:"subject"`
		Version int    `json:"version"`
	} `json:"references"`
}

func (w *wireSchema) schema(path string) (*Schema, error) {
	if w.Schema == "" {
		return nil, fmt.Errorf("%w: GET %s: answer has no schema text", ErrUnavailable, path)
	}
	s := &Schema{
		Type:    strings.ToUpper(w.SchemaType),
		Text:    w.Schema,
		ID:      w.ID,
		GUID:    w.GUID,
		Subject: w.Subject,
		Version: w.Version,
	}
	if s.Type == "" {
		s.Type = TypeAvro
	}
	for _, r := range w.References {
		s.References = append(s.References, Reference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return s, nil
}

// resolveCCompat fills s.Deps by fetching every referenced subject version
// (GET /subjects/{subject}/versions/{version}), depth first. Each subject
// version is fetched once per client (cached); a cycle or a diamond is walked
// once.
func (c *Client) resolveCCompat(ctx context.Context, s *Schema) error {
	return c.resolve(ctx, s, func(ctx context.Context, r Reference) (*Schema, error) {
		v := "latest"
		if r.Version > 0 {
			v = strconv.Itoa(r.Version)
		}
		key := "sv:" + r.Subject + "\x00" + v
		if v, ok := c.cache.get(key); ok {
			return v.(*Schema), nil
		}
		path := "/subjects/" + url.PathEscape(r.Subject) + "/versions/" + v
		var w wireSchema
		if err := c.getJSON(ctx, c.ccompat, path, acceptCCompat, &w); err != nil {
			return nil, err
		}
		ref, err := w.schema(path)
		if err != nil {
			return nil, err
		}
		if r.Version > 0 {
			c.cache.add(key, ref, 0)
		}
		return ref, nil
	}, func(r Reference) string { return r.Subject + "\x00" + strconv.Itoa(r.Version) })
}

// resolve walks s's references with fetchRef, keeping every referenced text
// in s.Deps by reference name (the first one wins on a clash).
func (c *Client) resolve(ctx context.Context, s *Schema, fetchRef func(context.Context, Reference) (*Schema, error), id func(Reference) string) error {
	if len(s.References) == 0 {
		return nil
	}
	s.Deps = make(map[string]string)
	visited := make(map[string]bool)
	var walk func(refs []Reference, depth int) error
	walk = func(refs []Reference, depth int) error {
		if len(refs) == 0 {
			return nil
		}
		if depth > c.maxDepth {
			return fmt.Errorf("%w: schema references nested deeper than %d", ErrUnknownSchema, c.maxDepth)
		}
		for _, r := range refs {
			k := id(r)
			_, named := s.Deps[r.Name]
			if named && visited[k] {
				continue
			}
			dep, err := fetchRef(ctx, r)
			if err != nil {
				return fmt.Errorf("reference %q: %w", r.Name, err)
			}
			if !named {
				s.Deps[r.Name] = dep.Text
			}
			if visited[k] {
				continue
			}
			visited[k] = true
			if err := walk(dep.References, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(s.References, 1)
}

// counters are the live values behind Stats.
type counters struct {
	lookups, cacheHits, notFoundHits, misses, fetches atomic.Uint64
	fetchUnknown, fetchUnavailable, requests          atomic.Uint64
	failures                                          [failCanceled + 1]atomic.Uint64
}

func (c *Client) countFailure(k failureKind) { c.st.failures[k].Add(1) }

// Stats are cumulative counters since New, for the gateway to export as
// metrics. Lookups = CacheHits + NotFoundHits + Misses (+ ids rejected
// without a request); Misses - Fetches is the number of callers that joined a
// fetch already under way.
type Stats struct {
	Lookups      uint64 // SchemaBy* / Resolve calls
	CacheHits    uint64 // answered from the schema cache
	NotFoundHits uint64 // answered from the "not found" cache
	Misses       uint64 // waited for a fetch
	Fetches      uint64 // fetches run: one per id and cache miss
	// Fetch outcomes (a failed fetch is not cached, except as "not found").
	FetchUnknown     uint64 // ended in ErrUnknownSchema
	FetchUnavailable uint64 // ended in ErrUnavailable
	// Requests counts HTTP requests sent, references and failover attempts
	// included; RequestFailures counts the failed ones by kind.
	Requests        uint64
	RequestFailures RequestFailures
	// Entries now in the caches (schemas, including referenced subject
	// versions; "not found" answers).
	CachedSchemas  int
	CachedNotFound int
}

// RequestFailures counts failed HTTP requests by kind.
type RequestFailures struct {
	NotFound  uint64 // 404 with a registry error body (ErrUnknownSchema)
	Network   uint64 // connection refused, reset, TLS failure, ...
	Timeout   uint64 // no answer within RequestTimeout
	Server    uint64 // HTTP 5xx
	Throttled uint64 // HTTP 429
	Auth      uint64 // HTTP 401, 403
	Protocol  uint64 // other statuses, a 404 without a registry body, bad answers
	Canceled  uint64 // the caller's context ended
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	f := &c.st.failures
	return Stats{
		Lookups:          c.st.lookups.Load(),
		CacheHits:        c.st.cacheHits.Load(),
		NotFoundHits:     c.st.notFoundHits.Load(),
		Misses:           c.st.misses.Load(),
		Fetches:          c.st.fetches.Load(),
		FetchUnknown:     c.st.fetchUnknown.Load(),
		FetchUnavailable: c.st.fetchUnavailable.Load(),
		Requests:         c.st.requests.Load(),
		RequestFailures: RequestFailures{
			NotFound:  f[failNotFound].Load(),
			Network:   f[failNetwork].Load(),
			Timeout:   f[failTimeout].Load(),
			Server:    f[failServer].Load(),
			Throttled: f[failThrottled].Load(),
			Auth:      f[failAuth].Load(),
			Protocol:  f[failProtocol].Load(),
			Canceled:  f[failCanceled].Load(),
		},
		CachedSchemas:  c.cache.len(),
		CachedNotFound: c.negative.len(),
	}
}

// Cached answers from the caches alone, without any I/O: ok is false when
// the schema of ref has not been fetched yet (or was evicted); otherwise
// the schema, or the remembered "not found" error. Callers that must not
// block (a connection's read path) check here first and fetch with Resolve
// elsewhere on a miss.
func (c *Client) Cached(ref Ref) (s *Schema, err error, ok bool) {
	var key string
	switch ref.Kind {
	case ConfluentID:
		key = "id:" + strconv.FormatInt(ref.ID, 10)
	case GUID:
		key = "guid:" + ref.GUID
	case GlobalID:
		key = "gid:" + strconv.FormatInt(ref.ID, 10)
	case ContentID:
		key = "cid:" + strconv.FormatInt(ref.ID, 10)
	default:
		return nil, nil, false
	}
	if v, hit := c.cache.get(key); hit {
		c.st.cacheHits.Add(1)
		return v.(*Schema), nil, true
	}
	if v, hit := c.negative.get(key); hit {
		c.st.notFoundHits.Add(1)
		return nil, v.(error), true
	}
	return nil, nil, false
}
