// Package owntable owns what the gateway's own tables (producer states,
// transactions, staged batches) have in common: a Table creates itself and
// its database on first use when missing, refuses an existing table whose
// shape or properties differ from the code's, and registers with the
// writer; Reader decodes their varint-encoded byte columns. Each store
// (package producerstate, the transactions' tables) embeds a Table and
// says what it holds.
//
// Imports point down: owntable imports accumulator and fluss only; it
// knows nothing of Kafka or of the rows each store keeps.
package owntable
