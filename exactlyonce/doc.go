// Package exactlyonce owns the exactly-once path of idempotent producers
// (docs/exactly-once.md, design C). Every Kafka batch of an idempotent
// producer-partition P is written as one sealed Fluss batch per target
// bucket, under a Fluss writer id that belongs to P alone, with per-target
// sequences that follow from P's committed state (package producerstate).
// The state is committed before the Kafka answer. After a crash any
// instance loads the state and, for the batches the producer re-sends,
// computes the same (writer id, bucket, sequence, content) as the crashed
// one: Fluss drops what it already holds and appends the rest.
//
// Failures are handled the same way: once a batch of P fails after its
// sequences were assigned, P's in-memory state is dropped as soon as its
// batches in flight are resolved, and the producer's retry starts again
// from the committed state, exactly as after a crash.
//
// Writer.Admit applies Kafka's idempotence rules (kafkaproto.CheckSequence)
// against P's state, assigns the sequences and queues the sealed batches;
// the produce path hands it the batch's rows grouped by target bucket.
//
// Imports point down: exactlyonce imports producerstate, answer,
// accumulator, sender, fluss, kafkaproto, mapping (a route's
// exactly_once setting) and outage (the log of failing lookups); never
// the produce path or gateway.
package exactlyonce
