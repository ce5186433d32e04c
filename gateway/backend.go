package gateway

import (
	"github.com/fluss-kafka/gateway/acl"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// backend is what the Kafka listeners serve: the bridge, with the ACLs in
// force as its kafkaproto.Authorizer.
type backend struct {
	*bridge
	acls *acl.InForce
}

var _ kafkaproto.Authorizer = backend{}

// Authorize implements kafkaproto.Authorizer with the ACLs in force.
func (b backend) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	return b.acls.Authorize(principal, op, topic)
}
