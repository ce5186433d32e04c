package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/fluss-kafka/gateway/configs"
)

// ecJWK is an ES256 key and its public JWK Set of one key.
type ecJWK struct {
	kid string
	key *ecdsa.PrivateKey
}

func newECJWK(t *testing.T, kid string) ecJWK {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return ecJWK{kid: kid, key: k}
}

func (k ecJWK) set() []byte {
	x, y := make([]byte, 32), make([]byte, 32)
	k.key.X.FillBytes(x)
	k.key.Y.FillBytes(y)
	e := base64.RawURLEncoding.EncodeToString
	return fmt.Appendf(nil, `{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":%q,"x":%q,"y":%q}]}`, k.kid, e(x), e(y))
}

func (k ecJWK) token(t *testing.T, sub string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": "https://idp.test", "sub": sub, "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.key)
	require.NoError(t, err)
	return s
}

// TestOAuthBearerListeners: listeners[].sasl.oauthbearer wired end to end:
// one listener's JWKS from an httptest URL, another's from a file; franz-go
// produces with their tokens; a rotated key (a new kid) is accepted once
// the JWKS serves it, without a restart.
func TestOAuthBearerListeners(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	k1, k2, kf := newECJWK(t, "k1"), newECJWK(t, "k2"), newECJWK(t, "file")
	var served atomic.Pointer[[]byte]
	body := k1.set()
	served.Store(&body)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(*served.Load()) }))
	t.Cleanup(idp.Close)
	dir := t.TempDir()
	jwksPath := filepath.Join(dir, "jwks.json")
	require.NoError(t, os.WriteFile(jwksPath, kf.set(), 0o600))
	cfgPath := filepath.Join(dir, "gateway.yaml")
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, `
listeners:
  - {name: url, bind: '127.0.0.1:0', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {jwks_url: '%s', issuer: 'https://idp.test'}}}
  - {name: file, bind: '127.0.0.2:0', sasl: {mechanisms: [OAUTHBEARER], oauthbearer: {jwks_file: '%s', issuer: 'https://idp.test'}}}
admin: {address: ''}
fluss: {bootstrap: ['%s']}
routes: [{topic: events, table: db.t, value: {format: raw, column: payload}}]
`, idp.URL, jwksPath, cl.Bootstrap()), 0o600))
	cfg, err := configs.Load(cfgPath)
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, g.tokenValidators, 2)
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)
	produce := func(listener int, token string) error {
		c, err := kgo.NewClient(kgo.SeedBrokers(g.kafkaListeners[listener].Addr().String()), kgo.RequestRetries(0), kgo.RecordRetries(0),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		require.NoError(t, err)
		defer c.Close()
		return c.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("x")}).FirstErr()
	}
	// The URL is fetched after start: wait for its keys.
	require.Eventually(t, func() bool { return produce(0, k1.token(t, "alice")) == nil }, time.Minute, 50*time.Millisecond)
	require.NoError(t, produce(1, kf.token(t, "alice")))
	require.Error(t, produce(1, k1.token(t, "alice")), "each listener has its own keys")

	rotated := k2.set()
	served.Store(&rotated)
	// k2's unknown kid asks for an early fetch (at most every 10 s).
	require.Eventually(t, func() bool { return produce(0, k2.token(t, "alice")) == nil }, time.Minute, 100*time.Millisecond)
}
