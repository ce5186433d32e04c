package acl

import (
	"strings"
	"sync/atomic"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// entry is one compiled configs.ACL.
type entry struct {
	principal string // "User:name", or "" for every principal
	all       bool   // operation All
	op        kafkaproto.Operation
	topic     string // the name or prefix; "" with anyTopic
	anyTopic  bool
	prefixed  bool
	deny      bool
}

// Set evaluates topic ACLs with Kafka's rules: a deny matching the
// principal, the topic and the operation (or All) wins; otherwise an allow
// must match, where Write (and All) also allow Describe; with no entries
// at all everything is allowed, as before ACLs existed. Immutable; a
// reload swaps in a new set.
type Set struct {
	entries []entry
}

// NewSet compiles validated ACLs (configs.Parse has checked and
// normalised them).
func NewSet(acls []configs.ACL) *Set {
	s := &Set{entries: make([]entry, 0, len(acls))}
	for _, a := range acls {
		e := entry{
			principal: a.Principal,
			all:       a.Operation == configs.ACLOperationAll,
			op:        kafkaproto.OpDescribe,
			topic:     a.Topic,
			prefixed:  a.PatternType == configs.ACLPatternPrefixed,
			deny:      a.Permission == configs.ACLDeny,
		}
		if a.Operation == configs.ACLOperationWrite {
			e.op = kafkaproto.OpWrite
		}
		if a.Principal == configs.ACLPrincipalPrefix+configs.ACLWildcard {
			e.principal = ""
		}
		if a.Topic == configs.ACLWildcard && !e.prefixed {
			e.topic, e.anyTopic = "", true
		}
		s.entries = append(s.entries, e)
	}
	return s
}

// Allowed reports whether principal may perform op on topic. principal is
// the connection's full principal ("User:<SASL name>" or
// kafkaproto.AnonymousPrincipal), compared byte for byte: a bare name
// matches no entry. Only Write and Describe are ever allowed.
func (s *Set) Allowed(principal string, op kafkaproto.Operation, topic string) bool {
	if op != kafkaproto.OpWrite && op != kafkaproto.OpDescribe {
		return false
	}
	if s == nil || len(s.entries) == 0 {
		return true
	}
	allow := false
	for i := range s.entries {
		e := &s.entries[i]
		if !e.matches(principal, topic) {
			continue
		}
		if e.deny {
			if e.all || e.op == op {
				return false
			}
			continue
		}
		if e.all || e.op == op || (op == kafkaproto.OpDescribe && e.op == kafkaproto.OpWrite) {
			allow = true
		}
	}
	return allow
}

func (e *entry) matches(principal, topic string) bool {
	if e.principal != "" && e.principal != principal {
		return false
	}
	switch {
	case e.anyTopic:
		return true
	case e.prefixed:
		return strings.HasPrefix(topic, e.topic)
	default:
		return topic == e.topic
	}
}

// InForce is the ACL set in force, a kafkaproto.Authorizer; reloads swap
// it with the routes.
type InForce struct {
	set atomic.Pointer[Set]
}

var _ kafkaproto.Authorizer = (*InForce)(nil)

// NewInForce puts acls in force.
func NewInForce(acls []configs.ACL) *InForce {
	h := &InForce{}
	h.Store(acls)
	return h
}

// Store puts acls in force, at once.
func (h *InForce) Store(acls []configs.ACL) { h.set.Store(NewSet(acls)) }

// Authorize implements kafkaproto.Authorizer with the ACLs in force.
// principal is Kafka's principal string, "User:<SASL name>" or
// kafkaproto.AnonymousPrincipal.
func (h *InForce) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	return h.set.Load().Allowed(principal, op, topic)
}
