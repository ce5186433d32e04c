package gateway

import (
	"github.com/fluss-kafka/gateway/acl"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/produce"
	"github.com/fluss-kafka/gateway/transactions"
)

// backend is what the Kafka listeners serve: the produce path, the
// transaction coordinator (nil: transactions are not served) and the ACLs
// in force as its kafkaproto.Authorizer.
type backend struct {
	*produce.Path
	*transactions.Coordinator
	acls *acl.InForce
}

var _ kafkaproto.Authorizer = backend{}

// Authorize implements kafkaproto.Authorizer with the ACLs in force.
func (b backend) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	return b.acls.Authorize(principal, op, topic)
}
