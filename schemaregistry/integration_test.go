package schemaregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// TestRealRegistry runs against a real registry's Confluent-compatible API:
// SCHEMA_REGISTRY_URL, or an Apicurio started for the test binary (its
// ccompat URL, which also enables the native globalId/contentId checks).
func TestRealRegistry(t *testing.T) {
	base := registrytest.URL(t)
	ctx := t.Context()
	admin, err := sr.NewClient(sr.URLs(base))
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	country, err := admin.CreateSchema(ctx, "it-country-"+suffix, sr.Schema{Schema: countryAvro})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	address, err := admin.CreateSchema(ctx, "it-address-"+suffix, sr.Schema{Schema: addressAvro,
		References: []sr.SchemaReference{{Name: "com.example.Country", Subject: "it-country-" + suffix, Version: country.Version}}})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	userSubject := "it-users-" + suffix + "-value"
	user, err := admin.CreateSchema(ctx, userSubject, sr.Schema{Schema: userAvro,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "it-address-" + suffix, Version: address.Version}}})
	if err != nil {
		t.Fatalf("register: %v", err)
	}

	// A loaded machine's registry can take seconds to answer a first
	// request of a kind (class loading); this test is about answers, not speed.
	c := newClient(t, Config{URLs: []string{base}, RequestTimeout: 30 * time.Second})
	s, err := c.SchemaByID(ctx, user.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantDeps := map[string]string{"com.example.Address": addressAvro, "com.example.Country": countryAvro}
	checkAvro(t, "by id", s, userAvro, wantDeps)
	latest, err := c.LatestSchema(ctx, userSubject)
	if err != nil || latest.ID != int64(user.ID) {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	if _, err := c.SchemaByID(ctx, 1<<30); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown id: %v", err)
	}

	// Apicurio 3.3.3 serves no GUID path, and about one request in 150 for a
	// path it does not serve gets no answer at all (seen with curl too), so a
	// timeout is asked again; the answer, when it comes, must be "unknown".
	quick := newClient(t, Config{URLs: []string{base}, RequestTimeout: 5 * time.Second})
	var guidErr error
	for range 6 {
		_, guidErr = quick.SchemaByGUID(ctx, "44332b0d-f948-8c98-88b0-2f3070835b30")
		if !errors.Is(guidErr, ErrUnavailable) || !strings.Contains(guidErr.Error(), "no answer within") {
			break
		}
		t.Logf("unknown GUID asked again: %v", guidErr)
	}
	if !errors.Is(guidErr, ErrUnknownSchema) {
		t.Errorf("unknown GUID: %v", guidErr)
	}

	// A Protobuf import reference.
	common, err := admin.CreateSchema(ctx, "it-common-"+suffix, sr.Schema{Schema: commonProto, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	order, err := admin.CreateSchema(ctx, "it-orders-"+suffix+"-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common.proto", Subject: "it-common-" + suffix, Version: common.Version}}})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	p, err := c.SchemaByID(ctx, order.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != TypeProtobuf || !strings.Contains(p.Text, "message Order") || !strings.Contains(p.Deps["common.proto"], "message Money") {
		t.Errorf("protobuf: %+v", p)
	}

	// A base URL missing its API path is the gateway's misconfiguration, not
	// the record's fault.
	if u, err := url.Parse(base); err == nil && u.Path != "" && u.Path != "/" {
		u.Path = ""
		wrong := newClient(t, Config{URLs: []string{u.String()}, RequestTimeout: 30 * time.Second})
		if _, err := wrong.SchemaByID(ctx, user.ID); !errors.Is(err, ErrUnavailable) {
			t.Errorf("base URL without its API path: %v, want ErrUnavailable", err)
		}
	}

	if !c.HasApicurioAPI() {
		return
	}
	// Find the user schema's globalId and contentId with Apicurio's search.
	v3 := ccompatSuffix.ReplaceAllString(strings.TrimRight(base, "/"), "/apis/registry/v3")
	resp, err := http.Get(v3 + "/search/versions?artifactId=" + userSubject)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var found struct {
		Versions []struct {
			GlobalID  int64 `json:"globalId"`
			ContentID int64 `json:"contentId"`
		} `json:"versions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil || len(found.Versions) != 1 {
		t.Fatalf("search: %+v %v", found, err)
	}
	g, err := c.SchemaByGlobalID(ctx, found.Versions[0].GlobalID)
	if err != nil {
		t.Fatal(err)
	}
	checkAvro(t, "by globalId", g, userAvro, wantDeps)
	cs, err := c.SchemaByContentID(ctx, found.Versions[0].ContentID)
	if err != nil {
		t.Fatal(err)
	}
	checkAvro(t, "by contentId", cs, userAvro, wantDeps)
	if _, err := c.SchemaByGlobalID(ctx, 1<<40); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("unknown globalId: %v", err)
	}
}

// checkAvro compares schema texts as JSON (a registry may reformat them).
func checkAvro(t *testing.T, what string, s *Schema, text string, deps map[string]string) {
	t.Helper()
	if s.Type != TypeAvro || !sameJSON(s.Text, text) || len(s.Deps) != len(deps) {
		t.Fatalf("%s: %+v", what, s)
	}
	for name, want := range deps {
		if !sameJSON(s.Deps[name], want) {
			t.Errorf("%s: dep %s = %q, want %q", what, name, s.Deps[name], want)
		}
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}
