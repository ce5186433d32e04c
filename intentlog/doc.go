// Package intentlog owns the intent log of design (D) (docs/exactly-once.md
// §8.2, §8.7): the Fluss log table where an instance records, before it
// sends a Fluss batch of merged rows, which records of which Kafka batches the
// batch holds (Intent). Each instance appends its entries under a
// writer id of its own, one entry in flight, to a bucket it may share with
// other instances; a fence of that writer (package fence) stops it and
// marks where its entries end, and Read returns every intent it recorded
// up to there, which is all it will ever have recorded.
//
// It owns the entry's encoding, the append under the instance's writer
// (a refused sequence means the log was fenced: ErrFenced) and the read.
// It is design (D)'s third increment: nothing on the produce path calls it
// yet; its tests run it against a real Fluss cluster.
//
// Imports point down: intentlog imports fluss, fence and owntable (its
// varint reader) only; never the produce path, exactlyonce or gateway.
package intentlog
