package kafkaproto_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// fakeTokens validates tokens "<user>;<expiry in unix ms>", refusing
// those past their expiry and those starting with "forged"; JWTs are
// package jwtauth's.
type fakeTokens struct{ validated atomic.Int64 }

func (f *fakeTokens) ValidateToken(_ context.Context, token string) (kafkaproto.Token, error) {
	f.validated.Add(1)
	user, ms, ok := strings.Cut(token, ";")
	exp, err := strconv.ParseInt(ms, 10, 64)
	switch {
	case strings.HasPrefix(token, "forged"):
		return kafkaproto.Token{}, errors.New("token signature is invalid")
	case !ok || err != nil:
		return kafkaproto.Token{}, errors.New("malformed token")
	case time.Now().After(time.UnixMilli(exp)):
		return kafkaproto.Token{}, errors.New("token is expired")
	}
	return kafkaproto.Token{Principal: user, Expiry: time.UnixMilli(exp)}, nil
}

func fakeToken(user string, life time.Duration) string {
	return fmt.Sprintf("%s;%d", user, time.Now().Add(life).UnixMilli())
}

func oauthConfig(tokens kafkaproto.TokenValidator) kafkaproto.Config {
	return kafkaproto.Config{SASL: &kafkaproto.SASLConfig{
		Mechanisms: []string{kafkaproto.MechanismOAuthBearer}, Tokens: tokens,
	}}
}

func TestOAuthBearerConfig(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, oauthConfig(nil).Validate(), "OAUTHBEARER without a token validator")
	require.NoError(t, oauthConfig(&fakeTokens{}).Validate(), "no users are needed for OAUTHBEARER alone")
	cfg := oauthConfig(&fakeTokens{})
	cfg.SASL.Mechanisms = append(cfg.SASL.Mechanisms, kafkaproto.MechanismPlain)
	require.ErrorContains(t, cfg.Validate(), "without users")
}

// TestOAuthBearerKgo: franz-go's OAUTHBEARER client; the ACL sees the
// token's principal, and refused tokens fail with
// SASL_AUTHENTICATION_FAILED and a log line with the reason.
func TestOAuthBearerKgo(t *testing.T) {
	t.Parallel()
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, oauthConfig(&fakeTokens{}), kafkaproto.WithLogger(slog.New(logs)))
	env.ACL.Set(onlyEvents("User:alice"))
	produce := func(token string, ok bool) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.RequestRetries(0), loginLimit(ok),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		require.NoError(t, err)
		defer cl.Close()
		return cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: kafkatest.Topic, Value: []byte(token)}).FirstErr()
	}
	require.NoError(t, produce(fakeToken("alice", time.Hour), true))
	require.ErrorIs(t, produce(fakeToken("bob", time.Hour), true), kerr.TopicAuthorizationFailed)
	checks := env.ACL.Checks()
	assert.Contains(t, checks, kafkatest.ACLCheck{Principal: "User:alice", Op: kafkaproto.OpWrite, Topic: kafkatest.Topic, Allowed: true})
	assert.Contains(t, checks, kafkatest.ACLCheck{Principal: "User:bob", Op: kafkaproto.OpDescribe, Topic: kafkatest.Topic, Allowed: false})

	err := produce(fakeToken("alice", -time.Minute), false)
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	assert.ErrorContains(t, err, "token is expired")
	require.Eventually(t, func() bool {
		for _, l := range logs.withMsg("sasl authentication failed") {
			if l["mechanism"] == "OAUTHBEARER" && strings.Contains(l["err"], "token is expired") {
				return true
			}
		}
		return false
	}, time.Minute, 10*time.Millisecond, "no log line for the expired token")
	require.ErrorIs(t, produce("forged;1", false), kerr.SaslAuthenticationFailed)
	assert.Equal(t, 1, env.Sink.TotalRecords())
	assert.Equal(t, 2.0, env.MetricValue(t, "fluss_gateway_kafka_sasl_failures_total"), "each refused token counted once")
}

// oauthLogin sends a v1 handshake and the client-first message; it returns
// the SaslAuthenticate response.
func oauthLogin(t *testing.T, c *rawConn, msg string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, kafkaproto.MechanismOAuthBearer
	require.Equal(t, int16(0), c.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte(msg)
	return c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
}

func bearer(token string) string { return "n,,\x01auth=Bearer " + token + "\x01\x01" }

func metadata(c *rawConn) *kmsg.MetadataResponse {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	return c.roundTrip(md).(*kmsg.MetadataResponse)
}

// TestOAuthBearerExchange: the RFC 7628 exchange on the wire: the
// session's lifetime, the error challenge and the client's %x01, the
// authorization id, extensions, malformed messages.
func TestOAuthBearerExchange(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, oauthConfig(&fakeTokens{}))

	c := dialRaw(t, env.Addr)
	r := oauthLogin(t, c, "n,a=alice,\x01auth=Bearer "+fakeToken("alice", time.Hour)+"\x01traceid=42\x01\x01")
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Empty(t, r.SASLAuthBytes)
	assert.InDelta(t, time.Hour.Milliseconds(), r.SessionLifetimeMillis, float64(time.Minute.Milliseconds()))
	assert.Equal(t, int16(0), metadata(c).Topics[0].ErrorCode)

	c = dialRaw(t, env.Addr)
	r = oauthLogin(t, c, bearer(fakeToken("alice", -time.Second)))
	require.Equal(t, int16(0), r.ErrorCode, "the failure comes after the client's %x01")
	assert.JSONEq(t, `{"status":"invalid_token"}`, string(r.SASLAuthBytes))
	ack := kmsg.NewPtrSASLAuthenticateRequest()
	ack.Version, ack.SASLAuthBytes = 2, []byte{1}
	r = c.roundTrip(ack).(*kmsg.SASLAuthenticateResponse)
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, r.ErrorCode)
	require.NotNil(t, r.ErrorMessage)
	assert.Contains(t, *r.ErrorMessage, "token is expired")
	c.expectClosed()

	for name, msg := range map[string]string{
		"authorization id of another": "n,a=bob,\x01auth=Bearer " + fakeToken("alice", time.Hour) + "\x01\x01",
		"no auth":                     "n,,\x01traceid=1\x01\x01",
		"no terminator":               "n,,\x01auth=Bearer " + fakeToken("alice", time.Hour) + "\x01",
		"not bearer":                  "n,,\x01auth=Basic YWxpY2U6eA==\x01\x01",
		"channel binding":             "p=tls-unique,,\x01auth=Bearer x\x01\x01",
		"principal not a user name":   bearer(fakeToken("User:alice", time.Hour)),
	} {
		c := dialRaw(t, env.Addr)
		r := oauthLogin(t, c, msg)
		if r.ErrorCode == 0 { // a refused token: the error challenge first
			require.NotEmpty(t, r.SASLAuthBytes, name)
			ack := kmsg.NewPtrSASLAuthenticateRequest()
			ack.Version, ack.SASLAuthBytes = 2, []byte{1}
			r = c.roundTrip(ack).(*kmsg.SASLAuthenticateResponse)
		}
		assert.Equal(t, kerr.SaslAuthenticationFailed.Code, r.ErrorCode, name)
		c.expectClosed()
	}
}

// TestOAuthBearerExpiredSessionClosed: a connection whose token expired
// without re-authentication is closed at its next request, and logged.
func TestOAuthBearerExpiredSessionClosed(t *testing.T) {
	t.Parallel()
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, oauthConfig(&fakeTokens{}), kafkaproto.WithLogger(slog.New(logs)))
	c := dialRaw(t, env.Addr)
	exp := time.Now().Add(500 * time.Millisecond)
	r := oauthLogin(t, c, bearer(fmt.Sprintf("alice;%d", exp.UnixMilli())))
	require.Equal(t, int16(0), r.ErrorCode)
	require.Positive(t, r.SessionLifetimeMillis)
	require.LessOrEqual(t, r.SessionLifetimeMillis, int64(500))
	assert.Equal(t, int16(0), metadata(c).Topics[0].ErrorCode, "the session is still valid")

	<-time.After(time.Until(exp.Add(10 * time.Millisecond))) // the token's own lifetime
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	c.send(md)
	c.expectClosed()
	require.Len(t, logs.withMsg("closing connection: sasl session expired without re-authentication"), 1)
	assert.Equal(t, "User:alice", logs.withMsg("closing connection: sasl session expired without re-authentication")[0]["principal"])
}

// TestOAuthBearerReauthentication: a new handshake on an authenticated
// connection re-authenticates (KIP-368) and extends the session; it must
// keep the principal and the mechanism.
func TestOAuthBearerReauthentication(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, oauthConfig(&fakeTokens{}))
	c := dialRaw(t, env.Addr)
	require.Equal(t, int16(0), oauthLogin(t, c, bearer(fakeToken("alice", time.Second))).ErrorCode)
	r := oauthLogin(t, c, bearer(fakeToken("alice", time.Hour)))
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Greater(t, r.SessionLifetimeMillis, time.Minute.Milliseconds())
	assert.Equal(t, int16(0), metadata(c).Topics[0].ErrorCode)

	r = oauthLogin(t, c, bearer(fakeToken("bob", time.Hour)))
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, r.ErrorCode)
	require.NotNil(t, r.ErrorMessage)
	assert.Contains(t, *r.ErrorMessage, "changed the principal from User:alice to User:bob")
	c.expectClosed()

	c = dialRaw(t, env.Addr)
	require.Equal(t, int16(0), oauthLogin(t, c, bearer(fakeToken("alice", time.Hour))).ErrorCode)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, kafkaproto.MechanismPlain
	assert.Equal(t, kerr.IllegalSaslState.Code, c.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode, "another mechanism")
	c.expectClosed()
}

// TestOAuthBearerKgoReauthenticates: franz-go re-authenticates before the
// session_lifetime_ms it is given, with a fresh token each time, on the
// same connections: no connection is closed for an expired session.
func TestOAuthBearerKgoReauthenticates(t *testing.T) {
	t.Parallel()
	tokens := &fakeTokens{}
	env := kafkatest.StartServer(t, oauthConfig(tokens))
	var fetched atomic.Int64
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), loginLimit(true),
		kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			fetched.Add(1)
			// franz-go re-authenticates 1 s before the end at the latest.
			return oauth.Auth{Token: fakeToken("alice", 1500*time.Millisecond)}, nil
		})))
	require.NoError(t, err)
	defer cl.Close()
	ctx := kafkatest.Context(t)
	first := int64(-1)
	for n := 0; ; n++ {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: kafkatest.Topic, Value: []byte("x")}).FirstErr())
		if first < 0 {
			first = tokens.validated.Load()
		}
		if tokens.validated.Load() >= first+3 {
			break
		}
		select { // each authentication lasts 1.5 s: produce on, slowly
		case <-ctx.Done():
			t.Fatal("no re-authentication")
		case <-time.After(50 * time.Millisecond):
		}
	}
	assert.Equal(t, fetched.Load(), tokens.validated.Load(), "every token validated")
	// Without re-authentication every login would be a new connection's.
	assert.Less(t, env.MetricValue(t, "fluss_gateway_kafka_connections_total"), float64(tokens.validated.Load()))
	mfs, err := env.Reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotEqual(t, "fluss_gateway_kafka_protocol_errors_total", mf.GetName(), "a connection was closed: %v", mf)
	}
	assert.Zero(t, env.MetricValue(t, "fluss_gateway_kafka_sasl_failures_total"))
}
