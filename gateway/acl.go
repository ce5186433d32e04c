package gateway

import (
	"strings"
	"sync/atomic"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// aclOp is an operation an ACL grants or denies on a topic.
type aclOp int

const (
	// aclDescribe: the topic appears in Metadata.
	aclDescribe aclOp = iota
	// aclWrite: Produce to the topic.
	aclWrite
)

// aclEntry is one compiled configs.ACL.
type aclEntry struct {
	principal string // "User:name", or "" for every principal
	all       bool   // operation All
	op        aclOp
	topic     string // the name or prefix; "" with anyTopic
	anyTopic  bool
	prefixed  bool
	deny      bool
}

// aclSet evaluates topic ACLs with Kafka's rules: a deny matching the
// principal, the topic and the operation (or All) wins; otherwise an allow
// must match, where Write (and All) also allow Describe; with no entries
// at all everything is allowed, as before ACLs existed. Immutable; a
// reload swaps in a new set.
type aclSet struct {
	entries []aclEntry
}

// newACLSet compiles validated ACLs (configs.Parse has checked and
// normalised them).
func newACLSet(acls []configs.ACL) *aclSet {
	s := &aclSet{entries: make([]aclEntry, 0, len(acls))}
	for _, a := range acls {
		e := aclEntry{
			principal: a.Principal,
			all:       a.Operation == configs.ACLOperationAll,
			op:        aclDescribe,
			topic:     a.Topic,
			prefixed:  a.PatternType == configs.ACLPatternPrefixed,
			deny:      a.Permission == configs.ACLDeny,
		}
		if a.Operation == configs.ACLOperationWrite {
			e.op = aclWrite
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

// allowed reports whether principal may perform op on topic. principal is
// the connection's full principal ("User:<SASL name>" or
// kafkaproto.AnonymousPrincipal), compared byte for byte: a bare name
// matches no entry.
func (s *aclSet) allowed(principal string, op aclOp, topic string) bool {
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
		if e.all || e.op == op || (op == aclDescribe && e.op == aclWrite) {
			allow = true
		}
	}
	return allow
}

func (e *aclEntry) matches(principal, topic string) bool {
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

// aclHolder is the ACL set in force; reloads swap it with the routes.
type aclHolder struct {
	set atomic.Pointer[aclSet]
}

func newACLHolder(acls []configs.ACL) *aclHolder {
	h := &aclHolder{}
	h.store(acls)
	return h
}

func (h *aclHolder) store(acls []configs.ACL) { h.set.Store(newACLSet(acls)) }

// allowed evaluates the ACLs in force.
func (h *aclHolder) allowed(principal string, op aclOp, topic string) bool {
	return h.set.Load().allowed(principal, op, topic)
}

// backend is what the Kafka listeners serve: the bridge, with the ACLs in
// force as its kafkaproto.Authorizer.
type backend struct {
	*bridge
	acls *aclHolder
}

var _ kafkaproto.Authorizer = backend{}

// Authorize implements kafkaproto.Authorizer. principal is Kafka's
// principal string, "User:<SASL name>" or kafkaproto.AnonymousPrincipal.
func (b backend) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	switch op {
	case kafkaproto.OpWrite:
		return b.acls.allowed(principal, aclWrite, topic)
	case kafkaproto.OpDescribe:
		return b.acls.allowed(principal, aclDescribe, topic)
	}
	return false
}
