// Package fluss is a client for Apache Fluss's own RPC protocol: connection
// framing and request pipelining, the protobuf messages, cluster metadata, the
// admin calls, and the encoders for the record batches and rows a writer sends
// (Arrow, Indexed and Compacted rows, log and KV batches, bucket hashing).
//
// It knows nothing of Kafka. Generated protobuf types stay inside the package;
// callers use the Go types declared here (TablePath, Schema, Datum, ...).
package fluss
