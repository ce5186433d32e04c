// Package acl owns the topic ACLs: it compiles the configuration's acls
// section and answers, with Kafka's rules, whether a principal may Write
// to or Describe a topic. A reload swaps the set in force at once.
//
// It imports configs (the ACLs as parsed) and kafkaproto (the operations a
// Kafka request asks for); it must not import the write path (mapping,
// accumulator, sender, fluss) or gateway, which wires it to the listeners.
package acl
