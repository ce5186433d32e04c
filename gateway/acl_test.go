package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// parseACLs decodes an acls section the way the gateway gets it.
func parseACLs(t *testing.T, yaml string) []configs.ACL {
	t.Helper()
	cfg, err := configs.Parse([]byte("fluss: {bootstrap: ['127.0.0.1:9123']}\n" + yaml))
	require.NoError(t, err)
	return cfg.ACLs
}

func TestACLEvaluation(t *testing.T) {
	t.Parallel()
	set := newACLSet(parseACLs(t, `
acls:
  - {principal: "User:alice", operation: Write, topic: orders}
  - {principal: "User:etl", operation: Write, topic: "logs.", pattern_type: prefixed}
  - {principal: "User:etl", operation: Write, topic: "logs.audit", permission: deny}
  - {principal: "User:*", operation: Describe, topic: "public"}
  - {principal: "User:ops", operation: All, topic: "*"}
  - {principal: "User:ops", operation: Describe, topic: "secret", permission: deny}
  - {principal: "User:*", operation: All, topic: "quarantine", permission: deny}
  - {principal: "User:ANONYMOUS", operation: Write, topic: "anon"}
`))
	for _, tc := range []struct {
		principal string
		op        aclOp
		topic     string
		want      bool
	}{
		{"User:alice", aclWrite, "orders", true},
		{"alice", aclWrite, "orders", false},                    // a bare name is no principal
		{"User:User:alice", aclWrite, "orders", false},          // SASL name "User:alice" is not alice
		{"User:alice", aclDescribe, "orders", true},             // Write implies Describe
		{"User:alice", aclWrite, "orders2", false},              // literal is exact
		{"User:alice", aclWrite, "payments", false},             // nothing allows: denied
		{"User:Alice", aclWrite, "orders", false},               // names are case-sensitive
		{"User:bob", aclWrite, "orders", false},                 // another principal
		{"User:etl", aclWrite, "logs.app", true},                // prefixed
		{"User:etl", aclWrite, "logs", false},                   // shorter than the prefix
		{"User:etl", aclWrite, "logs.audit", false},             // deny wins over the prefixed allow
		{"User:etl", aclDescribe, "logs.audit", true},           // a Write deny does not deny Describe
		{"User:anyone", aclDescribe, "public", true},            // User:*
		{"User:anyone", aclWrite, "public", false},              // Describe does not imply Write
		{"User:ops", aclWrite, "anything", true},                // All on *
		{"User:ops", aclDescribe, "secret", false},              // deny Describe
		{"User:ops", aclWrite, "secret", true},                  // ...does not deny Write
		{"User:ops", aclWrite, "quarantine", false},             // deny All for User:* wins
		{"User:ops", aclDescribe, "quarantine", false},          // for every operation
		{kafkaproto.AnonymousPrincipal, aclWrite, "anon", true}, // no SASL
		{kafkaproto.AnonymousPrincipal, aclWrite, "orders", false},
		{"", aclWrite, "anon", false}, // "" is no principal
	} {
		assert.Equal(t, tc.want, set.allowed(tc.principal, tc.op, tc.topic), "%s %v %s", tc.principal, tc.op, tc.topic)
	}
}

// TestNoACLsAllowEverything: without an acls section the gateway behaves
// as before ACLs existed.
func TestNoACLsAllowEverything(t *testing.T) {
	t.Parallel()
	for _, set := range []*aclSet{nil, newACLSet(nil), newACLSet(parseACLs(t, ""))} {
		assert.True(t, set.allowed("", aclWrite, "t"))
		assert.True(t, set.allowed("User:alice", aclDescribe, "t"))
	}
}

// TestBackendAuthorizes: the listeners' backend answers kafkaproto's
// Authorizer from the ACLs in force, and a swap takes effect at once.
func TestBackendAuthorizes(t *testing.T) {
	t.Parallel()
	h := newACLHolder(parseACLs(t, `acls: [{principal: "User:alice", operation: Write, topic: orders}]`))
	var b kafkaproto.Authorizer = backend{acls: h}
	assert.True(t, b.Authorize("User:alice", kafkaproto.OpWrite, "orders"))
	assert.True(t, b.Authorize("User:alice", kafkaproto.OpDescribe, "orders"))
	assert.False(t, b.Authorize("User:bob", kafkaproto.OpWrite, "orders"))
	assert.False(t, b.Authorize("User:alice", kafkaproto.Operation(99), "orders"), "an unknown operation is refused")
	h.store(nil)
	assert.True(t, b.Authorize("User:bob", kafkaproto.OpWrite, "orders"), "no ACLs: allow all")
}

// TestACLsOnTheWire: a gateway with ACLs refuses a Produce its principal
// may not Write with TOPIC_AUTHORIZATION_FAILED, and Metadata shows only
// what it may Describe.
func TestACLsOnTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: ''}
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s}
routes:
  - {topic: visible, table: db.t, value: {format: raw, column: payload}}
  - {topic: hidden, table: db.t, value: {format: raw, column: payload}}
acls: [{principal: 'User:ANONYMOUS', operation: Describe, topic: visible}]
`, cl.Bootstrap())))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	require.NoError(t, g.load(ctx)) // Run's own load then finds the routes bound
	runGateway(t, ctx, g)
	nc, err := net.Dial("tcp", g.kafkaListeners[0].Addr().String())
	require.NoError(t, err)
	defer nc.Close()

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 1
	for _, topic := range []string{"visible", "hidden"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		meta.Topics = append(meta.Topics, mt)
	}
	var resp *kmsg.MetadataResponse
	for corr := int32(1); ; corr++ { // until Run's listeners answer as ready
		resp = kafkaRoundTrip(t, nc, corr, meta).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != kafkaproto.ErrLeaderNotAvailable.Code {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("never ready")
		case <-time.After(10 * time.Millisecond):
		}
	}
	codes := map[string]int16{}
	for _, tp := range resp.Topics {
		codes[*tp.Topic] = tp.ErrorCode
	}
	assert.Equal(t, map[string]int16{"visible": 0, "hidden": kafkaproto.ErrTopicAuthorizationFailed.Code}, codes)

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 3, -1, 10000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "visible"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = testBatch(t)
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	presp := kafkaRoundTrip(t, nc, 100, req).(*kmsg.ProduceResponse)
	require.Len(t, presp.Topics, 1)
	assert.Equal(t, kafkaproto.ErrTopicAuthorizationFailed.Code, presp.Topics[0].Partitions[0].ErrorCode, "Describe does not allow Write")
}
