package schemaregistry

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

const (
	addressAvro = `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"country","type":"com.example.Country"}]}`
	countryAvro = `{"type":"enum","name":"Country","namespace":"com.example","symbols":["DE","FR"]}`
	userAvro    = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"home","type":"com.example.Address"}]}`
	orderAvro   = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	commonProto = "syntax = \"proto3\";\npackage common;\nmessage Money { string currency = 1; int64 units = 2; }\n"
	orderProto  = "syntax = \"proto3\";\nimport \"common.proto\";\nmessage Order { common.Money total = 1; }\n"
)

// requestCounter counts requests by path on a srfake registry.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func countRequests(reg *srfake.Registry) *requestCounter {
	c := &requestCounter{n: map[string]int{}}
	reg.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		c.mu.Lock()
		c.n[r.URL.Path]++
		c.mu.Unlock()
		return false
	})
	return c
}

func (c *requestCounter) get(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func newFake(t *testing.T, opts ...srfake.Option) *srfake.Registry {
	reg := srfake.New(opts...)
	t.Cleanup(reg.Close)
	return reg
}

func TestSchemaByIDCached(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	reqs := countRequests(reg)
	c := newClient(t, Config{URLs: []string{reg.URL()}})

	for range 3 {
		s, err := c.SchemaByID(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.Type != TypeAvro || s.Text != orderAvro || s.ID != 1 || len(s.Deps) != 0 {
			t.Fatalf("schema = %+v", s)
		}
	}
	if n := reqs.get("/schemas/ids/1"); n != 1 {
		t.Errorf("%d requests for id 1, want 1", n)
	}
	st := c.Stats()
	if st.Lookups != 3 || st.CacheHits != 2 || st.Fetches != 1 || st.Requests != 1 || st.CachedSchemas != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestAvroReferences(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("country", 1, 1, sr.Schema{Schema: countryAvro})
	reg.SeedSchema("address", 1, 2, sr.Schema{Schema: addressAvro,
		References: []sr.SchemaReference{{Name: "com.example.Country", Subject: "country", Version: 1}}})
	reg.SeedSchema("users-value", 1, 3, sr.Schema{Schema: userAvro,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "address", Version: 1}}})
	reqs := countRequests(reg)
	c := newClient(t, Config{URLs: []string{reg.URL()}})

	s, err := c.SchemaByID(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"com.example.Address": addressAvro, "com.example.Country": countryAvro}
	if fmt.Sprint(s.Deps) != fmt.Sprint(want) {
		t.Errorf("deps = %v, want %v", s.Deps, want)
	}
	if len(s.References) != 1 || s.References[0] != (Reference{Name: "com.example.Address", Subject: "address", Version: 1}) {
		t.Errorf("references = %+v", s.References)
	}
	// The referenced subject version is cached: id 2 (address) needs only its own fetch.
	if _, err := c.SchemaByID(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if n := reqs.get("/subjects/country/versions/1"); n != 1 {
		t.Errorf("country fetched %d times, want 1", n)
	}
}

func TestProtobufImportReference(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("common.proto", 1, 10, sr.Schema{Schema: commonProto, Type: sr.TypeProtobuf})
	reg.SeedSchema("orders-value", 1, 11, sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common.proto", Subject: "common.proto", Version: 1}}})
	c := newClient(t, Config{URLs: []string{reg.URL()}})

	ref, payload, err := ParseFraming(hx(t, "00 0000000b 00 0a00"), nil, Options{MessageIndexes: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Resolve(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != TypeProtobuf || s.Text != orderProto || s.Deps["common.proto"] != commonProto || len(s.Deps) != 1 {
		t.Errorf("schema = %+v", s)
	}
	if hex.EncodeToString(payload) != "0a00" || fmt.Sprint(ref.MessageIndexes) != "[0]" {
		t.Errorf("payload %x, indexes %v", payload, ref.MessageIndexes)
	}
}

func TestReferenceDepthBound(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("a", 1, 1, sr.Schema{Schema: `"string"`})
	reg.SeedSchema("b", 1, 2, sr.Schema{Schema: `"string"`, References: []sr.SchemaReference{{Name: "A", Subject: "a", Version: 1}}})
	reg.SeedSchema("c", 1, 3, sr.Schema{Schema: `"string"`, References: []sr.SchemaReference{{Name: "B", Subject: "b", Version: 1}}})
	c := newClient(t, Config{URLs: []string{reg.URL()}, MaxReferenceDepth: 1})
	if _, err := c.SchemaByID(t.Context(), 2); err != nil {
		t.Fatalf("depth 1: %v", err)
	}
	if _, err := c.SchemaByID(t.Context(), 3); !errors.Is(err, ErrUnknownSchema) || !strings.Contains(err.Error(), "deeper than 1") {
		t.Fatalf("depth 2 with bound 1: err = %v", err)
	}
}

func TestSchemaByGUID(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	ss, ok := reg.GetSchema("orders-value", 1)
	if !ok || ss.GUID == "" {
		t.Fatalf("srfake gave no GUID: %+v", ss)
	}
	raw, err := hex.DecodeString(strings.ReplaceAll(ss.GUID, "-", ""))
	if err != nil || len(raw) != 16 {
		t.Fatalf("GUID %q: %v", ss.GUID, err)
	}
	hdr := append([]byte{1}, raw...)
	ref, payload, err := ParseFraming([]byte{0x04}, headers(ValueSchemaIDHeader, hdr), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Kind != GUID || ref.GUID != ss.GUID || len(payload) != 1 {
		t.Fatalf("ref = %+v payload %x", ref, payload)
	}
	c := newClient(t, Config{URLs: []string{reg.URL()}})
	s, err := c.Resolve(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if s.Text != orderAvro || s.GUID != ss.GUID || s.Type != TypeAvro {
		t.Errorf("schema = %+v", s)
	}
	if _, err := c.SchemaByGUID(t.Context(), "7f000000-0000-8000-8000-000000000000"); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown GUID: %v", err)
	}
}

func TestLatestSchema(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	reg.SeedSchema("orders-value", 2, 5, sr.Schema{Schema: `{"type":"record","name":"Order","fields":[]}`})
	reqs := countRequests(reg)
	c := newClient(t, Config{URLs: []string{reg.URL()}})
	s, err := c.LatestSchema(t.Context(), "orders-value")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != 5 || s.Version != 2 || s.Subject != "orders-value" {
		t.Errorf("latest = %+v", s)
	}
	if _, err := c.SchemaByID(t.Context(), 5); err != nil || reqs.get("/schemas/ids/5") != 0 {
		t.Errorf("id 5 after LatestSchema: err %v, %d requests (want a cache hit)", err, reqs.get("/schemas/ids/5"))
	}
	if _, err := c.LatestSchema(t.Context(), "nope-value"); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown subject: %v", err)
	}
}

func TestNotFoundIsCachedBriefly(t *testing.T) {
	reg := newFake(t)
	reqs := countRequests(reg)
	c := newClient(t, Config{URLs: []string{reg.URL()}, NotFoundTTL: 200 * time.Millisecond})

	for range 5 {
		_, err := c.SchemaByID(t.Context(), 999)
		if !errors.Is(err, ErrUnknownSchema) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnknownSchema only", err)
		}
	}
	if n := reqs.get("/schemas/ids/999"); n != 1 {
		t.Fatalf("%d requests within the TTL, want 1", n)
	}
	st := c.Stats()
	if st.NotFoundHits != 4 || st.FetchUnknown != 1 || st.RequestFailures.NotFound != 1 || st.CachedNotFound != 1 {
		t.Errorf("stats = %+v", st)
	}
	time.Sleep(300 * time.Millisecond)
	reg.SeedSchema("late-value", 1, 999, sr.Schema{Schema: orderAvro})
	if _, err := c.SchemaByID(t.Context(), 999); err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	// Ids no registry issues are refused without a request.
	if _, err := c.SchemaByID(t.Context(), 0); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("id 0: %v", err)
	}
}

func TestNotFoundClassification(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	// A wrong base path on srfake: the mux answers a plain-text 404.
	c := newClient(t, Config{URLs: []string{reg.URL() + "/wrong/prefix"}})
	if _, err := c.SchemaByID(t.Context(), 1); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("plain-text 404: err = %v, want ErrUnavailable", err)
	}

	for _, tc := range []struct {
		name, body string
		unknown    bool
	}{
		{"confluent schema not found", `{"error_code":40403,"message":"Schema 9 not found"}`, true},
		{"confluent subject not found", `{"error_code":40401,"message":"Subject 'x' not found."}`, true},
		{"apicurio native version not found", `{"detail":"VersionNotFoundException: No version with global ID '9' found.","title":"No version with global ID '9' found.","status":404,"name":"VersionNotFoundException"}`, true},
		{"apicurio native content not found", `{"title":"No content with ID '9' was found.","status":404,"name":"ContentNotFoundException"}`, true},
		// Wrong base URLs, as Confluent (Jersey) and Apicurio (RESTEasy) answer them.
		{"confluent unknown path", `{"error_code":404,"message":"HTTP 404 Not Found"}`, false},
		{"apicurio unknown path", `{"detail":"NotFoundException: RESTEASY003210: Could not find resource for full path: http://127.0.0.1:8081/schemas/ids/1","title":"RESTEASY003210: Could not find resource for full path","status":404,"name":"NotFoundException"}`, false},
		{"empty body", ``, false},
		{"html", `<html>404</html>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			c := newClient(t, Config{URLs: []string{srv.URL}})
			_, err := c.SchemaByID(t.Context(), 9)
			if tc.unknown != errors.Is(err, ErrUnknownSchema) || tc.unknown == errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want unknown=%v", err, tc.unknown)
			}
			if got := c.Stats().CachedNotFound; got != map[bool]int{true: 1, false: 0}[tc.unknown] {
				t.Errorf("%d cached not-found entries", got)
			}
		})
	}
}

// failing serves status for every request and counts them.
func failing(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error_code":%d,"message":"injected"}`, status*100+1)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRetriableFailuresNotCachedNextURLTried(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	for _, status := range []int{500, 503, 429, 401, 403} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			bad, n := failing(t, status)
			only := newClient(t, Config{URLs: []string{bad.URL}})
			for i := 1; i <= 2; i++ {
				_, err := only.SchemaByID(t.Context(), 1)
				if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnknownSchema) {
					t.Fatalf("err = %v, want ErrUnavailable", err)
				}
				if int(n.Load()) != i {
					t.Fatalf("%d requests after %d lookups: failure was cached", n.Load(), i)
				}
			}
			st := only.Stats()
			if st.FetchUnavailable != 2 || st.CachedSchemas+st.CachedNotFound != 0 {
				t.Errorf("stats = %+v", st)
			}
			f := st.RequestFailures
			switch {
			case status >= 500 && f.Server != 2, status == 429 && f.Throttled != 2, status < 429 && f.Auth != 2:
				t.Errorf("failures = %+v", f)
			}

			both := newClient(t, Config{URLs: []string{bad.URL, reg.URL()}})
			s, err := both.SchemaByID(t.Context(), 1)
			if err != nil || s.Text != orderAvro {
				t.Fatalf("failover: %v", err)
			}
			// The URL that answered is preferred from now on.
			before := n.Load()
			if _, err := both.SchemaByID(t.Context(), 2); !errors.Is(err, ErrUnknownSchema) {
				t.Fatalf("id 2: %v", err)
			}
			if n.Load() != before {
				t.Error("the failing URL was tried again before the one that answered")
			}
		})
	}
}

func TestTimeoutAndUnreachable(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	c := newClient(t, Config{URLs: []string{slow.URL}, RequestTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, err = c.SchemaByID(t.Context(), 1)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("slow: err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %v", d)
	}
	if f := c.Stats().RequestFailures; f.Timeout != 1 {
		t.Errorf("failures = %+v", f)
	}

	c = newClient(t, Config{URLs: []string{closed}})
	if _, err := c.SchemaByID(t.Context(), 1); !errors.Is(err, ErrUnavailable) || c.Stats().RequestFailures.Network != 1 {
		t.Fatalf("unreachable: err = %v, stats %+v", err, c.Stats())
	}

	c = newClient(t, Config{URLs: []string{slow.URL, closed, reg.URL()}, RequestTimeout: 100 * time.Millisecond})
	if s, err := c.SchemaByID(t.Context(), 1); err != nil || s.Text != orderAvro {
		t.Fatalf("failover past a slow and a closed URL: %v", err)
	}
}

func TestCallerContextEnds(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	reqs := countRequests(reg)
	reg.Intercept(func(http.ResponseWriter, *http.Request) bool { time.Sleep(200 * time.Millisecond); return false })
	c := newClient(t, Config{URLs: []string{reg.URL()}})

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := c.SchemaByID(ctx, 1)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	// The fetch went on without the caller and filled the cache.
	deadline := time.Now().Add(3 * time.Second)
	for c.Stats().CachedSchemas == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.SchemaByID(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if n := reqs.get("/schemas/ids/1"); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestConcurrentLookupsFetchOnce(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	reqs := countRequests(reg)
	// Slow answers keep the goroutines waiting on the same fetch.
	reg.Intercept(func(http.ResponseWriter, *http.Request) bool { time.Sleep(50 * time.Millisecond); return false })
	c := newClient(t, Config{URLs: []string{reg.URL()}})

	const n = 100
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			<-start
			s, err := c.SchemaByID(t.Context(), 1)
			if err == nil && s.Text != orderAvro {
				err = fmt.Errorf("text %q", s.Text)
			}
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := reqs.get("/schemas/ids/1"); got != 1 {
		t.Fatalf("%d HTTP fetches for %d concurrent lookups, want 1", got, n)
	}
	if st := c.Stats(); st.Fetches != 1 || st.Lookups != n || st.Misses+st.CacheHits != n {
		t.Errorf("stats = %+v", st)
	}
}

func TestBasicAuthAndBearerToken(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth string
		cfg  Config
	}{
		{"basic", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")), Config{Username: "alice", Password: "s3cret"}},
		{"bearer", "Bearer tok-123", Config{BearerToken: "tok-123"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newFake(t, srfake.WithAuth(tc.auth))
			reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
			cfg := tc.cfg
			cfg.URLs = []string{reg.URL()}
			if _, err := newClient(t, cfg).SchemaByID(t.Context(), 1); err != nil {
				t.Fatalf("with credentials: %v", err)
			}
			anon := newClient(t, Config{URLs: []string{reg.URL()}})
			_, err := anon.SchemaByID(t.Context(), 1)
			if !errors.Is(err, ErrUnavailable) || anon.Stats().RequestFailures.Auth != 1 {
				t.Fatalf("without credentials: err = %v, stats %+v", err, anon.Stats())
			}
		})
	}
}

func TestTLSWithCAFile(t *testing.T) {
	reg := srfake.NewRegistry()
	reg.SeedSchema("orders-value", 1, 1, sr.Schema{Schema: orderAvro})
	srv := httptest.NewTLSServer(reg.Handler())
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, Config{URLs: []string{srv.URL}, CAFile: ca})
	if s, err := c.SchemaByID(t.Context(), 1); err != nil || s.Text != orderAvro {
		t.Fatalf("with the CA file: %v", err)
	}
	untrusted := newClient(t, Config{URLs: []string{srv.URL}})
	if _, err := untrusted.SchemaByID(t.Context(), 1); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, []byte("nothing"), 0o600)
	if _, err := New(Config{URLs: []string{srv.URL}, CAFile: empty}); err == nil {
		t.Error("New accepted a CA file without certificates")
	}
}

func TestCacheBound(t *testing.T) {
	reg := newFake(t)
	for id := 1; id <= 3; id++ {
		reg.SeedSchema(fmt.Sprintf("s%d", id), 1, id, sr.Schema{Schema: orderAvro})
	}
	c := newClient(t, Config{URLs: []string{reg.URL()}, CacheSize: 2})
	for _, id := range []int{1, 2, 3, 1} {
		if _, err := c.SchemaByID(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.CachedSchemas != 2 || st.Fetches != 4 {
		t.Errorf("stats = %+v (want 2 cached, id 1 evicted and fetched again)", st)
	}
}

func TestNewValidation(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{URLs: []string{"sr:8081"}},
		{URLs: []string{"ftp://sr:8081"}},
		{URLs: []string{"http://u:p@sr:8081"}},
		{URLs: []string{"http://sr:8081?x=1"}},
		{URLs: []string{"http://sr:8081"}, Username: "u", BearerToken: "t"},
		{URLs: []string{"http://sr:8081"}, Password: "p"},
		{URLs: []string{"http://sr:8081"}, CAFile: "/nonexistent/ca.pem"},
		{URLs: []string{"http://sr:8081"}, ApicurioURL: "apicurio"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) passed", cfg)
		}
	}
	if d := DefaultConfig(); d.RequestTimeout != 5*time.Second || d.NotFoundTTL != 30*time.Second || d.CacheSize != DefaultCacheSize {
		t.Errorf("DefaultConfig = %+v", d)
	}
}

// TestCachedAnswersWithoutIO: Cached sees what Resolve fetched (and the
// remembered not-found), and nothing else.
func TestCachedAnswersWithoutIO(t *testing.T) {
	reg := newFake(t)
	reg.SeedSchema("s-value", 1, 7, sr.Schema{Schema: `{"type":"string"}`})
	c := newClient(t, Config{URLs: []string{reg.URL()}})
	ref := Ref{Kind: ConfluentID, ID: 7}
	if _, _, ok := c.Cached(ref); ok {
		t.Fatal("Cached hit before any fetch")
	}
	if _, err := c.Resolve(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	s, err, ok := c.Cached(ref)
	if !ok || err != nil || s == nil || s.Text != `{"type":"string"}` {
		t.Fatalf("Cached after Resolve = %v, %v, %v", s, err, ok)
	}
	missing := Ref{Kind: ConfluentID, ID: 999}
	if _, err := c.Resolve(t.Context(), missing); !errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("Resolve(999) = %v", err)
	}
	if _, err, ok := c.Cached(missing); !ok || !errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("Cached(999) = %v, %v: want the remembered not-found", err, ok)
	}
}
