// Package fence owns the fence of design (D) (docs/exactly-once.md §8.3):
// it makes a Fluss writer id unable to append anything more to one log
// bucket, and learns from that bucket's log the first sequence the writer
// never wrote there. After the fence, a batch of the writer is in the log
// if and only if its sequence is below that one, and that stays true: the
// decision is read from the log, so any number of instances fencing the
// same writer reach the same answer without talking to each other.
//
// The fence appends, after the writer's last batch, inflight+5 empty
// batches (markers) under the writer in one records entry. Fluss appends a
// batch only at the writer's last sequence + 1 and answers a copy of one of
// its last five batches as a duplicate; with the markers holding those five
// places, every batch the fenced writer may still have in flight is refused
// (OUT_OF_ORDER_SEQUENCE), never answered as written.
//
// This is design (D)'s first increment: nothing on the produce path calls
// it yet; its tests run it against a real Fluss cluster with a second
// client as the fenced writer. It fences log tables only: a primary-key
// table's change log holds empty batches of its own (§8.4).
//
// Imports point down: fence imports fluss only; never the produce path,
// exactlyonce or gateway.
package fence
