// Package produce owns the produce path: from a Kafka partition's batch,
// handed over by kafkaproto, to the Kafka answer. Path.Produce resolves the
// topic's route in the generation of bound routes in force (Bound; a
// reload swaps it), prepares the batch (prepare.go, the one pipeline of
// every path: registry framings and writer schemas, schema following,
// conversion into rows by mapping, dead letters or record_errors), resolves
// Fluss partitions (partitions.go: off the connection's read goroutine when
// one must be looked up or created, queued per Kafka partition so order
// holds), appends the rows to the writer and turns the Fluss acks into the
// Kafka answer (package answer).
//
// Idempotent producers on exactly-once routes go through exactly_once.go:
// rows grouped by target bucket, queued per producer-partition in front of
// package exactlyonce's Writer. A route whose table does not exist yet
// holds its first batch until package schemafollow created the table
// (schema_follow.go). Transactional producers' batches go to the
// transaction coordinator (TxnStager), which writes a commit back through
// Path.Replay.
//
// Imports point down: produce imports exactlyonce, producerstate,
// schemafollow, mapping, schemaregistry, accumulator, answer, outage,
// fluss and kafkaproto; never gateway or the transaction coordinator
// (it reaches the coordinator through TxnStager).
package produce
