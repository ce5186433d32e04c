// Package sender writes the accumulator's batches to Apache Fluss: the
// Sender of Fluss's clients. One loop drains ready batches and sends one
// request per (tablet server, table), concurrently, so that a slow or
// failing table neither delays nor fails another (apache/fluss #4476,
// #4017); it keeps the per-bucket in-flight cap, retries with back-off
// (bounded by [Config.Retries] and [Config.DeliveryTimeout]), idempotent
// writer ids and batch sequences, leader lookups and metadata refreshes.
//
// # Use
//
// [New] takes a [Config] (start from [DefaultConfig]), the
// *accumulator.Accumulator to drain and a [Transport] (a *fluss.Client).
// [Sender.Run] runs the loop until [Sender.Close], which closes the
// accumulator, waits until everything was sent, and when its context ends
// first stops Run, failing every unacknowledged batch with [ErrStopped].
// Appends, flushes and handles are the accumulator's.
//
// # The boundary with the accumulator
//
// The sender is the only caller of the accumulator's drain side:
// Accumulator.Queues, Busy, Wakeup, ForceReady, Closed, Incomplete, Close, Abort
// and WaitEncodings; Queue.Empty, Peek, Pop and DrainAll; Batch.Build,
// Built and Complete (plus read-only accessors: which queue, table,
// bucket, when created, size, a sealed batch's stamp, Table.ThrottleTo for
// KV pressure). A popped batch is the sender's until it completes it: the
// writer id, sequence and attempts it is sent with live here (type batch),
// and so do its retries, which never go back into the accumulator: a
// bucket's retries wait in its state, in sequence order, ahead of anything
// queued.
//
// # Ordering and idempotence
//
// Per bucket: at most [Config.MaxInflightPerBucket] batches are in flight;
// with idempotence each fresh batch is stamped (writer id, next sequence)
// when drained, a retry keeps its sequence and only the bucket's first
// unresolved batch is resent. Requests to one (tablet server, table) are
// built concurrently but queued on the connection in drain order
// (fluss.Client.SendProduceLog returns once a request is queued). Responses
// follow the Fluss idempotent writer's rules: duplicate sequence and
// out-of-order at or below the last acknowledged one are successes, and so
// is out-of-order whose message shows the server's current sequence at or
// past the batch's (after a tablet server restart the server keeps only each
// writer's last batch, so an older resend is no longer a duplicate); a
// retriable error resends the batch after an exponential back-off with
// jitter, at most Retries times; a definite rejection lowers the later
// sequences of the bucket; a fatal sequence error or an unknown outcome (a
// sent batch that timed out or ran out of retries) resets the writer id,
// the one effect that crosses tables: the retries of other buckets sent
// under the old id fail with [ErrWriterReset]. Metadata-class errors drop
// the table's cached leaders; a refresh that says TABLE_NOT_EXIST fails the
// table's queued batches at once. Every batch fails at the latest at
// [Config.DeliveryTimeout] ([ErrDeliveryTimeout]).
//
// # Sealed batches
//
// Sealed batches (accumulator.AppendSealed: the gateway's exactly-once
// routes) keep the caller's stamp: order and the in-flight cap hold per
// (writer id, bucket), retries keep the stamp, a Fluss duplicate answer is
// a success (as is out-of-order with the server already past the batch),
// and OUT_OF_ORDER_SEQUENCE at the head of a writer's batches
// ([ErrSequenceRejected]) and unknown outcomes fail the batch without
// resetting anything. A drain pass sends at most one records entry per
// bucket per request (Fluss keeps one per bucket of a request): one merged
// or sealed batch, or several fresh sealed batches (accumulator.Seal.Fresh)
// on their first send, concatenated, each answered at the entry's base
// offset plus the records before it; a failed shared entry sends each of
// its batches again alone.
//
// # Goroutines
//
// New starts nothing. Run starts one goroutine per write request in flight
// and per leader or writer-id lookup, and returns only after all of them
// exited; its loop owns all sender state. No lock is held while building
// bytes, calling the transport or blocking.
//
// # Imports
//
// sender imports accumulator and fluss only; nothing of Kafka (kafkaproto,
// mapping, configs, gateway), and accumulator never imports sender.
package sender
