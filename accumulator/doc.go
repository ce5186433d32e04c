// Package accumulator buffers rows per table, partition and bucket into Fluss
// batches, bounded by a memory budget.
//
// [Accumulator.Append], [Accumulator.Upsert] and [Accumulator.Delete] queue
// one record and return a [Handle] at once: the caller waits on it
// ([Handle.Wait], [Handle.Done]) or drops it and calls [Accumulator.Flush]
// later. Only waiting for buffer memory (bounded by
// [Config.BufferWaitTimeout] and the caller's context), waiting on a handle and
// flushing block.
//
// # Ownership
//
// A [Batch] lives in its [Queue] (one per table, partition and bucket) until
// the sender pops it. While queued, appenders add records to the last batch
// under the queue's mutex. Once popped, the batch belongs to the sender: it
// stamps writer id and sequence ([Batch.Stamp]), builds the bytes once
// ([Batch.Build], outside every lock; retries only re-patch writer id,
// sequence and CRC), re-queues it for a retry ([Queue.Reenqueue]) or completes
// it ([Batch.Complete]), which releases its memory and wakes every handle.
//
// # Goroutines and concurrency
//
// The package starts no goroutines. All exported methods are safe for
// concurrent use unless noted. Lock order: Queue.mu, then the memory budget's
// mutex, then the accumulator's incomplete-set mutex; no lock is held while
// building bytes, calling hooks or blocking.
//
// It imports only package fluss (for rows and table paths) and knows nothing
// of Kafka or of the network.
package accumulator
