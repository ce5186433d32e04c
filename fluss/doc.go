// Package fluss is a client for Apache Fluss's own RPC protocol: connection
// framing and request pipelining, the protobuf messages, cluster metadata, the
// admin calls, and the encoders for the record batches and rows a writer sends
// (Arrow, Indexed and Compacted rows, log and KV batches, bucket hashing).
//
// It speaks to Fluss 0.9.1-incubating and 1.0.0 servers, negotiating per
// tablet server: against 1.0 it sends PRODUCE_LOG v1 and PUT_KV v3 with each
// bucket's routing bucket count, and it reads per-partition bucket counts
// (Client.BucketCount), PUT_KV pressure (BucketResult.Pressure) and the 1.0
// error codes (ErrInvalidBucketRouting, ErrStorageBackpressure, ...).
//
// It knows nothing of Kafka. Generated protobuf types stay inside the package;
// callers use the Go types declared here (TablePath, Schema, Datum, ...).
package fluss
