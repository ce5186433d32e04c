package kafkaproto_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"math/big"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func TestSASLKgo(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
		ok   bool
	}{
		{"plain", plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism(), true},
		{"scram-sha-256", scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism(), true},
		{"scram-sha-512", scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism(), true},
		{"scram escaped user name", scram.Auth{User: "bob,=x", Pass: "pw"}.AsSha512Mechanism(), true},
		{"plain wrong password", plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), false},
		{"scram wrong password", scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), false},
		{"scram unknown user", scram.Auth{User: "mallory", Pass: "s3cret"}.AsSha256Mechanism(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.SASL(tc.mech), kgo.RequestRetries(0),
				loginLimit(tc.ok))
			require.NoError(t, err)
			defer cl.Close()
			err = cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: kafkatest.Topic, Value: []byte(tc.name)}).FirstErr()
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
			}
		})
	}
	t.Cleanup(func() {
		assert.Equal(t, 4, env.Sink.TotalRecords())
		assert.GreaterOrEqual(t, env.MetricValue(t, "fluss_gateway_kafka_sasl_failures_total"), 3.0)
	})
}

func TestSASLKcat(t *testing.T) {
	t.Parallel()
	kcat := kafkatest.RequireKcat(t)
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	for i, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		cmd := exec.CommandContext(kafkatest.Context(t), kcat, "-P", "-b", env.Addr, "-t", kafkatest.Topic,
			"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms="+mech,
			"-X", "sasl.username=alice", "-X", "sasl.password=s3cret")
		cmd.Stdin = strings.NewReader("via " + mech + "\n")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", mech, out)
		env.WaitRecords(t, i+1)
	}
}

// TestSASLRequiredBeforeOtherRequests: Metadata before authenticating
// closes the connection.
func TestSASLRequiredBeforeOtherRequests(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	c := dialRaw(t, env.Addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = "GSSAPI"
	resp := c.roundTrip(hs).(*kmsg.SASLHandshakeResponse)
	assert.Equal(t, int16(33), resp.ErrorCode)
	assert.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, resp.SupportedMechanisms)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	c.send(md)
	c.expectClosed()

	// Authenticate without handshake: ILLEGAL_SASL_STATE, then closed.
	c = dialRaw(t, env.Addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 1
	auth.SASLAuthBytes = []byte("\x00alice\x00s3cret")
	assert.Equal(t, int16(34), c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse).ErrorCode)
	c.expectClosed()

	// Bad password: SASL_AUTHENTICATION_FAILED with a message, then closed.
	c = dialRaw(t, env.Addr)
	hs.Mechanism = "PLAIN"
	require.Equal(t, int16(0), c.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode)
	auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
	ar := c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
	assert.Equal(t, int16(58), ar.ErrorCode)
	require.NotNil(t, ar.ErrorMessage)
	c.expectClosed()
}

func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "gateway-test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func TestTLSWithSASL(t *testing.T) {
	t.Parallel()
	serverTLS, clientTLS := selfSignedTLS(t)
	cfg := kafkatest.SASLConfig()
	cfg.TLS = serverTLS
	env := kafkatest.StartServer(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DialTLSConfig(clientTLS),
		kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: kafkatest.Topic, Value: []byte("over tls")}).FirstErr())
	assert.Equal(t, 1, env.Sink.TotalRecords())

	// A plaintext client against the TLS listener fails without harm.
	plainCl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.RequestRetries(0))
	require.NoError(t, err)
	defer plainCl.Close()
	ctx, cancel := context.WithTimeout(kafkatest.Context(t), 2*time.Second)
	defer cancel()
	require.Error(t, plainCl.Ping(ctx))
}

// TestSASLHandshakeV0SCRAM: legacy v0 handshake with bare SCRAM tokens,
// driven by franz-go's SCRAM client.
func TestSASLHandshakeV0SCRAM(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	c := dialRaw(t, env.Addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 0
	hs.Mechanism = "SCRAM-SHA-512"
	require.Equal(t, int16(0), c.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode)

	sess, msg, err := scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism().Authenticate(kafkatest.Context(t), env.Addr)
	require.NoError(t, err)
	for done := false; !done; {
		c.write(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
		c.write(msg)
		reply, err := c.readFrame()
		require.NoError(t, err)
		done, msg, err = sess.Challenge(reply)
		require.NoError(t, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(kafkatest.Topic)}}
	resp := c.roundTrip(md).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)
}
