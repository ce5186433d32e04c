// Package takeover owns the take-over decision of design (D)
// (docs/exactly-once.md §8.2, §8.3): when a Kafka producer-partition that
// an instance I served comes to instance J, which of I's Kafka batches of
// it are in Fluss, whole, in part or not at all.
//
// Under (D) I writes the rows of many producers into shared Fluss batches
// under its own writer ids, and before each such batch is sent it records
// an Intent: the batch's writer, bucket and sequence, and how many rows of
// which Kafka batches it holds. J fences every (writer, bucket) that holds
// a part of the producer-partition's batches (package fence), which tells
// it the first sequence the writer never wrote there and makes that final.
// A part is then written if and only if its batch's sequence is below that
// one; the rows of one Kafka batch in one bucket go into that bucket's
// batches in order, so what is written of a Kafka batch in a bucket is a
// prefix of its rows there. Decide computes it; J writes the rest.
//
// This is design (D)'s second increment, after the fence: nothing on the
// produce path calls it, and the intent log it reads is not built yet. Its
// tests check the decision against a fake bucket log that applies Fluss
// 0.9.1's sequence rules, with a crashed instance's batches landing or not
// at random and the instance still sending after the fence.
//
// Imports point down: takeover imports fence (its Bucket) only; never
// fluss's client, the produce path, exactlyonce or gateway.
package takeover
