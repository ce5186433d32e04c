// Package producerstate owns the producer-state table: per Kafka
// producer-partition of an exactly-once route, the Fluss writer id, the
// last sequence per target bucket, the next Kafka sequence and the window
// of answered batches (State), encoded in one row, looked up on a
// producer-partition's first batch on an instance and committed (upserted
// through the writer, versioned) after its batches are written. The table
// is partitioned into generations of the cluster's writer-id expiration
// (generations.go): commits go to the current one, lookups read the
// neighbours too, and older generations are dropped whole, so states of
// producers gone past the expiration are swept without a DELETE, which
// the versioned merge engine does not take. A row may live under three
// keys (slots.go): a commit its bucket does not acknowledge within a
// second is also written under the next key, and lookups keep the highest
// version over all of them, so one unreachable tablet server does not
// hold every producer's commits. What the state means and when it is
// committed is package exactlyonce's.
//
// Imports point down: producerstate imports owntable, accumulator, fluss
// and kafkaproto (the sequence window's size) only.
package producerstate
