// Package sender drains ready batches from the accumulator and writes them to
// Fluss tablet servers, one request per (server, table) at a time, with
// retries, backoff, per-bucket ordering and idempotent sequences.
package sender
