package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/fluss-kafka/gateway/fluss"
)

// payloadTable is a log table of one bucket with a payload and the topic.
func payloadTable(t *testing.T, e *env, prefix string) string {
	return e.createTable(t, table{name: uniqueName(prefix), buckets: 1, columns: []fluss.Column{
		col("payload", fluss.String()),
		col("topic", fluss.String()),
	}})
}

// payloadRoute routes topic's string values into payloadTable's columns.
func payloadRoute(topic, tbl string) string {
	return fmt.Sprintf("  - {topic: %s, table: %s, value: {format: string, column: payload}, metadata: {topic: topic}}\n", topic, tbl)
}

// readPayloads reads tbl back with pyfluss and requires every payload
// once: the payloads it holds.
func readPayloads(t *testing.T, e *env, tbl string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, r := range e.scanLog(t, tbl) {
		p := str(t, r.Row, "payload")
		require.False(t, got[p], "%s landed twice", p)
		got[p] = true
	}
	return got
}

// credentialsAdd runs `gateway credentials add` for user, the password on
// stdin, merging the entry into file.
func credentialsAdd(t *testing.T, file, user, password string) {
	t.Helper()
	bin, err := gatewayBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, "credentials", "add", "-user", user, "-mechanism", "SCRAM-SHA-256,PLAIN", "-file", file)
	cmd.Stdin = strings.NewReader(password + "\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "credentials add: %s", out)
}

// TestCredentialsFileOnRealCluster: SASL users from a credentials file
// made by `gateway credentials add` (no password in it): franz-go and Java
// with SCRAM-SHA-256 and kcat (librdkafka) with PLAIN write as alice; the
// password is rotated in the file while the gateway runs, after which the
// new one logs in and the old one is refused with
// SASL_AUTHENTICATION_FAILED; every acknowledged record is read back once
// with pyfluss and nothing refused lands.
func TestCredentialsFileOnRealCluster(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat not installed (apt-get install kcat)")
	e := newEnv(t)
	tbl := payloadTable(t, e, "creds")
	file := filepath.Join(t.TempDir(), "credentials.yaml")
	credentialsAdd(t, file, "alice", "first-secret")
	credentialsAdd(t, file, "bob", "bobs-secret")
	content, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, string(content), "first-secret", "a password is in the credentials file")
	require.NotContains(t, string(content), "bobs-secret", "a password is in the credentials file")

	g := startGateway(t, gatewayConfig{
		Bootstrap: e.Bootstrap,
		Routes:    payloadRoute("creds.alice", tbl),
		SASL:      fmt.Sprintf("{mechanisms: [SCRAM-SHA-256, PLAIN], credentials_file: %q}", file),
		ACLs:      `[{principal: "User:alice", operation: Write, topic: creds.alice}]`,
	})
	want := map[string]bool{}
	franz := func(password string, payloads ...string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.RecordRetries(2), kgo.RequestRetries(1),
			kgo.SASL(scram.Auth{User: "alice", Pass: password}.AsSha256Mechanism()))
		require.NoError(t, err)
		defer cl.Close()
		var recs []*kgo.Record
		for _, p := range payloads {
			recs = append(recs, &kgo.Record{Topic: "creds.alice", Value: []byte(p)})
		}
		return cl.ProduceSync(testContext(t), recs...).FirstErr()
	}
	kcatPlain := func(user, password string, payloads ...string) (string, error) {
		cmd := exec.Command(kcat, "-P", "-b", g.KafkaAddr, "-t", "creds.alice", "-X", "acks=all", "-X", "message.timeout.ms=30000",
			"-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username="+user, "-X", "sasl.password="+password)
		cmd.Stdin = strings.NewReader(strings.Join(payloads, "\n") + "\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	batch := func(prefix string) []string {
		var ps []string
		for i := range 20 {
			p := fmt.Sprintf("%s/%d", prefix, i)
			ps = append(ps, p)
			want[p] = true
		}
		return ps
	}
	require.NoError(t, franz("first-secret", batch("franz-go/first")...))
	out, err := kcatPlain("alice", "first-secret", batch("kcat/first")...)
	require.NoError(t, err, "kcat: %s", out)
	require.NotContains(t, out, "ERROR")
	out, err = kcatPlain("bob", "bobs-secret", "refused bob")
	assert.True(t, err != nil || strings.Contains(out, "ERROR"), "bob wrote alice's topic: %s", out)

	// Rotate alice's password in the file the gateway watches.
	credentialsAdd(t, file, "alice", "second-secret")
	require.Eventually(t, func() bool {
		return franz("second-secret", "probe") == nil
	}, time.Minute, 200*time.Millisecond, "the new password was not accepted")
	want["probe"] = true
	require.ErrorIs(t, franz("first-secret", "refused old password"), kerr.SaslAuthenticationFailed)
	require.NoError(t, franz("second-secret", batch("franz-go/second")...))
	out, err = kcatPlain("alice", "second-secret", batch("kcat/second")...)
	require.NoError(t, err, "kcat: %s", out)
	require.NotContains(t, out, "ERROR")
	if java := javaPropsProducer(t); java != nil {
		props := func(password string) map[string]string {
			return map[string]string{"bootstrap.servers": g.KafkaAddr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
				"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="` + password + `";`,
				"max.block.ms":     "20000", "delivery.timeout.ms": "20000", "request.timeout.ms": "10000"}
		}
		out, err := java(t, props("second-secret"), "creds.alice", batch("java/second")...)
		require.NoError(t, err, "java as alice: %s", out)
		out, err = java(t, props("first-secret"), "creds.alice", "refused java old password")
		require.Error(t, err, "java logged in with the old password: %s", out)
		assert.Contains(t, out, "SaslAuthenticationException", "java with the old password")
	}
	assert.NotContains(t, g.Logs(), "first-secret", "a password was logged")

	got := readPayloads(t, e, tbl)
	assert.Equal(t, want, got)
	t.Logf("credentials file: %d rows read back once; the rotated password took effect without a restart, the old one refused", len(got))
}

// TestConnectionLimitOnRealCluster: with kafka.max_connections_per_ip 4,
// four open connections from 127.0.0.1 leave a producer no connection
// (refused and counted), and once they close it writes (franz-go opens
// up to three: the seed's, and the broker's for produce and for the
// rest); its records are read back.
func TestConnectionLimitOnRealCluster(t *testing.T) {
	e := newEnv(t)
	tbl := payloadTable(t, e, "connlimit")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: payloadRoute("limited", tbl), MaxConnectionsPerIP: "4"})

	// Four connections that the gateway answered hold the address's places.
	var held []net.Conn
	for range 4 {
		c, err := net.DialTimeout("tcp", g.KafkaAddr, time.Minute)
		require.NoError(t, err)
		held = append(held, c)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		_, err = c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("holder")).AppendRequest(nil, req, 1))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
		var size [4]byte
		_, err = c.Read(size[:])
		require.NoError(t, err, "a connection within the limit was not answered")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.DefaultProduceTopic("limited"), kgo.RecordDeliveryTimeout(5*time.Second))
	require.NoError(t, err)
	err = cl.ProduceSync(testContext(t), &kgo.Record{Value: []byte("refused while full")}).FirstErr()
	cl.Close()
	require.Error(t, err, "a third connection from the address wrote")
	m := g.RequireMetrics(t)
	assert.Positive(t, m.Sum("fluss_gateway_kafka_connections_refused_total", `reason="per_ip"`))
	assert.Contains(t, g.Logs(), "connection refused: its address is at its connection limit")

	for _, c := range held {
		require.NoError(t, c.Close())
	}
	want := map[string]bool{}
	var recs []*kgo.Record
	for i := range 50 {
		p := fmt.Sprintf("after/%d", i)
		want[p] = true
		recs = append(recs, &kgo.Record{Topic: "limited", Value: []byte(p)})
	}
	// The places free as the gateway sees the closes: retry until then.
	// Each try may also be the first write of a producer into the table
	// (a producer id, its state looked up), which a busy machine can
	// take seconds over: a try that got its connections waits for it.
	var lastErr error
	wrote := assert.Eventually(t, func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.RecordDeliveryTimeout(30*time.Second))
		require.NoError(t, err)
		defer cl.Close()
		lastErr = cl.ProduceSync(testContext(t), recs...).FirstErr()
		return lastErr == nil
	}, 3*time.Minute, 100*time.Millisecond)
	require.True(t, wrote, "no write after the held connections closed; last error: %v", lastErr)
	got := readPayloads(t, e, tbl)
	// A try that failed got no connection, so wrote nothing: each
	// payload once, and the refused one never.
	assert.False(t, got["refused while full"], "the refused record landed")
	for p := range want {
		assert.True(t, got[p], "%s not read back", p)
	}
}

// throttleCount counts the throttles a franz-go client was told of.
type throttleCount struct{ n atomic.Int64 }

func (h *throttleCount) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestQuotaOnRealCluster: alice has a 64 KiB/s producer_byte_rate quota
// and floods; bob has none and writes beside her. Alice's client is told
// to back off (throttle_time_ms) and counted throttled, bob's is not, and
// every acknowledged record of both is read back once.
func TestQuotaOnRealCluster(t *testing.T) {
	e := newEnv(t)
	tbl := payloadTable(t, e, "quota")
	const quota = 64 << 10
	g := startGateway(t, gatewayConfig{
		Bootstrap: e.Bootstrap,
		Routes:    payloadRoute("q.alice", tbl) + payloadRoute("q.bob", tbl),
		SASL:      `{mechanisms: [PLAIN], users: [{username: alice, password: a}, {username: bob, password: b}]}`,
		Quotas:    fmt.Sprintf(`{principals: {"User:alice": {producer_byte_rate: %d}}}`, quota),
	})
	client := func(user, pass string, h *throttleCount) *kgo.Client {
		// Uncompressed: quotas count the bytes on the wire, and the
		// filler would compress to nothing.
		return newProducer(t, g.KafkaAddr, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), kgo.WithHooks(h),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	var aliceThrottles, bobThrottles throttleCount
	alice, bob := client("alice", "a", &aliceThrottles), client("bob", "b", &bobThrottles)

	// Alice sends 1 KiB records in 64 KiB requests until she is throttled
	// a few times: over ten seconds' worth of her quota.
	filler := bytes.Repeat([]byte("x"), 1000)
	want := map[string]bool{}
	var sent int
	for i := 0; aliceThrottles.n.Load() < 3; i++ {
		require.Less(t, sent, 100*quota, "alice was never throttled")
		var recs []*kgo.Record
		for j := range 64 {
			p := fmt.Sprintf("alice/%d/%d/%s", i, j, filler)
			recs = append(recs, &kgo.Record{Topic: "q.alice", Value: []byte(p)})
			want[p] = true
			sent += len(p)
		}
		require.NoError(t, alice.ProduceSync(testContext(t), recs...).FirstErr())
		var calm []*kgo.Record
		p := fmt.Sprintf("bob/%d", i)
		calm = append(calm, &kgo.Record{Topic: "q.bob", Value: []byte(p)})
		want[p] = true
		require.NoError(t, bob.ProduceSync(testContext(t), calm...).FirstErr())
	}
	assert.Zero(t, bobThrottles.n.Load(), "bob, who has no quota, was throttled")
	m := g.RequireMetrics(t)
	assert.Positive(t, m.Sum("fluss_gateway_kafka_quota_throttled_requests_total", `principal="User:alice"`))
	assert.Zero(t, m.Sum("fluss_gateway_kafka_quota_throttled_requests_total", `principal="User:bob"`))
	assert.Positive(t, m.Sum("fluss_gateway_kafka_quota_produce_bytes_total", `principal="User:bob"`))
	assert.Contains(t, g.Logs(), "client quota exceeded: throttling")

	got := readPayloads(t, e, tbl)
	assert.Equal(t, len(want), len(got))
	for p := range want {
		require.True(t, got[p], "%.40s… not read back", p)
	}
	t.Logf("quota: alice sent %d KiB and was throttled %d times, bob never; %d rows read back once", sent>>10, aliceThrottles.n.Load(), len(got))
}
