package schemaregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// fakeApicurio serves srfake under /apis/ccompat/v7 and a few Apicurio v3
// native endpoints (shapes from Apicurio 3.3.x openapi.json) under
// /apis/registry/v3.
type fakeApicurio struct {
	srv  *httptest.Server
	reg  *srfake.Registry
	mu   sync.Mutex
	reqs map[string]int
}

type fakeArtifact struct {
	typ, contentType, content string
	refs                      []wireArtifactRef
}

func newFakeApicurio(t *testing.T) *fakeApicurio {
	f := &fakeApicurio{reg: srfake.NewRegistry(), reqs: map[string]int{}}
	byGlobal := map[string]fakeArtifact{
		"101": {typ: "AVRO", contentType: "application/json", content: userAvro,
			refs: []wireArtifactRef{{ArtifactID: "address", Version: "1", Name: "com.example.Address"}}},
		"102": {typ: "AVRO", contentType: "application/json", content: orderAvro}, // answered without the type header
	}
	byContent := map[string]fakeArtifact{
		"7": {typ: "PROTOBUF", contentType: "application/x-protobuf", content: orderProto,
			refs: []wireArtifactRef{{GroupID: "default", ArtifactID: "common", Version: "1", Name: "common.proto"}}},
		"8": {contentType: "application/json", content: orderAvro}, // no version points at it
	}
	versions := map[string]fakeArtifact{
		"default/address/1": {content: addressAvro, refs: []wireArtifactRef{{GroupID: "default", ArtifactID: "country", Version: "1", Name: "com.example.Country"}}},
		"default/country/1": {content: countryAvro},
		"default/common/1":  {content: commonProto},
	}
	// Bodies as Apicurio 3.3.3 answers them.
	notFound := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"detail":"VersionNotFoundException: No version with global ID '55' found.","title":"No version with global ID '55' found.","status":404,"name":"VersionNotFoundException"}`)
	}
	content := func(w http.ResponseWriter, a fakeArtifact, ok bool) {
		if !ok {
			notFound(w)
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		fmt.Fprint(w, a.content)
	}
	refs := func(w http.ResponseWriter, a fakeArtifact, ok bool) {
		if !ok {
			notFound(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if a.refs == nil {
			a.refs = []wireArtifactRef{}
		}
		json.NewEncoder(w).Encode(a.refs)
	}
	const v3 = "/apis/registry/v3"
	mux := http.NewServeMux()
	mux.Handle("/apis/ccompat/v7/", http.StripPrefix("/apis/ccompat/v7", f.reg.Handler()))
	mux.HandleFunc("GET "+v3+"/ids/globalIds/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		a, ok := byGlobal[id]
		if ok && id != "102" && r.URL.Query().Get("returnArtifactType") == "true" {
			w.Header().Set("X-Registry-ArtifactType", a.typ)
		}
		content(w, a, ok)
	})
	mux.HandleFunc("GET "+v3+"/ids/globalIds/{id}/references", func(w http.ResponseWriter, r *http.Request) {
		a, ok := byGlobal[r.PathValue("id")]
		refs(w, a, ok)
	})
	mux.HandleFunc("GET "+v3+"/ids/contentIds/{id}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := byContent[r.PathValue("id")]
		content(w, a, ok)
	})
	mux.HandleFunc("GET "+v3+"/ids/contentIds/{id}/references", func(w http.ResponseWriter, r *http.Request) {
		a, ok := byContent[r.PathValue("id")]
		refs(w, a, ok)
	})
	mux.HandleFunc("GET "+v3+"/search/versions", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a, ok := byGlobal[q.Get("globalId")]
		if id := q.Get("contentId"); id != "" {
			a, ok = byContent[id]
		}
		var res wireVersionSearch
		if ok && a.typ != "" {
			res.Count = 1
			res.Versions = append(res.Versions, struct {
				ArtifactType string `json:"artifactType"`
			}{a.typ})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	})
	mux.HandleFunc("GET "+v3+"/groups/{g}/artifacts/{a}/versions/{v}/content", func(w http.ResponseWriter, r *http.Request) {
		a, ok := versions[r.PathValue("g")+"/"+r.PathValue("a")+"/"+r.PathValue("v")]
		a.contentType = "application/json"
		content(w, a, ok)
	})
	mux.HandleFunc("GET "+v3+"/groups/{g}/artifacts/{a}/versions/{v}/references", func(w http.ResponseWriter, r *http.Request) {
		a, ok := versions[r.PathValue("g")+"/"+r.PathValue("a")+"/"+r.PathValue("v")]
		refs(w, a, ok)
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs[r.URL.Path]++
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeApicurio) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[path]
}

func TestApicurioGlobalIDDerivedURL(t *testing.T) {
	f := newFakeApicurio(t)
	c := newClient(t, Config{URLs: []string{f.srv.URL + "/apis/ccompat/v7/"}})
	if !c.HasApicurioAPI() {
		t.Fatal("no Apicurio API derived from the ccompat URL")
	}
	ref, payload, err := ParseFraming(hx(t, "0e00"), headers(ApicurioValueGlobalIDHeader, be64(101), ApicurioValueEncodingHeader, "BINARY"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := c.Resolve(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"com.example.Address": addressAvro, "com.example.Country": countryAvro}
		if s.Type != TypeAvro || s.Text != userAvro || s.ID != 101 || fmt.Sprint(s.Deps) != fmt.Sprint(want) {
			t.Fatalf("schema = %+v", s)
		}
	}
	if len(payload) != 2 || f.count("/apis/registry/v3/ids/globalIds/101") != 1 || f.count("/apis/registry/v3/groups/default/artifacts/country/versions/1/content") != 1 {
		t.Errorf("payload %x, requests %v", payload, f.reqs)
	}

	// Without the X-Registry-ArtifactType header the type comes from a search.
	s, err := c.SchemaByGlobalID(t.Context(), 102)
	if err != nil || s.Type != TypeAvro || s.Text != orderAvro {
		t.Fatalf("globalId 102: %+v, %v", s, err)
	}
	if _, err := c.SchemaByGlobalID(t.Context(), 55); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown globalId: %v", err)
	}
}

func TestApicurioContentID(t *testing.T) {
	f := newFakeApicurio(t)
	c := newClient(t, Config{URLs: []string{"http://127.0.0.1:1"}, ApicurioURL: f.srv.URL + "/apis/registry/v3"})
	s, err := c.SchemaByContentID(t.Context(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != TypeProtobuf || s.Text != orderProto || s.Deps["common.proto"] != commonProto {
		t.Errorf("schema = %+v", s)
	}
	if len(s.References) != 1 || s.References[0].ArtifactID != "common" || s.References[0].ArtifactVersion != "1" {
		t.Errorf("references = %+v", s.References)
	}
	if _, err := c.SchemaByContentID(t.Context(), 8); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("content without versions: %v", err)
	}
	if _, err := c.SchemaByContentID(t.Context(), 9); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown contentId: %v", err)
	}
}

func TestApicurioCCompatIDs(t *testing.T) {
	f := newFakeApicurio(t)
	f.reg.SeedSchema("orders-value", 1, 8, sr.Schema{Schema: orderAvro})
	c := newClient(t, Config{URLs: []string{f.srv.URL + "/apis/ccompat/v7"}})
	// Apicurio 3.1.7's default framing: 00 + 4-byte contentId = the ccompat id.
	ref, _, err := ParseFraming(hx(t, "00 00000008 0e00"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Resolve(t.Context(), ref); err != nil || s.Text != orderAvro {
		t.Fatalf("ccompat id 8: %v", err)
	}
}

func TestNoApicurioAPI(t *testing.T) {
	c := newClient(t, Config{URLs: []string{"http://127.0.0.1:1"}})
	if c.HasApicurioAPI() {
		t.Fatal("HasApicurioAPI without an Apicurio URL")
	}
	for _, err := range []error{
		func() error { _, err := c.SchemaByGlobalID(t.Context(), 1); return err }(),
		func() error { _, err := c.SchemaByContentID(t.Context(), 1); return err }(),
	} {
		if !errors.Is(err, ErrNoApicurioAPI) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnknownSchema) {
			t.Errorf("err = %v, want ErrNoApicurioAPI only", err)
		}
	}
	if c.Stats().Requests != 0 {
		t.Error("requests sent")
	}
	if !strings.Contains(fmt.Sprint(ErrNoApicurioAPI), "Apicurio") {
		t.Error("message")
	}
}
