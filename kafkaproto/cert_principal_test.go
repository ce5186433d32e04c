package kafkaproto_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/internal/certtest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func TestPrincipalRules(t *testing.T) {
	t.Parallel()
	const subject = "CN=Alice,OU=Apps,O=Acme,C=US"
	cases := []struct {
		name  string
		rules []string
		want  string // "" with wantErr
		err   string
	}{
		{name: "none is DEFAULT", want: subject},
		{name: "DEFAULT", rules: []string{"DEFAULT"}, want: subject},
		{name: "first rule that applies", rules: []string{"RULE:^CN=(.*?),OU=Ops,.*$/ops-$1/", "RULE:^CN=(.*?),OU=(.*?),.*$/$2.$1/L", "DEFAULT"},
			want: "apps.alice"},
		{name: "upper", rules: []string{"RULE:CN=([^,]+),.*/$1/U"}, want: "ALICE"},
		// Go would read "$1x" as the group named "1x"; Kafka's rules mean group 1, then x.
		{name: "group then letters", rules: []string{"RULE:CN=([^,]+),.*/$1x/"}, want: "Alicex"},
		{name: "escaped slash", rules: []string{`RULE:CN=([^,]+),OU=Apps,.*/apps\/$1/`}, want: "apps/Alice"},
		{name: "pattern must match whole subject", rules: []string{"RULE:CN=([^,]+)/$1/"}, err: "no principal mapping rule applies"},
		{name: "no rule applies", rules: []string{"RULE:^CN=(.*),OU=Ops,.*$/$1/"}, err: "no principal mapping rule applies"},
		{name: "maps to anonymous", rules: []string{"RULE:.*/anonymous/"}, err: "reads as another principal"},
		{name: "maps to wildcard", rules: []string{"RULE:.*/*/"}, err: "reads as another principal"},
		{name: "maps to nothing", rules: []string{"RULE:.*//"}, err: "empty principal name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := kafkaproto.ParsePrincipalRules(tc.rules)
			require.NoError(t, err)
			got, err := r.Name(subject)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"RULE:a/b", "RULE:a/b/X", "RULE:(/b/", "CN=x", "RULE:a/b/c/d"} {
		_, err := kafkaproto.ParsePrincipalRules([]string{"DEFAULT", bad})
		assert.ErrorContains(t, err, "principal mapping rule 2", bad)
	}
}

// TestCertificatePrincipals: on a listener that verifies client
// certificates, each connection's principal is its certificate's subject
// mapped by the rules, and the ACLs decide by it: alice writes, bob is
// refused the topic, a subject no rule maps and a certificate of another
// CA are refused the connection, counted and logged.
func TestCertificatePrincipals(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t, "gateway")
	rules, err := kafkaproto.ParsePrincipalRules([]string{"RULE:^CN=([^,]+),OU=Apps(,.*)?$/$1/L"})
	require.NoError(t, err)
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, kafkaproto.Config{
		TLS: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, pkix.Name{CommonName: "gateway"}, true)},
			ClientCAs: ca.Pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		PrincipalRules: rules,
	}, kafkaproto.WithLogger(slog.New(logs)))
	env.ACL.Set(onlyEvents("User:alice"))

	client := func(cert tls.Certificate) *tls.Config {
		return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
	}
	produce := func(cert tls.Certificate) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DialTLSConfig(client(cert)),
			kgo.DefaultProduceTopic(kafkatest.Topic), kgo.RecordRetries(2))
		require.NoError(t, err)
		defer cl.Close()
		return cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Value: []byte("v")}).FirstErr()
	}

	alice := ca.Issue(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"Apps"}, Organization: []string{"Acme"}}, false)
	require.NoError(t, produce(alice), "alice may write events")
	env.WaitRecords(t, 1)

	bob := ca.Issue(t, pkix.Name{CommonName: "Bob", OrganizationalUnit: []string{"Apps"}}, false)
	require.ErrorIs(t, produce(bob), kerr.TopicAuthorizationFailed, "bob may not")
	checks := env.ACL.Checks()
	principals := map[string]bool{}
	for _, c := range checks {
		principals[c.Principal] = true
	}
	assert.True(t, principals["User:alice"] && principals["User:bob"], "the ACLs were asked for the mapped principals: %v", principals)
	assert.False(t, principals[kafkaproto.AnonymousPrincipal], "no connection was anonymous")

	// A subject no rule maps: the connection closes before its first answer.
	mallory := ca.Issue(t, pkix.Name{CommonName: "Mallory", OrganizationalUnit: []string{"Ops"}}, false)
	requireClosedUnanswered(t, env.Addr, client(mallory))
	require.Eventually(t, func() bool { return protocolErrors(t, env, "tls_principal") == 1 }, time.Minute, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return len(logs.withMsg("closing connection: client certificate maps to no principal")) == 1
	},
		time.Minute, 10*time.Millisecond)

	// A certificate of another CA fails the handshake.
	other := certtest.NewCA(t, "another")
	stranger := client(other.Issue(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"Apps"}}, false))
	requireClosedUnanswered(t, env.Addr, stranger)
	require.Eventually(t, func() bool { return protocolErrors(t, env, "tls_handshake") >= 1 }, time.Minute, 10*time.Millisecond)
	// Its log line shares a rate limit with mallory's: it shows once the
	// limit lets a line through again.
	require.Eventually(t, func() bool {
		if len(logs.withMsg("closing connection: tls handshake failed")) > 0 {
			return true
		}
		requireClosedUnanswered(t, env.Addr, stranger)
		return false
	}, time.Minute, 50*time.Millisecond)
	env.WaitRecords(t, 1)
}

// requireClosedUnanswered connects with cfg, sends ApiVersions and requires
// the connection to close without an answer.
func requireClosedUnanswered(t *testing.T, addr string, cfg *tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(kafkatest.Context(t), time.Minute)
	defer cancel()
	d := tls.Dialer{Config: cfg}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return // refused in the handshake already (TLS 1.2)
	}
	r := &rawConn{t: t, c: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("cert-test"))}
	defer func() { _ = nc.Close() }()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	buf := r.f.AppendRequest(nil, req, 1)
	if _, err := nc.Write(buf); err != nil {
		return
	}
	_, err = r.readFrame()
	require.Error(t, err, "the connection was answered")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open: %v", err)
}

// protocolErrors reads fluss_gateway_kafka_protocol_errors_total{reason}.
func protocolErrors(t *testing.T, env *kafkatest.Env, reason string) float64 {
	t.Helper()
	mfs, err := env.Reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "fluss_gateway_kafka_protocol_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
