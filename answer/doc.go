// Package answer owns how a failed write is answered to a Kafka producer:
// the one table from Fluss, writer and sender errors to Kafka error codes
// (with the client's reaction each code asks for), the throttle time that
// storage pressure adds, and the partition result of a failed batch. Every
// write path (merged, exactly once, transactions) answers through it, so
// a Fluss error means the same to every producer.
//
// Imports point down: answer imports kafkaproto, fluss, accumulator and
// sender (their error sentinels) only.
package answer
