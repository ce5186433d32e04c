package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// principalUsers are the SASL users of TestSASLPrincipalsOnRealCluster:
// names with the characters the configuration accepts, each granted Write
// on its own topic p.u<i> only.
var principalUsers = []string{"alice", "a,b", "a=b", "ünï", "日本"}

// TestSASLPrincipalsOnRealCluster: through a gateway with PLAIN and SCRAM
// listeners and ACLs, every user (odd names included) acts as exactly
// "User:" + its name: its own topic's records land in Fluss (read back
// with pyfluss), every other topic is refused with
// TOPIC_AUTHORIZATION_FAILED and nothing of it lands, and Metadata shows it
// its own topic only. Logging in as "User:alice" with alice's password
// fails, and a configuration naming such a user is refused.
func TestSASLPrincipalsOnRealCluster(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, table{name: uniqueName("principals"), buckets: 1, columns: []fluss.Column{
		col("payload", fluss.String()),
		col("topic", fluss.String()),
	}})
	var users, acls []string
	var routes strings.Builder
	for i, u := range principalUsers {
		users = append(users, fmt.Sprintf("{username: %s, password: %s}", strconv.Quote(u), strconv.Quote("pw-"+u)))
		acls = append(acls, fmt.Sprintf("{principal: %s, operation: Write, topic: p.u%d}", strconv.Quote("User:"+u), i))
		fmt.Fprintf(&routes, "  - {topic: p.u%d, table: %s, value: {format: string, column: payload}, metadata: {topic: topic}}\n", i, tbl)
	}
	g := startGateway(t, gatewayConfig{
		Bootstrap: e.Bootstrap,
		Routes:    routes.String(),
		SASL:      "{mechanisms: [PLAIN, SCRAM-SHA-256], users: [" + strings.Join(users, ", ") + "]}",
		ACLs:      "[" + strings.Join(acls, ", ") + "]",
	})

	mechanisms := map[string]func(user, pass string) sasl.Mechanism{
		"PLAIN":         func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() },
		"SCRAM-SHA-256": func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha256Mechanism() },
	}
	const perLogin = 20
	want := map[string]string{} // payload -> topic
	for mech, auth := range mechanisms {
		for i, u := range principalUsers {
			own := fmt.Sprintf("p.u%d", i)
			other := fmt.Sprintf("p.u%d", (i+1)%len(principalUsers))
			cl := newProducer(t, g.KafkaAddr, kgo.SASL(auth(u, "pw-"+u)))
			var recs []*kgo.Record
			for n := range perLogin {
				payload := fmt.Sprintf("%s/%s/%d", mech, u, n)
				recs = append(recs, &kgo.Record{Topic: own, Value: []byte(payload)})
				want[payload] = own
			}
			produceAll(t, cl, recs...)

			ctx := testContext(t)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: other, Value: []byte("refused " + mech + "/" + u)}).FirstErr()
			require.ErrorIs(t, err, kerr.TopicAuthorizationFailed, "%s %s wrote %s", mech, u, other)

			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			require.NoError(t, err)
			var topics []string
			for _, tp := range resp.Topics {
				topics = append(topics, *tp.Topic)
			}
			assert.Equal(t, []string{own}, topics, "%s %s sees its own topic only", mech, u)
		}
	}

	// "User:alice" is not alice, whatever the password. No record retries:
	// the record fails on the first failed login (a 2 s delivery timeout
	// failed with a bare timeout when that login took longer).
	for mech, auth := range mechanisms {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr), kgo.SASL(auth("User:alice", "pw-alice")),
			kgo.RecordRetries(0), kgo.RequestRetries(0))
		require.NoError(t, err)
		err = cl.ProduceSync(testContext(t), &kgo.Record{Topic: "p.u0", Value: []byte("impostor " + mech)}).FirstErr()
		cl.Close()
		require.ErrorIs(t, err, kerr.SaslAuthenticationFailed, mech)
	}
	require.Eventually(t, func() bool {
		return strings.Contains(g.Logs(), `user=User:alice`)
	}, time.Minute, 50*time.Millisecond, "the failed login is logged with the offered name")
	assert.NotContains(t, g.Logs(), "pw-alice", "a password was logged")

	rows := e.scanLog(t, tbl)
	got := map[string]string{}
	for _, r := range rows {
		payload := str(t, r.Row, "payload")
		require.NotContains(t, payload, "refused", "a refused record landed")
		require.NotContains(t, payload, "impostor", "an impostor's record landed")
		_, dup := got[payload]
		require.False(t, dup, "%s landed twice", payload)
		got[payload] = str(t, r.Row, "topic")
	}
	assert.Equal(t, want, got)
	t.Logf("%d users x %d mechanisms: %d rows read back, every refused write refused", len(principalUsers), len(mechanisms), len(rows))
}

// TestSASLUserNamedLikePrincipalRefused: gateway validate (and start)
// refuse user names that would read as another principal, naming the key.
func TestSASLUserNamedLikePrincipalRefused(t *testing.T) {
	bin, err := gatewayBinary()
	require.NoError(t, err)
	cfg := gatewaytest.Config{
		Bootstrap:    "127.0.0.1:1",
		Routes:       "  - {topic: t, table: db.t}\n",
		ListenerSASL: `{mechanisms: [PLAIN], users: [{username: "User:alice", password: x}, {username: ANONYMOUS, password: x}, {username: "*", password: x}, {username: "a:b", password: x}]}`,
		ACLs:         `[{principal: "User:User:alice", operation: Write, topic: t}]`,
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg.YAML(freePort(t), freePort(t))), 0o600))
	for _, args := range [][]string{{"validate", "-config", path}, {"-config", path}} {
		out, err := exec.CommandContext(testContext(t), bin, args...).CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v: %s", args, out)
		assert.Equal(t, 1, exit.ExitCode())
		for _, w := range []string{
			`sasl.users[0].username: "User:alice": ':' is not allowed`,
			`sasl.users[1].username: "ANONYMOUS": User:ANONYMOUS is the principal of connections without SASL`,
			`sasl.users[2].username: "*": * is the wildcard`,
			`sasl.users[3].username: "a:b": ':' is not allowed`,
			`acls[0].principal: "User:User:alice": ':' is not allowed`,
		} {
			assert.Contains(t, string(out), w, "%v", args)
		}
	}
}
