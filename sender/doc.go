// Package sender drains ready batches from an accumulator.Accumulator and
// writes them to Fluss tablet servers through a Transport (*fluss.Client).
//
// # Design
//
// One loop goroutine ([Sender.Run]) owns all sender state: per-bucket
// in-flight lists, writer id and sequences, back-off windows and the leader
// cache. It wakes on an accumulator signal, on a finished request or lookup,
// or on one timer always re-armed to the earliest linger, back-off or
// delivery deadline; it never spins and never waits for a response. Each
// pass pops at most one ready batch per bucket, groups them by (tablet
// server, table) and starts one goroutine per group that builds the batches
// (Arrow encoding and compression happen there, outside every lock), sends
// one ProduceLog or PutKv request and posts the response back. Requests for
// different tables, on the same server or not, are independent: a slow or
// failing table neither delays nor fails another (apache/fluss #4476,
// #4017). Leader lookups and InitWriter also run in their own goroutines.
//
// # Ordering and idempotence
//
// Per bucket: at most Config.MaxInflightPerBucket batches are in flight; with
// idempotence each fresh batch is stamped (writer id, next sequence) when
// drained, a retry keeps its sequence and only the bucket's first
// unresolved batch is resent. Responses follow fluss-wire.md §6: duplicate
// sequence and out-of-order-at-or-below-last-acked are successes; a
// retriable error re-queues the batch (in sequence order) after an
// exponential back-off with jitter; a definite rejection lowers the later
// sequences of the bucket; a fatal sequence error or an unknown outcome
// (delivery timeout of a sent batch) resets the writer id, which is the one
// effect that crosses tables: the retries of other buckets sent under the
// old id fail with ErrWriterReset.
//
// # Errors
//
// Retriability is fluss.IsRetriable plus the idempotence rules above; a
// request that exceeds the sender's own deadline (RequestTimeout +
// RequestTimeoutOverhead) counts as a request timeout and is retried.
// Metadata-class errors drop the table's cached leaders (here and in the
// client) and a refresh goroutine finds the new ones. When a refresh says
// TABLE_NOT_EXIST the table's queued batches fail at once. Every batch
// fails at the latest at Config.DeliveryTimeout (ErrDeliveryTimeout).
//
// # Goroutines and shutdown
//
// New starts nothing. Run starts the goroutines above and returns only after
// all of them exited. [Sender.Close] closes the accumulator and waits for
// Run to send everything; when its context ends first, Run is stopped and
// every unacknowledged batch fails with ErrStopped.
//
// It imports accumulator and fluss; never kafkaproto.
package sender
