package jwtauth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestKgoWithJWTs: franz-go with signed JWTs against a listener: the
// ACL sees User:<sub>, and expired or forged tokens get
// SASL_AUTHENTICATION_FAILED with the reason.
func TestKgoWithJWTs(t *testing.T) {
	t.Parallel()
	k, forger := newRSA(t, "k1"), newRSA(t, "k1")
	v, err := New(Config{JWKSFile: writeFile(t, t.TempDir(), jwks(t, k)), Issuer: issuer, Audience: "kafka"}, quietLog())
	require.NoError(t, err)
	env := kafkatest.StartServer(t, kafkaproto.Config{SASL: &kafkaproto.SASLConfig{
		Mechanisms: []string{kafkaproto.MechanismOAuthBearer}, Tokens: v,
	}})
	env.ACL.Set(func(p string, _ kafkaproto.Operation, topic string) bool {
		return p == "User:alice" && topic == kafkatest.Topic
	})
	produce := func(token string, retries int) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.RequestRetries(0), kgo.RecordRetries(retries),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		require.NoError(t, err)
		defer cl.Close()
		return cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: kafkatest.Topic, Value: []byte("x")}).FirstErr()
	}
	require.NoError(t, produce(k.sign(t, claims("alice")), 10))
	assert.Contains(t, env.ACL.Checks(), kafkatest.ACLCheck{Principal: "User:alice", Op: kafkaproto.OpWrite, Topic: kafkatest.Topic, Allowed: true})
	require.ErrorIs(t, produce(k.sign(t, claims("bob")), 10), kerr.TopicAuthorizationFailed)

	err = produce(k.sign(t, with(claims("alice"), "exp", time.Now().Add(-time.Hour).Unix())), 0)
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	assert.ErrorContains(t, err, "token is expired")
	err = produce(forger.sign(t, claims("alice")), 0)
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	assert.ErrorContains(t, err, "verification error")
	assert.Equal(t, 1, env.Sink.TotalRecords())
}
