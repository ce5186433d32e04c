package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// identityProvider is an OAuth server of one test: it serves a JWKS of one
// RSA key and issues client-credentials tokens naming the client id as
// sub, as an identity provider's token endpoint does.
type identityProvider struct {
	*httptest.Server
	key      *rsa.PrivateKey
	issuer   string
	audience string
	mu       sync.Mutex
	issued   map[string]int // tokens issued per client id
}

func newIdentityProvider(t *testing.T) *identityProvider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	idp := &identityProvider{key: key, issuer: "https://idp.test", audience: "fluss-gateway", issued: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, _, ok := r.BasicAuth()
		if !ok {
			_ = r.ParseForm()
			id = r.PostForm.Get("client_id")
		}
		if id == "" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		tok, err := idp.token(key, id, time.Hour)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		idp.mu.Lock()
		idp.issued[id]++
		idp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": 3600})
	})
	idp.Server = httptest.NewServer(mux)
	t.Cleanup(idp.Close)
	return idp
}

// sign makes a token for sub valid for ttl (negative: expired), signed by
// key under the JWKS's key id.
func (idp *identityProvider) sign(t *testing.T, key *rsa.PrivateKey, sub string, ttl time.Duration) string {
	t.Helper()
	s, err := idp.token(key, sub, ttl)
	require.NoError(t, err)
	return s
}

func (idp *identityProvider) token(key *rsa.PrivateKey, sub string, ttl time.Duration) (string, error) {
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": idp.issuer, "aud": idp.audience, "sub": sub,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix(), "scope": "kafka",
	})
	tok.Header["kid"] = "k1"
	return tok.SignedString(key)
}

// issuedTo returns how many tokens the token endpoint issued to id.
func (idp *identityProvider) issuedTo(id string) int {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return idp.issued[id]
}

// TestOAuthBearerOnRealCluster: a listener taking OAUTHBEARER tokens
// checked against an identity provider's JWKS, with ACLs by the tokens'
// subjects. franz-go as alice (tokens it is handed) and Java kafka-clients
// as carol (its OIDC login handler fetching tokens from the provider's
// token endpoint) land their own topic's records in Fluss, read back with
// pyfluss; each is refused the other's topic; an expired token and one
// signed by another key are refused with SASL_AUTHENTICATION_FAILED and
// logged; nothing refused lands.
func TestOAuthBearerOnRealCluster(t *testing.T) {
	e := newEnv(t)
	tbl := payloadTable(t, e, "oauth")
	idp := newIdentityProvider(t)
	g := startGateway(t, gatewayConfig{
		Bootstrap: e.Bootstrap,
		Routes:    payloadRoute("o.alice", tbl) + payloadRoute("o.carol", tbl),
		SASL: fmt.Sprintf("{mechanisms: [OAUTHBEARER], oauthbearer: {jwks_url: %q, issuer: %q, audience: %q}}",
			idp.URL+"/jwks", idp.issuer, idp.audience),
		ACLs: `[{principal: "User:alice", operation: Write, topic: o.alice}, {principal: "User:carol", operation: Write, topic: o.carol}]`,
	})
	want := map[string]bool{}
	franz := func(token string, topic string, payloads ...string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.RecordRetries(2), kgo.RequestRetries(1),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		require.NoError(t, err)
		defer cl.Close()
		var recs []*kgo.Record
		for _, p := range payloads {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(p)})
		}
		return cl.ProduceSync(testContext(t), recs...).FirstErr()
	}
	var alice []string
	for i := range 20 {
		p := fmt.Sprintf("franz-go/alice/%d", i)
		alice = append(alice, p)
		want[p] = true
	}
	aliceToken := idp.sign(t, idp.key, "alice", time.Hour)
	require.NoError(t, franz(aliceToken, "o.alice", alice...))
	require.ErrorIs(t, franz(aliceToken, "o.carol", "refused alice on carol's topic"), kerr.TopicAuthorizationFailed)
	require.ErrorIs(t, franz(idp.sign(t, idp.key, "alice", -time.Hour), "o.alice", "refused expired"), kerr.SaslAuthenticationFailed)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	require.ErrorIs(t, franz(idp.sign(t, other, "alice", time.Hour), "o.alice", "refused forged"), kerr.SaslAuthenticationFailed)
	require.Eventually(t, func() bool { return strings.Contains(g.Logs(), "expired") }, time.Minute, 50*time.Millisecond,
		"the expired token's refusal is not logged")

	if java := javaPropsProducer(t); java != nil {
		props := map[string]string{"bootstrap.servers": g.KafkaAddr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
			"sasl.login.callback.handler.class":                     "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
			"sasl.oauthbearer.token.endpoint.url":                   idp.URL + "/token",
			"sasl.jaas.config":                                      `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="carol" clientSecret="s";`,
			"system.org.apache.kafka.sasl.oauthbearer.allowed.urls": idp.URL + "/token",
			"max.block.ms":                                          "20000", "delivery.timeout.ms": "20000", "request.timeout.ms": "10000"}
		var carol []string
		for i := range 20 {
			p := fmt.Sprintf("java/carol/%d", i)
			carol = append(carol, p)
			want[p] = true
		}
		out, err := java(t, props, "o.carol", carol...)
		require.NoError(t, err, "java as carol: %s", out)
		out, err = java(t, props, "o.alice", "refused carol on alice's topic")
		require.Error(t, err, "carol wrote alice's topic: %s", out)
		assert.Contains(t, out, "TopicAuthorizationException")
	}

	got := readPayloads(t, e, tbl)
	assert.Equal(t, want, got)
	t.Logf("OAUTHBEARER: %d rows read back once; the other's topic refused; expired and forged tokens refused; %d tokens issued to carol",
		len(got), idp.issuedTo("carol"))
}

// TestOAuthBearerKcat: librdkafka (kcat) as built here cannot fetch
// tokens (OIDC needs libcurl), so its OAUTHBEARER sends its own unsecured
// token (alg none, sasl.oauthbearer.config): the gateway refuses it, logs
// it, and nothing lands.
func TestOAuthBearerKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat not installed (apt-get install kcat)")
	e := newEnv(t)
	tbl := payloadTable(t, e, "oauthkcat")
	idp := newIdentityProvider(t)
	g := startGateway(t, gatewayConfig{
		Bootstrap: e.Bootstrap,
		Routes:    payloadRoute("o.bob", tbl),
		SASL: fmt.Sprintf("{mechanisms: [OAUTHBEARER], oauthbearer: {jwks_url: %q, issuer: %q, audience: %q}}",
			idp.URL+"/jwks", idp.issuer, idp.audience),
		ACLs: `[{principal: "User:bob", operation: Write, topic: o.bob}]`,
	})
	cmd := exec.Command(kcat, "-P", "-b", g.KafkaAddr, "-t", "o.bob", "-X", "acks=all", "-X", "message.timeout.ms=10000",
		"-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=OAUTHBEARER",
		"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=bob")
	cmd.Stdin = strings.NewReader("refused unsecured\n")
	out, err := cmd.CombinedOutput()
	assert.True(t, err != nil || strings.Contains(string(out), "ERROR"), "kcat's unsecured token was accepted: %s", out)
	require.Eventually(t, func() bool { return strings.Contains(g.Logs(), "sasl authentication failed") }, time.Minute, 50*time.Millisecond,
		"the refusal is not logged")
	assert.Empty(t, readPayloads(t, e, tbl), "a record of the unsecured token landed")
}
