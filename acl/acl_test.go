package acl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	set := NewSet(parseACLs(t, `
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
		op        kafkaproto.Operation
		topic     string
		want      bool
	}{
		{"User:alice", kafkaproto.OpWrite, "orders", true},
		{"alice", kafkaproto.OpWrite, "orders", false},                    // a bare name is no principal
		{"User:User:alice", kafkaproto.OpWrite, "orders", false},          // SASL name "User:alice" is not alice
		{"User:alice", kafkaproto.OpDescribe, "orders", true},             // Write implies Describe
		{"User:alice", kafkaproto.OpWrite, "orders2", false},              // literal is exact
		{"User:alice", kafkaproto.OpWrite, "payments", false},             // nothing allows: denied
		{"User:Alice", kafkaproto.OpWrite, "orders", false},               // names are case-sensitive
		{"User:bob", kafkaproto.OpWrite, "orders", false},                 // another principal
		{"User:etl", kafkaproto.OpWrite, "logs.app", true},                // prefixed
		{"User:etl", kafkaproto.OpWrite, "logs", false},                   // shorter than the prefix
		{"User:etl", kafkaproto.OpWrite, "logs.audit", false},             // deny wins over the prefixed allow
		{"User:etl", kafkaproto.OpDescribe, "logs.audit", true},           // a Write deny does not deny Describe
		{"User:anyone", kafkaproto.OpDescribe, "public", true},            // User:*
		{"User:anyone", kafkaproto.OpWrite, "public", false},              // Describe does not imply Write
		{"User:ops", kafkaproto.OpWrite, "anything", true},                // All on *
		{"User:ops", kafkaproto.OpDescribe, "secret", false},              // deny Describe
		{"User:ops", kafkaproto.OpWrite, "secret", true},                  // ...does not deny Write
		{"User:ops", kafkaproto.OpWrite, "quarantine", false},             // deny All for User:* wins
		{"User:ops", kafkaproto.OpDescribe, "quarantine", false},          // for every operation
		{kafkaproto.AnonymousPrincipal, kafkaproto.OpWrite, "anon", true}, // no SASL
		{kafkaproto.AnonymousPrincipal, kafkaproto.OpWrite, "orders", false},
		{"", kafkaproto.OpWrite, "anon", false}, // "" is no principal
	} {
		assert.Equal(t, tc.want, set.Allowed(tc.principal, tc.op, tc.topic), "%s %v %s", tc.principal, tc.op, tc.topic)
	}
}

// TestNoACLsAllowEverything: without an acls section the gateway behaves
// as before ACLs existed.
func TestNoACLsAllowEverything(t *testing.T) {
	t.Parallel()
	for _, set := range []*Set{nil, NewSet(nil), NewSet(parseACLs(t, ""))} {
		assert.True(t, set.Allowed("", kafkaproto.OpWrite, "t"))
		assert.True(t, set.Allowed("User:alice", kafkaproto.OpDescribe, "t"))
	}
}

// TestInForceAuthorizes: the ACLs in force answer kafkaproto's
// Authorizer, and a swap takes effect at once.
func TestInForceAuthorizes(t *testing.T) {
	t.Parallel()
	h := NewInForce(parseACLs(t, `acls: [{principal: "User:alice", operation: Write, topic: orders}]`))
	var b kafkaproto.Authorizer = h
	assert.True(t, b.Authorize("User:alice", kafkaproto.OpWrite, "orders"))
	assert.True(t, b.Authorize("User:alice", kafkaproto.OpDescribe, "orders"))
	assert.False(t, b.Authorize("User:bob", kafkaproto.OpWrite, "orders"))
	assert.False(t, b.Authorize("User:alice", kafkaproto.Operation(99), "orders"), "an unknown operation is refused")
	h.Store(nil)
	assert.True(t, b.Authorize("User:bob", kafkaproto.OpWrite, "orders"), "no ACLs: allow all")
}
