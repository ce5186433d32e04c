// Package txn holds tests of transactional producers that need cgo
// clients (librdkafka through confluent-kafka-go) against the real
// gateway and a real Fluss cluster; the pure-Go clients' tests are in
// e2e. It has no code of its own.
package txn
