package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/certtest"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// TestCertificatePrincipalsOnRealCluster: on a mutual-TLS listener with
// principal mapping rules and ACLs, each client acts as the principal its
// certificate maps to. franz-go as alice, kcat (librdkafka) as bob and Java
// (kafka-clients, a PEM keystore) as carol each
// land their own topic's records in Fluss (read back with pyfluss) and are
// refused the other's topic with TOPIC_AUTHORIZATION_FAILED; a certificate
// no rule maps and one of another CA get no connection, logged; nothing
// refused lands.
func TestCertificatePrincipalsOnRealCluster(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat not installed (apt-get install kcat)")
	e := newEnv(t)
	tbl := e.createTable(t, table{name: uniqueName("certs"), buckets: 1, columns: []fluss.Column{
		col("payload", fluss.String()),
		col("topic", fluss.String()),
	}})
	dir := t.TempDir()
	ca := certtest.NewCA(t, "gateway")
	caFile := ca.WriteCA(t, dir)
	issue := func(ca *certtest.CA, name string, subject pkix.Name, server bool) (string, string) {
		return certtest.WritePEM(t, dir, name, ca.Issue(t, subject, server))
	}
	serverCert, serverKey := issue(ca, "server", pkix.Name{CommonName: "gateway"}, true)
	g := startGateway(t, gatewayConfig{
		Bootstrap: e.Bootstrap,
		Routes:    payloadRoute("c.alice", tbl) + payloadRoute("c.bob", tbl) + payloadRoute("c.carol", tbl),
		TLS: fmt.Sprintf("{cert_file: %q, key_file: %q, client_ca_file: %q, principal_mapping_rules: [%q]}",
			serverCert, serverKey, caFile, `RULE:^CN=([^,]+),OU=Apps,O=Acme$/$1/L`),
		ACLs: `[{principal: "User:alice", operation: Write, topic: c.alice}, {principal: "User:bob", operation: Write, topic: c.bob}, ` +
			`{principal: "User:carol", operation: Write, topic: c.carol}]`,
	})
	const perClient = 20
	want := map[string]string{} // payload -> topic

	// franz-go as alice.
	aliceCert, aliceKey := issue(ca, "alice", pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"Apps"}, Organization: []string{"Acme"}}, false)
	pair, err := tls.LoadX509KeyPair(aliceCert, aliceKey)
	require.NoError(t, err)
	cl := newProducer(t, g.KafkaAddr, kgo.DialTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}))
	var recs []*kgo.Record
	for n := range perClient {
		payload := fmt.Sprintf("franz-go/alice/%d", n)
		recs = append(recs, &kgo.Record{Topic: "c.alice", Value: []byte(payload)})
		want[payload] = "c.alice"
	}
	produceAll(t, cl, recs...)
	err = cl.ProduceSync(testContext(t), &kgo.Record{Topic: "c.bob", Value: []byte("refused franz-go/alice")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed, "alice wrote bob's topic")

	// kcat (librdkafka) as bob.
	bobCert, bobKey := issue(ca, "bob", pkix.Name{CommonName: "Bob", OrganizationalUnit: []string{"Apps"}, Organization: []string{"Acme"}}, false)
	kcatTLS := func(cert, key, caFile string) []string {
		return []string{"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + caFile,
			"-X", "ssl.certificate.location=" + cert, "-X", "ssl.key.location=" + key}
	}
	produceKcat := func(topic string, tlsArgs []string, lines ...string) (string, error) {
		args := append([]string{"-P", "-b", g.KafkaAddr, "-t", topic, "-X", "acks=all", "-X", "message.timeout.ms=30000"}, tlsArgs...)
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	var lines []string
	for n := range perClient {
		payload := fmt.Sprintf("kcat/bob/%d", n)
		lines = append(lines, payload)
		want[payload] = "c.bob"
	}
	out, err := produceKcat("c.bob", kcatTLS(bobCert, bobKey, caFile), lines...)
	require.NoError(t, err, "kcat as bob: %s", out)
	require.NotContains(t, out, "ERROR", "kcat as bob")
	out, err = produceKcat("c.alice", kcatTLS(bobCert, bobKey, caFile), "refused kcat/bob")
	assert.True(t, err != nil || strings.Contains(out, "ERROR"), "bob wrote alice's topic: %s", out)
	assert.Contains(t, out, "authoriz", "kcat as bob on alice's topic: %s", out)

	// Java (kafka-clients) as carol, her key and certificate in a PEM
	// keystore.
	if java := javaPropsProducer(t); java != nil {
		carolCert, carolKey := issue(ca, "carol", pkix.Name{CommonName: "Carol", OrganizationalUnit: []string{"Apps"}, Organization: []string{"Acme"}}, false)
		keystore := filepath.Join(dir, "carol-keystore.pem")
		writeConcat(t, keystore, carolKey, carolCert)
		props := map[string]string{"bootstrap.servers": g.KafkaAddr, "security.protocol": "SSL",
			"ssl.keystore.type": "PEM", "ssl.keystore.location": keystore,
			"ssl.truststore.type": "PEM", "ssl.truststore.location": caFile,
			"max.block.ms": "20000", "delivery.timeout.ms": "20000", "request.timeout.ms": "10000"}
		var lines []string
		for n := range perClient {
			payload := fmt.Sprintf("java/carol/%d", n)
			lines = append(lines, payload)
			want[payload] = "c.carol"
		}
		out, err := java(t, props, "c.carol", lines...)
		require.NoError(t, err, "java as carol: %s", out)
		out, err = java(t, props, "c.bob", "refused java/carol")
		require.Error(t, err, "carol wrote bob's topic: %s", out)
		assert.Contains(t, out, "TopicAuthorizationException", "java as carol on bob's topic")
	}

	// A subject no rule maps, and a certificate of another CA: no
	// connection, each logged.
	malloryCert, malloryKey := issue(ca, "mallory", pkix.Name{CommonName: "Mallory", OrganizationalUnit: []string{"Ops"}, Organization: []string{"Acme"}}, false)
	other := certtest.NewCA(t, "other")
	strangerCert, strangerKey := issue(other, "stranger", pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"Apps"}, Organization: []string{"Acme"}}, false)
	for _, c := range []struct{ name, cert, key, log string }{
		{"mallory", malloryCert, malloryKey, "client certificate maps to no principal"},
		{"stranger", strangerCert, strangerKey, "tls handshake failed"},
	} {
		pair, err := tls.LoadX509KeyPair(c.cert, c.key)
		require.NoError(t, err)
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.RecordRetries(1), kgo.RequestRetries(1), kgo.RecordDeliveryTimeout(20*time.Second),
			kgo.DialTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}))
		require.NoError(t, err)
		err = cl.ProduceSync(testContext(t), &kgo.Record{Topic: "c.alice", Value: []byte("refused " + c.name)}).FirstErr()
		cl.Close()
		require.Error(t, err, "%s produced", c.name)
		require.Eventually(t, func() bool { return strings.Contains(g.Logs(), c.log) }, time.Minute, 50*time.Millisecond,
			"%s: no log line %q", c.name, c.log)
	}

	rows := e.scanLog(t, tbl)
	got := map[string]string{}
	for _, r := range rows {
		payload := str(t, r.Row, "payload")
		require.NotContains(t, payload, "refused", "a refused record landed")
		_, dup := got[payload]
		require.False(t, dup, "%s landed twice", payload)
		got[payload] = str(t, r.Row, "topic")
	}
	assert.Equal(t, want, got)
	t.Logf("alice (franz-go), bob (kcat) and carol (Java) by certificate: %d rows read back; the other's topic refused; "+
		"an unmapped subject and another CA's certificate refused", len(rows))
}

// writeConcat writes the files' contents, one after the other, into path.
func writeConcat(t *testing.T, path string, files ...string) {
	t.Helper()
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, b...)
	}
	require.NoError(t, os.WriteFile(path, all, 0o600))
}

// javaPropsProducer returns a function that runs PropsProduceMain (Java
// kafka-clients configured by props) sending lines to topic, and returns
// its output, or nil when a Java tool is missing outside CI.
func javaPropsProducer(t *testing.T) func(t *testing.T, props map[string]string, topic string, lines ...string) (string, error) {
	for _, tool := range gatewaytest.JavaTools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed: CI must run the Java client", tool)
			}
			t.Logf("%s not installed: no Java client", tool)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	args, err := gatewaytest.JavaMain(ctx, "PropsProduceMain")
	require.NoError(t, err)
	return func(t *testing.T, props map[string]string, topic string, lines ...string) (string, error) {
		t.Helper()
		var b strings.Builder
		for k, v := range props {
			fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(v, `\`, `\\`))
		}
		file := filepath.Join(t.TempDir(), "producer.properties")
		require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
		cmd := exec.CommandContext(t.Context(), args[0], append(args[1:], file, topic)...)
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
