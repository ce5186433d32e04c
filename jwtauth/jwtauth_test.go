package jwtauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const issuer = "https://idp.example"

// signer is a private key with its key id.
type signer struct {
	kid string
	key any // *rsa.PrivateKey or *ecdsa.PrivateKey
}

func newRSA(t *testing.T, kid string) signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return signer{kid: kid, key: k}
}

func newEC(t *testing.T, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return signer{kid: kid, key: k}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk is the public JWK of s.
func (s signer) jwk() map[string]string {
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		return map[string]string{"kty": "RSA", "kid": s.kid, "use": "sig", "alg": "RS256",
			"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PrivateKey:
		x, y := make([]byte, 32), make([]byte, 32)
		k.X.FillBytes(x)
		k.Y.FillBytes(y)
		return map[string]string{"kty": "EC", "kid": s.kid, "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(x), "y": b64(y)}
	}
	panic("unknown key")
}

func jwks(t *testing.T, signers ...signer) []byte {
	t.Helper()
	keys := []map[string]string{}
	for _, s := range signers {
		keys = append(keys, s.jwk())
	}
	raw, err := json.Marshal(map[string]any{"keys": keys})
	require.NoError(t, err)
	return raw
}

func (s signer) sign(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	method := jwt.SigningMethod(jwt.SigningMethodRS256)
	if _, ok := s.key.(*ecdsa.PrivateKey); ok {
		method = jwt.SigningMethodES256
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = s.kid
	str, err := tok.SignedString(s.key)
	require.NoError(t, err)
	return str
}

// claims are valid claims for sub, expiring in an hour.
func claims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": issuer, "aud": []string{"kafka", "other"}, "sub": sub,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for kk, vv := range c {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func writeFile(t *testing.T, dir string, raw []byte) string {
	t.Helper()
	path := filepath.Join(dir, "jwks.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestValidateToken: every check, each refusal with its reason.
func TestValidateToken(t *testing.T) {
	t.Parallel()
	rs, ec, other := newRSA(t, "rs"), newEC(t, "ec"), newRSA(t, "rs")
	v, err := New(Config{JWKSFile: writeFile(t, t.TempDir(), jwks(t, rs, ec)), Issuer: issuer, Audience: "kafka",
		PrincipalClaim: "preferred_username"}, quietLog())
	require.NoError(t, err)
	good := with(claims("ignored"), "preferred_username", "alice")
	ctx := t.Context()

	for _, s := range []signer{rs, ec} {
		tok, err := v.ValidateToken(ctx, s.sign(t, good))
		require.NoError(t, err, s.kid)
		assert.Equal(t, "alice", tok.Principal)
		assert.WithinDuration(t, time.Now().Add(time.Hour), tok.Expiry, time.Minute)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, good).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, good)
	hs.Header["kid"] = "rs"
	hmacTok, err := hs.SignedString([]byte("secret"))
	require.NoError(t, err)
	for name, tc := range map[string]struct{ token, reason string }{
		"expired":              {rs.sign(t, with(good, "exp", time.Now().Add(-time.Minute).Unix())), "token is expired"},
		"expired within skew":  {rs.sign(t, with(good, "exp", time.Now().Add(-time.Second).Unix())), ""},
		"no exp":               {rs.sign(t, with(good, "exp", nil)), "exp claim is required"},
		"not yet valid":        {rs.sign(t, with(good, "nbf", time.Now().Add(time.Hour).Unix())), "token is not valid yet"},
		"issued in the future": {rs.sign(t, with(good, "iat", time.Now().Add(time.Hour).Unix())), "token used before issued"},
		"wrong issuer":         {rs.sign(t, with(good, "iss", "https://evil.example")), "token has invalid issuer"},
		"wrong audience":       {rs.sign(t, with(good, "aud", "web")), "token has invalid audience"},
		"other key":            {other.sign(t, good), "verification error"},
		"alg none":             {none, "signing method none is invalid"},
		"hmac with the kid":    {hmacTok, "signing method HS256 is invalid"},
		"missing claim":        {rs.sign(t, with(good, "preferred_username", nil)), `claim "preferred_username" (the principal) is missing`},
		"claim not a string":   {rs.sign(t, with(good, "preferred_username", 7)), "is missing or not a string"},
		"invalid principal":    {rs.sign(t, with(good, "preferred_username", "User:bob")), "':' is not allowed"},
		"anonymous":            {rs.sign(t, with(good, "preferred_username", "anonymous")), "is not a user name"},
		"unknown kid":          {signer{kid: "nope", key: rs.key}.sign(t, good), "unknown key id nope"},
		"garbage":              {"not.a.jwt", "token is malformed"},
	} {
		_, err := v.ValidateToken(ctx, tc.token)
		if tc.reason == "" {
			assert.NoError(t, err, name)
			continue
		}
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.reason, name)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), jwks(t, newEC(t, "k")))
	for name, cfg := range map[string]Config{
		"no source":   {Issuer: issuer},
		"two sources": {Issuer: issuer, JWKSFile: file, JWKSURL: "https://idp.example/jwks"},
		"no issuer":   {JWKSFile: file},
		"no file":     {Issuer: issuer, JWKSFile: filepath.Join(t.TempDir(), "missing.json")},
		"not a jwks":  {Issuer: issuer, JWKSFile: writeFile(t, t.TempDir(), []byte(`{"keys":[]}`))},
	} {
		_, err := New(cfg, quietLog())
		assert.Error(t, err, name)
	}
}

// jwksServer serves a JWKS that the test swaps, counting fetches.
type jwksServer struct {
	mu      sync.Mutex
	body    []byte
	status  int
	fetches atomic.Int64
}

func (s *jwksServer) set(status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.fetches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	w.WriteHeader(s.status)
	_, _ = w.Write(s.body)
}

func run(t *testing.T, v *Validator) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); v.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestJWKSURLDownThenUp: a JWKS URL that is down at start refuses tokens
// without blocking; once it answers, its keys are in force.
func TestJWKSURLDownThenUp(t *testing.T) {
	t.Parallel()
	k := newRSA(t, "k1")
	srv := &jwksServer{status: http.StatusServiceUnavailable}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	v, err := New(Config{JWKSURL: hs.URL, Issuer: issuer}, quietLog())
	require.NoError(t, err)
	run(t, v)
	tok := k.sign(t, claims("alice"))
	_, err = v.ValidateToken(t.Context(), tok)
	require.ErrorContains(t, err, "no signing keys loaded yet")
	require.Eventually(t, func() bool { return srv.fetches.Load() >= 1 }, time.Minute, 10*time.Millisecond)
	srv.set(http.StatusOK, jwks(t, k))
	// The retry is after about a second (back-off).
	require.Eventually(t, func() bool { _, err := v.ValidateToken(t.Context(), tok); return err == nil }, time.Minute, 20*time.Millisecond)
}

// TestJWKSRotation: a new key id is picked up after the refresh, from a
// URL (also early, when a token names it) and from a file.
func TestJWKSRotation(t *testing.T) {
	t.Parallel()
	k1, k2 := newRSA(t, "k1"), newEC(t, "k2")
	t.Run("url", func(t *testing.T) {
		t.Parallel()
		srv := &jwksServer{status: http.StatusOK, body: jwks(t, k1)}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		v, err := New(Config{JWKSURL: hs.URL, Issuer: issuer, JWKSRefresh: time.Hour}, quietLog())
		require.NoError(t, err)
		v.kidGap = 0 // no wait between early loads in this test
		run(t, v)
		require.Eventually(t, func() bool { _, err := v.ValidateToken(t.Context(), k1.sign(t, claims("alice"))); return err == nil },
			time.Minute, 10*time.Millisecond)
		srv.set(http.StatusOK, jwks(t, k2))
		// The hour's refresh is far: the unknown kid asks for the load.
		require.Eventually(t, func() bool { _, err := v.ValidateToken(t.Context(), k2.sign(t, claims("alice"))); return err == nil },
			time.Minute, 10*time.Millisecond)
		_, err = v.ValidateToken(t.Context(), k1.sign(t, claims("alice")))
		require.ErrorContains(t, err, "unknown key id k1", "the retired key is gone")
	})
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		failures := &countLog{msg: "jwks load failed; the keys in force stay"}
		v, err := New(Config{JWKSFile: writeFile(t, dir, jwks(t, k1)), Issuer: issuer, JWKSRefresh: 20 * time.Millisecond}, slog.New(failures))
		require.NoError(t, err)
		run(t, v)
		_, err = v.ValidateToken(t.Context(), k1.sign(t, claims("alice")))
		require.NoError(t, err)
		writeFile(t, dir, jwks(t, k1, k2))
		require.Eventually(t, func() bool { _, err := v.ValidateToken(t.Context(), k2.sign(t, claims("alice"))); return err == nil },
			time.Minute, 10*time.Millisecond)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "jwks.json"), []byte("{broken"), 0o600))
		require.Eventually(t, func() bool { return failures.n.Load() >= 2 }, time.Minute, 10*time.Millisecond)
		_, err = v.ValidateToken(t.Context(), k2.sign(t, claims("alice")))
		require.NoError(t, err, "a broken file keeps the keys in force")
	})
}

// countLog counts the records with msg.
type countLog struct {
	msg string
	n   atomic.Int64
}

func (h *countLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *countLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h *countLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countLog) WithGroup(string) slog.Handler      { return h }
