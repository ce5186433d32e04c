// Package takeover owns the take-over decision of design (D)
// (docs/exactly-once.md §8.2, §8.3): when a Kafka producer-partition that
// an instance I served comes to instance J, which of I's Kafka batches of
// it are in Fluss, whole, in part or not at all.
//
// Under (D) I writes the rows of many producers into shared Fluss batches
// under its own writer ids, and before each such batch is sent it records
// an intent (package intentlog): the batch's writer, bucket and sequence,
// and which records of which Kafka batches it holds. TakeOver fences I's
// intent log and reads it (after the fence I can record nothing more, and
// so send no new batch), fences every (writer, bucket) that holds a part
// of the producer-partition's batches (package fence), which tells it the
// first sequence the writer never wrote there and makes that final, and
// decides: a part is written if and only if its batch's sequence is below
// that one. Decide is that rule alone; J writes the missing rows.
//
// This is design (D)'s second and fourth increments: nothing on the
// produce path calls it yet. Decide is checked against a fake bucket log
// that applies Fluss 0.9.1's sequence rules (crashes at random, the
// instance still sending after the fence); TakeOver against a real
// cluster, read back with pyfluss.
//
// Imports point down: takeover imports intentlog, fence and fluss only;
// never the produce path, exactlyonce or gateway.
package takeover
