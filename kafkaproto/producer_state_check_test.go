package kafkaproto_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// window5 is a full window of five 10-record batches ending before next.
func window5(epoch int16, next int32) kafkaproto.SeqState {
	st := kafkaproto.SeqState{Known: true, Epoch: epoch, NextSeq: next}
	first := kafkaproto.SeqAdd(next, -50)
	for range kafkaproto.SequenceWindow {
		st.Window = append(st.Window, kafkaproto.SeqRange{First: first, Last: kafkaproto.SeqAdd(first, 9)})
		first = kafkaproto.SeqAdd(first, 10)
	}
	return st
}

func TestCheckSequence(t *testing.T) {
	t.Parallel()
	const maxSeq = math.MaxInt32
	type want struct {
		kind    kafkaproto.SeqVerdictKind
		batch   int // SeqDuplicate
		restart bool
		last    int32
		err     error
	}
	accept := func(last int32) want { return want{kind: kafkaproto.SeqAccept, last: last} }
	cases := []struct {
		name        string
		st          kafkaproto.SeqState
		epoch       int16
		first, n    int32
		want        want
		wantMessage string
	}{
		{"unknown producer: any sequence", kafkaproto.SeqState{}, 7, 1234, 2, want{restart: true, last: 1235}, ""},
		{"unknown producer: any epoch", kafkaproto.SeqState{Epoch: 3}, 1, 5, 1, want{restart: true, last: 5}, ""},
		{"next in order", window5(0, 100), 0, 100, 3, accept(102), ""},
		{"known, empty window", kafkaproto.SeqState{Known: true, NextSeq: 0}, 0, 0, 1, accept(0), ""},
		{"gap", window5(0, 100), 0, 101, 1, want{kind: kafkaproto.SeqOutOfOrder, last: 101, err: kafkaproto.ErrOutOfOrderSequenceNumber}, "expected 100"},
		{"gap of half the sequence space", window5(0, 100), 0, 100 + maxSeq/2 - 100, 1,
			want{kind: kafkaproto.SeqOutOfOrder, last: 100 + maxSeq/2 - 100, err: kafkaproto.ErrOutOfOrderSequenceNumber}, "expected 100"},
		{"overlaps the next sequence", window5(0, 100), 0, 95, 10, want{kind: kafkaproto.SeqOutOfOrder, last: 104, err: kafkaproto.ErrOutOfOrderSequenceNumber}, "expected 100"},
		{"just before the window", window5(0, 100), 0, 40, 10,
			want{kind: kafkaproto.SeqStale, last: 49, err: kafkaproto.ErrDuplicateSequenceNumber}, "older than the last 5 batches"},
		{"long before the window", window5(0, 100), 0, 0, 1, want{kind: kafkaproto.SeqStale, last: 0, err: kafkaproto.ErrDuplicateSequenceNumber}, ""},
		{"inside the window, not a batch's range", window5(0, 100), 0, 60, 5,
			want{kind: kafkaproto.SeqStale, last: 64, err: kafkaproto.ErrDuplicateSequenceNumber}, ""},
		{"older epoch", window5(3, 100), 2, 100, 1, want{kind: kafkaproto.SeqFenced, last: 100, err: kafkaproto.ErrInvalidProducerEpoch}, "older than the current epoch 3"},
		{"older epoch, a window batch", window5(3, 100), 2, 50, 10, want{kind: kafkaproto.SeqFenced, last: 59, err: kafkaproto.ErrInvalidProducerEpoch}, ""},
		{"epoch bump at 0", window5(3, 100), 4, 0, 2, want{restart: true, last: 1}, ""},
		{"a new epoch is not matched against the old window", window5(3, 10+50), 4, 10, 10,
			want{kind: kafkaproto.SeqOutOfOrder, last: 19, err: kafkaproto.ErrOutOfOrderSequenceNumber}, "expected 0"},
		{"epoch bump not at 0", window5(3, 100), 4, 100, 1, want{kind: kafkaproto.SeqOutOfOrder, last: 100, err: kafkaproto.ErrOutOfOrderSequenceNumber}, "expected 0"},
		{"wraps at MaxInt32", window5(0, maxSeq-1), 0, maxSeq - 1, 3, accept(0), ""},
		{"SeqAdd back across the wrap", kafkaproto.SeqState{Known: true, NextSeq: kafkaproto.SeqAdd(0, -1)}, 0, maxSeq, 1, accept(maxSeq), ""},
		{"next after the wrap", window5(0, 0), 0, 0, 1, accept(0), ""},
		{"gap after the wrap", window5(0, 0), 0, 1, 1, want{kind: kafkaproto.SeqOutOfOrder, last: 1, err: kafkaproto.ErrOutOfOrderSequenceNumber}, "expected 0"},
		{"duplicate across the wrap", window5(0, 5), 0, maxSeq - 4, 10, want{kind: kafkaproto.SeqDuplicate, batch: 4, last: 4}, ""},
		{"stale across the wrap", window5(0, 5), 0, maxSeq - 100, 10,
			want{kind: kafkaproto.SeqStale, last: maxSeq - 91, err: kafkaproto.ErrDuplicateSequenceNumber}, ""},
	}
	// A duplicate of each of the five remembered batches.
	for i := range kafkaproto.SequenceWindow {
		first := int32(50 + 10*i)
		cases = append(cases, struct {
			name        string
			st          kafkaproto.SeqState
			epoch       int16
			first, n    int32
			want        want
			wantMessage string
		}{fmt.Sprintf("duplicate of window batch %d", i), window5(0, 100), 0, first, 10,
			want{kind: kafkaproto.SeqDuplicate, batch: i, last: first + 9}, ""})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := kafkaproto.CheckSequence(tc.st, tc.epoch, tc.first, tc.n)
			assert.Equal(t, tc.want.kind, v.Kind)
			assert.Equal(t, tc.want.last, v.Last)
			assert.Equal(t, tc.want.restart, v.Restart)
			if tc.want.kind == kafkaproto.SeqDuplicate {
				assert.Equal(t, tc.want.batch, v.Batch)
				r := tc.st.Window[v.Batch]
				assert.Equal(t, kafkaproto.SeqRange{First: tc.first, Last: v.Last}, r)
			}
			err := v.Err(9, "t", 2)
			if tc.want.err == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.want.err)
			assert.Contains(t, err.Error(), tc.wantMessage)
		})
	}
}

// Gap: a batch past the expected sequence, or a newer epoch's not starting
// at 0, lies past every accepted one; an overlap does not.
func TestSeqVerdictGap(t *testing.T) {
	st := kafkaproto.SeqState{Known: true, Epoch: 3, NextSeq: 100}
	assert.True(t, kafkaproto.CheckSequence(st, 3, 150, 10).Gap(), "after the expected sequence")
	assert.False(t, kafkaproto.CheckSequence(st, 3, 95, 10).Gap(), "an overlap")
	assert.True(t, kafkaproto.CheckSequence(st, 4, 7, 1).Gap(), "a newer epoch not starting at 0")
	assert.False(t, kafkaproto.CheckSequence(st, 3, 100, 1).Gap(), "accepted, not out of order")
	assert.False(t, kafkaproto.CheckSequence(st, 2, 150, 1).Gap(), "fenced")
}
