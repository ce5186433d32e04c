// Package writer writes rows to Apache Fluss tables: it batches them per
// table, partition and bucket within a memory budget, and sends the batches
// to the tablet servers. It owns both halves of the write path, in the
// style of franz-go's kgo (a producer front and per-broker sinks inside one
// package, internals unexported):
//
//   - the accumulator: per-bucket batch queues, Fluss batch builders
//     (encoded once, outside every lock), linger, the buffer memory budget
//     and its back-pressure ([Config.BufferWaitTimeout], [ErrBufferFull]);
//   - the sender: one drain loop that pops ready batches and sends one
//     request per (tablet server, table), so that a slow or failing table
//     neither delays nor fails another (apache/fluss #4476, #4017); the
//     per-bucket in-flight cap; retries with back-off, bounded by
//     [Config.Retries] and [Config.DeliveryTimeout]; idempotent writer ids
//     and batch sequences; leader lookups and metadata refreshes.
//
// # Use
//
// [New] takes a [Config] (start from [DefaultConfig]) and a [Transport]
// (a *fluss.Client). [Writer.AddTable] registers a table with a [TableSpec]
// naming its batch builder (fluss.NewArrowLogBuilder, NewIndexedLogBuilder,
// NewCompactedLogBuilder or NewKvBatchBuilder). [Writer.Run] runs the sender
// until [Writer.Close]. [Writer.Write] queues one row operation
// (fluss.WriteOp) and returns a [Handle] at once: the caller waits on it
// ([Handle.Wait], [Handle.Done]) or drops it and calls [Writer.Flush]
// later. Only waiting for buffer memory (bounded by
// [Config.BufferWaitTimeout] and the caller's context), waiting on a handle,
// flushing and closing block.
//
// # Ownership
//
// A [Batch] lives in its bucket queue until the sender pops it. While
// queued, writers add records to the last batch under the queue's mutex.
// Once popped, the batch belongs to the sender: it stamps writer id and
// sequence, builds the bytes once (retries only re-patch writer id,
// sequence and CRC), re-queues it for a retry (in sequence order) or
// completes it, which releases its memory and wakes every handle.
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
// retriable error re-queues the
// batch after an exponential back-off with jitter, at most Retries times; a
// definite rejection lowers the later sequences of the bucket; a fatal
// sequence error or an unknown outcome (a sent batch that timed out or ran
// out of retries) resets the writer id, the one effect that crosses tables:
// the retries of other buckets sent under the old id fail with
// [ErrWriterReset]. Metadata-class errors drop the table's cached leaders;
// a refresh that says TABLE_NOT_EXIST fails the table's queued batches at
// once. Every batch fails at the latest at [Config.DeliveryTimeout]
// ([ErrDeliveryTimeout]).
//
// # Sealed batches
//
// [Writer.WriteSealed] queues one batch stamped with a writer id and
// sequence the caller chose (the gateway's exactly-once routes, whose
// stamps follow from state kept in Fluss so that another instance can
// re-send the same batch). Sealed batches have their own queue per bucket:
// nothing is merged into them, order and the in-flight cap hold per
// (writer id, bucket), retries keep the stamp, a Fluss duplicate answer is
// a success (as is out-of-order with the server already past the batch), and
// OUT_OF_ORDER_SEQUENCE at the head of a writer's batches
// ([ErrSequenceRejected]) and unknown outcomes fail the batch without
// resetting anything: the caller owns those sequences. A drain pass sends
// at most one batch per bucket per request, merged or sealed (Fluss keeps
// one records entry per bucket of a request).
//
// # Goroutines and concurrency
//
// New starts nothing. Run starts one goroutine per write request in flight
// and per leader or writer-id lookup, and returns only after all of them
// exited; its loop owns all sender state. [Writer.Close] stops accepting
// rows and waits for Run to send everything; when its context ends first,
// Run is stopped and every unacknowledged batch fails with [ErrStopped].
// Lock order: queue mutex, then the memory budget's, then the
// incomplete-set mutex; no lock is held while building bytes, calling the
// transport or blocking.
//
// # Imports
//
// writer imports only package fluss (rows, table paths, batch builders and
// the RPC client's types). It must not import anything of Kafka: not
// kafkaproto, mapping, configs or the gateway.
package writer
