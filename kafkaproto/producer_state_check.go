package kafkaproto

import "math"

// SequenceWindow is how many batches per (producer id, partition) are
// remembered for duplicate detection: Kafka's NUM_BATCHES_TO_RETAIN, and the
// reason idempotent clients cap in-flight requests at 5.
const SequenceWindow = 5

// SeqAdd returns seq advanced by n (back for a negative n), wrapping from
// MaxInt32 to 0 as Kafka clients (and Fluss) do.
func SeqAdd(seq, n int32) int32 {
	s := (int64(seq) + int64(n)) % (math.MaxInt32 + 1)
	if s < 0 {
		s += math.MaxInt32 + 1
	}
	return int32(s)
}

// seqBefore reports whether a comes before b within half the sequence space,
// so that a sequence just short of the wrap counts as before 0.
func seqBefore(a, b int32) bool {
	d := (int64(b) - int64(a) + math.MaxInt32 + 1) % (math.MaxInt32 + 1)
	return d > 0 && d < math.MaxInt32/2
}

// SeqRange is one batch's first and last sequence.
type SeqRange struct {
	First, Last int32
}

// SeqState is what a broker keeps of one producer on one partition to check
// its next batch (Kafka's ProducerStateEntry).
type SeqState struct {
	// Known is false until a batch was accepted: then any epoch and
	// sequence is (a producer new here, or whose state was forgotten).
	Known   bool
	Epoch   int16
	NextSeq int32 // the first sequence of the next new batch
	// Window is the last batches accepted in Epoch, oldest first, at most
	// SequenceWindow.
	Window []SeqRange
}

// SeqVerdictKind is what CheckSequence decides about a batch.
type SeqVerdictKind uint8

const (
	// SeqAccept: a new batch, next in order; write it.
	SeqAccept SeqVerdictKind = iota
	// SeqDuplicate: the same range as Window[Batch]; answer with that
	// batch's result and write nothing.
	SeqDuplicate
	// SeqStale: older than the window, so written before but not
	// remembered: DUPLICATE_SEQUENCE_NUMBER, which Java and franz-go count
	// as a success (docs/exactly-once.md 5.3).
	SeqStale
	// SeqOutOfOrder: a gap, an overlap, or a new epoch not starting at 0:
	// OUT_OF_ORDER_SEQUENCE_NUMBER.
	SeqOutOfOrder
	// SeqFenced: an epoch older than the current one:
	// INVALID_PRODUCER_EPOCH, as Kafka 2.7+ answers data batches.
	SeqFenced
)

// SeqVerdict is CheckSequence's answer, with what its error message needs.
type SeqVerdict struct {
	Kind SeqVerdictKind
	// Batch is the index in Window of the repeated batch (SeqDuplicate).
	Batch int
	// Restart (SeqAccept): the window starts again with this batch, the
	// producer's first here or the first of its new epoch.
	Restart bool
	// Last is the incoming batch's last sequence.
	Last int32

	epoch, current int16
	first, want    int32
	window         int
}

// CheckSequence applies Kafka's idempotent-producer rules (the broker's
// ProducerStateEntry.findDuplicateBatch, then ProducerAppendInfo's epoch
// and sequence checks) to a batch of numRecords records starting at
// firstSeq in epoch, against st. It is pure: the caller applies an accepted
// batch to its state.
func CheckSequence(st SeqState, epoch int16, firstSeq, numRecords int32) SeqVerdict {
	last := SeqAdd(firstSeq, numRecords-1)
	v := SeqVerdict{Last: last, epoch: epoch, current: st.Epoch, first: firstSeq, want: st.NextSeq, window: len(st.Window)}
	if !st.Known {
		v.Restart = true
		return v
	}
	switch {
	case epoch < st.Epoch:
		v.Kind = SeqFenced
	case epoch > st.Epoch:
		if firstSeq != 0 {
			v.Kind, v.want = SeqOutOfOrder, 0
			return v
		}
		v.Restart = true
	default:
		for i, b := range st.Window {
			if b.First == firstSeq && b.Last == last {
				v.Kind, v.Batch = SeqDuplicate, i
				return v
			}
		}
		switch {
		case firstSeq == st.NextSeq:
		case seqBefore(firstSeq, st.NextSeq) && seqBefore(last, st.NextSeq):
			v.Kind = SeqStale
		default:
			v.Kind = SeqOutOfOrder
		}
	}
	return v
}

// Gap reports whether a SeqOutOfOrder batch lies past every accepted one:
// it starts after the expected sequence in the same epoch, or is a newer
// epoch's batch not starting at 0. The sequences between were never
// accepted (an aborted transaction's, when committed transactions are
// replayed); an overlap is not a gap.
func (v SeqVerdict) Gap() bool {
	if v.Kind != SeqOutOfOrder {
		return false
	}
	return v.epoch > v.current || seqBefore(v.want, v.first)
}

// Err is the Kafka error answering a refused batch of producer id on
// topic/partition, nil for SeqAccept and SeqDuplicate.
func (v SeqVerdict) Err(id int64, topic string, partition int32) error {
	switch v.Kind {
	case SeqFenced:
		return withMessage(ErrInvalidProducerEpoch,
			"producer %d epoch %d is older than the current epoch %d", id, v.epoch, v.current)
	case SeqOutOfOrder:
		if v.epoch != v.current {
			return withMessage(ErrOutOfOrderSequenceNumber,
				"producer %d bumped epoch to %d with sequence %d, expected 0", id, v.epoch, v.first)
		}
		return withMessage(ErrOutOfOrderSequenceNumber,
			"producer %d epoch %d: sequence %d on %s/%d, expected %d", id, v.epoch, v.first, topic, partition, v.want)
	case SeqStale:
		return withMessage(ErrDuplicateSequenceNumber,
			"producer %d sequence %d on %s/%d is older than the last %d batches, expected %d", id, v.first, topic, partition, v.window, v.want)
	}
	return nil
}
