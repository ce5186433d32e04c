package fluss

import (
	"errors"
	"regexp"
	"strconv"
)

// SequenceState is what an OUT_OF_ORDER_SEQUENCE answer says about a
// writer's state on the bucket: the batch sequence that arrived and the last
// one the server holds for that writer.
type SequenceState struct {
	WriterID int64
	Incoming int32
	Current  int32
}

// The tablet server's wording (WriterAppendInfo.maybeValidateDataBatch);
// a 0.9.1 server sends it inside a Java stack trace, so it is searched for.
var outOfOrderMessage = regexp.MustCompile(`for writer (-?\d+) at offset -?\d+ in table-bucket .*? : (-?\d+) \(incoming batch seq\.\), (-?\d+) \(current batch seq\.\)`)

// OutOfOrderState reads the writer state out of an OUT_OF_ORDER_SEQUENCE
// error. ok is false for any other error or a message in another wording.
//
// Why it matters: after a tablet server restart (or a leader change) the
// server restores each writer's state from a snapshot that keeps only the
// last batch, so a resent batch whose answer was lost no longer matches a
// retained batch and is answered out of order instead of duplicate. A
// current sequence at or past the incoming one means it was written.
func OutOfOrderState(err error) (SequenceState, bool) {
	var fe *Error
	if !errors.As(err, &fe) || fe.Code != ErrOutOfOrderSequence.Code {
		return SequenceState{}, false
	}
	m := outOfOrderMessage.FindStringSubmatch(fe.Message)
	if m == nil {
		return SequenceState{}, false
	}
	id, err1 := strconv.ParseInt(m[1], 10, 64)
	in, err2 := strconv.ParseInt(m[2], 10, 32)
	cur, err3 := strconv.ParseInt(m[3], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return SequenceState{}, false
	}
	return SequenceState{WriterID: id, Incoming: int32(in), Current: int32(cur)}, true
}
