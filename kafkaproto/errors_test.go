package kafkaproto

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want int16
	}{
		{"nil", nil, 0},
		{"sentinel", ErrNotEnoughReplicas, 19},
		{"wrapped", fmt.Errorf("produce_log to tablet server 3: %w", ErrKafkaStorage), 56},
		{"joined with backend error", errors.Join(errors.New("fluss: NOT_LEADER_OR_FOLLOWER"), ErrNotLeaderOrFollower), 6},
		{"with message", withMessage(ErrInvalidRecord, "bad"), 87},
		{"records error", &RecordsError{Records: []RecordError{{Index: 1, Message: "x"}}}, 87},
		{"custom code", &Error{Code: 89, Name: "THROTTLING_QUOTA_EXCEEDED"}, 89},
		{"deadline", context.DeadlineExceeded, 7},
		{"wrapped deadline", fmt.Errorf("wait for buffer: %w", context.DeadlineExceeded), 7},
		{"unknown", errors.New("boom"), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errorCode(tc.err))
		})
	}
	assert.True(t, errors.Is(&RecordsError{}, ErrInvalidRecord))
	assert.True(t, errors.Is(&Error{Code: 7}, ErrRequestTimedOut), "errors.Is matches on the code")
	assert.Equal(t, "REQUEST_TIMED_OUT", errorName(7))
	assert.Equal(t, "CODE_99", errorName(99))
}
