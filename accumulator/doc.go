// Package accumulator batches rows for Apache Fluss tables: the
// RecordAccumulator of Fluss's clients. It queues records per table,
// partition and bucket into Fluss batches (encoded once, outside every
// lock), within one memory budget that pushes back on appenders
// ([Config.BufferWaitTimeout], [ErrBufferFull]) and that the gateway's
// Kafka requests share ([Accumulator.RequestMemory]). Package sender
// drains it.
//
// # What the gateway calls
//
// [New] with a [Config] (start from [DefaultConfig]);
// [Accumulator.AddTable] with a [TableSpec] naming the table's batch
// builder (fluss.NewArrowLogBuilder, NewIndexedLogBuilder,
// NewCompactedLogBuilder or NewKvBatchBuilder); [Accumulator.Append] queues
// one row operation and returns a [Handle] at once: the caller waits on it
// ([Handle.Wait], [Handle.Done]) or drops it and calls [Accumulator.Flush]
// later; [Accumulator.AppendSealed] queues a batch stamped by the caller
// (exactly-once writes); BufferedBytes, Incomplete and
// [Table.ForgetPartition], [Table.Throttle]. Only waiting for buffer
// memory, waiting on a handle and flushing block.
//
// # What only the sender calls
//
// The drain side: Accumulator.Queues, Busy, Wakeup, ForceReady, Closed, Close,
// Abort, WaitEncodings; Queue.Empty, Peek, Pop, DrainAll; Batch.Build,
// Built, Complete; Table.ThrottleTo (see package sender for why each is
// needed).
//
// # Ownership
//
// A [Batch] lives in its queue until the sender pops it. While queued,
// appenders add records to the last batch under the queue's mutex; a full
// batch is encoded at once on a goroutine of its own (at most GOMAXPROCS).
// Once popped, it belongs to the sender, which builds its bytes with a
// writer id and sequence (Batch.Build: encoded once, later only re-patched)
// and completes it, which releases its memory and wakes every handle. A
// Batch holds records and bytes only: stamps, attempts and retries are the
// sender's.
//
// Lock order: queue mutex, then the memory budget's, then the
// incomplete-set mutex; no lock is held while building bytes or blocking.
//
// # Imports
//
// accumulator imports only package fluss (rows, table paths, batch
// builders). It must not import sender, nor anything of Kafka.
package accumulator
