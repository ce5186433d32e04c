package jwtauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/fluss-kafka/gateway/backoff"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Defaults of Config's zero fields.
const (
	DefaultPrincipalClaim = "sub"
	DefaultClockSkew      = 30 * time.Second
	DefaultJWKSRefresh    = time.Hour
)

// Config says where the keys are and what a token must claim.
type Config struct {
	// JWKSURL or JWKSFile (exactly one) holds the JSON Web Key Set.
	JWKSURL  string
	JWKSFile string
	// Issuer must equal the token's iss.
	Issuer string
	// Audience, when set, must be one of the token's aud.
	Audience string
	// PrincipalClaim names the claim holding the user name. Default sub.
	PrincipalClaim string
	// ClockSkew is the leeway of exp, nbf and iat. Default 30s.
	ClockSkew time.Duration
	// JWKSRefresh is how often the JWKS is re-read. Default 1h.
	JWKSRefresh time.Duration
	// HTTPClient fetches JWKSURL; nil is one with a 10 s timeout.
	HTTPClient *http.Client
}

// signingMethods are the asymmetric algorithms accepted: a JWKS publishes
// public keys, so HMAC (a shared secret) and "none" are refused.
var signingMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// maxJWKSBytes bounds a fetched JWKS.
const maxJWKSBytes = 1 << 20

// unknownKIDGap is the least time between two loads asked for by unknown
// key ids: anyone can send a token with a made-up kid.
const unknownKIDGap = 10 * time.Second

// Validator checks tokens against the keys in force. Its ValidateToken is
// safe for concurrent use; Run keeps the keys fresh.
type Validator struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	keys   atomic.Pointer[keyfunc.Keyfunc] // nil until a JWKS loaded
	raw    []byte                          // the JWKS in force; owned by load's caller
	kidGap time.Duration
	// unknownKID asks Run for an early load (buffered, never blocks).
	unknownKID chan struct{}
}

var _ kafkaproto.TokenValidator = (*Validator)(nil)

// New checks cfg and, for a JWKS file, loads it (a file that does not
// load is a configuration error). A URL is first fetched by Run.
func New(cfg Config, log *slog.Logger) (*Validator, error) {
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = DefaultPrincipalClaim
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.JWKSRefresh == 0 {
		cfg.JWKSRefresh = DefaultJWKSRefresh
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	switch {
	case (cfg.JWKSURL == "") == (cfg.JWKSFile == ""):
		return nil, errors.New("exactly one of a JWKS URL and a JWKS file is required")
	case cfg.Issuer == "":
		return nil, errors.New("an issuer is required")
	case cfg.ClockSkew < 0 || cfg.JWKSRefresh < 0:
		return nil, errors.New("clock skew and JWKS refresh must not be negative")
	}
	v := &Validator{cfg: cfg, log: log, now: time.Now, kidGap: min(unknownKIDGap, cfg.JWKSRefresh),
		unknownKID: make(chan struct{}, 1)}
	if cfg.JWKSFile != "" {
		if err := v.load(context.Background()); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// source names where the keys come from, for logs and errors.
func (v *Validator) source() string {
	if v.cfg.JWKSFile != "" {
		return v.cfg.JWKSFile
	}
	return v.cfg.JWKSURL
}

// Run loads the JWKS now if it is not loaded, then every JWKSRefresh, and
// early when a token names an unknown key id, until ctx ends. A failed
// load keeps the keys in force and is retried with back-off.
func (v *Validator) Run(ctx context.Context) {
	retry := backoff.Policy{Initial: time.Second, Max: min(time.Minute, v.cfg.JWKSRefresh), Jitter: 0.2}.Sequence()
	wait := v.cfg.JWKSRefresh
	if v.keys.Load() == nil {
		wait = 0
	}
	last := time.Time{}
	for {
		timer := time.NewTimer(wait)
		kid := v.unknownKID
		if time.Since(last) < v.kidGap {
			kid = nil // the next early load waits for the timer
			wait = min(wait, v.kidGap-time.Since(last))
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-kid:
			timer.Stop()
		}
		last = time.Now()
		if err := v.load(ctx); err != nil {
			wait = retry.Next()
			v.log.Warn("jwks load failed; the keys in force stay", slog.String("source", v.source()),
				slog.Bool("keys_loaded", v.keys.Load() != nil), slog.Duration("retry_in", wait), slog.String("err", err.Error()))
			continue
		}
		retry.Reset()
		wait = v.cfg.JWKSRefresh
	}
}

// load reads the JWKS and puts it in force if it changed.
func (v *Validator) load(ctx context.Context) error {
	raw, err := v.read(ctx)
	if err != nil {
		return err
	}
	if v.keys.Load() != nil && bytes.Equal(raw, v.raw) {
		return nil
	}
	kf, err := keyfunc.NewJWKSetJSON(raw)
	if err != nil {
		return fmt.Errorf("jwks %s: %w", v.source(), err)
	}
	all, err := kf.Storage().KeyReadAll(ctx)
	if err != nil {
		return fmt.Errorf("jwks %s: %w", v.source(), err)
	}
	if len(all) == 0 {
		return fmt.Errorf("jwks %s holds no keys", v.source())
	}
	kids := make([]string, 0, len(all))
	for _, k := range all {
		kids = append(kids, k.Marshal().KID)
	}
	v.raw = raw
	v.keys.Store(&kf)
	v.log.Info("jwks loaded", slog.String("source", v.source()), slog.Any("kids", kids))
	return nil
}

func (v *Validator) read(ctx context.Context) ([]byte, error) {
	if v.cfg.JWKSFile != "" {
		raw, err := os.ReadFile(v.cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("read jwks: %w", err)
		}
		return raw, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jwks %s: %s", v.cfg.JWKSURL, resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch jwks %s: %w", v.cfg.JWKSURL, err)
	}
	if len(raw) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks %s is larger than %d bytes", v.cfg.JWKSURL, maxJWKSBytes)
	}
	return raw, nil
}

// ValidateToken implements kafkaproto.TokenValidator.
func (v *Validator) ValidateToken(ctx context.Context, token string) (kafkaproto.Token, error) {
	kf := v.keys.Load()
	if kf == nil {
		return kafkaproto.Token{}, fmt.Errorf("no signing keys loaded yet from %s", v.source())
	}
	keyOf := (*kf).KeyfuncCtx(ctx)
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(signingMethods), jwt.WithLeeway(v.cfg.ClockSkew), jwt.WithTimeFunc(v.now),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithIssuer(v.cfg.Issuer),
	}
	if v.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(v.cfg.Audience))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		key, err := keyOf(t)
		if errors.Is(err, jwkset.ErrKeyNotFound) {
			select { // the JWKS may have rotated: ask Run to look
			case v.unknownKID <- struct{}{}:
			default:
			}
			return nil, fmt.Errorf("unknown key id %v", t.Header["kid"])
		}
		return key, err
	}, opts...)
	if err != nil {
		return kafkaproto.Token{}, err
	}
	name, _ := claims[v.cfg.PrincipalClaim].(string)
	if name == "" {
		return kafkaproto.Token{}, fmt.Errorf("claim %q (the principal) is missing or not a string", v.cfg.PrincipalClaim)
	}
	if err := kafkaproto.CheckSASLUserName(name); err != nil {
		return kafkaproto.Token{}, fmt.Errorf("claim %q: %q is not a user name: %w", v.cfg.PrincipalClaim, name, err)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil { // required above; kept for safety
		return kafkaproto.Token{}, errors.New("claim exp is missing")
	}
	return kafkaproto.Token{Principal: name, Expiry: exp.Time}, nil
}
