package fluss

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOutOfOrderState(t *testing.T) {
	// As a 0.9.1 tablet server sends it: the exception's message inside a
	// Java stack trace (the wording of WriterAppendInfo).
	trace := "org.apache.fluss.exception.OutOfOrderSequenceException: Out of order batch sequence for writer 7 at offset 56121 in table-bucket TableBucket{tableId=3, bucket=0} : 97 (incoming batch seq.), 98 (current batch seq.)\n\tat org.apache.fluss.server.log.WriterAppendInfo.maybeValidateDataBatch(WriterAppendInfo.java:86)\n"
	st, ok := OutOfOrderState(fmt.Errorf("write: %w", ErrorForCode(31, trace)))
	assert.True(t, ok)
	assert.Equal(t, SequenceState{WriterID: 7, Incoming: 97, Current: 98}, st)

	partitioned := "Out of order batch sequence for writer 12 at offset 3 in table-bucket TableBucket{tableId=3, partitionId=9, bucket=1} : 4 (incoming batch seq.), -1 (current batch seq.)"
	st, ok = OutOfOrderState(ErrorForCode(31, partitioned))
	assert.True(t, ok)
	assert.Equal(t, SequenceState{WriterID: 12, Incoming: 4, Current: -1}, st)

	for name, err := range map[string]error{
		"other code":      ErrorForCode(32, trace),
		"other wording":   ErrorForCode(31, "out of order sequence: expected 3, got 5"),
		"not fluss error": fmt.Errorf("%s", trace),
		"nil":             nil,
	} {
		_, ok := OutOfOrderState(err)
		assert.False(t, ok, name)
	}
}
