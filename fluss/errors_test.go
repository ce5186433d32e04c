package fluss

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorTable pins the code table against Fluss's Errors.java (0.9.1) and
// the exception hierarchy (retriable = extends RetriableException, refresh =
// extends InvalidMetadataException), as in fluss-common's org.apache.fluss.exception.
func TestErrorTable(t *testing.T) {
	tests := []struct {
		code      int32
		name      string
		retriable bool
		refresh   bool
	}{
		{-1, "UNKNOWN_SERVER_ERROR", false, false},
		{1, "NETWORK_EXCEPTION", true, true},
		{2, "UNSUPPORTED_VERSION", false, false},
		{3, "CORRUPT_MESSAGE", true, false},
		{4, "DATABASE_NOT_EXIST", false, false},
		{7, "TABLE_NOT_EXIST", false, false},
		{9, "SCHEMA_NOT_EXIST", true, false},
		{10, "LOG_STORAGE_EXCEPTION", true, false},
		{11, "KV_STORAGE_EXCEPTION", true, false},
		{12, "NOT_LEADER_OR_FOLLOWER", true, true},
		{13, "RECORD_TOO_LARGE_EXCEPTION", false, false},
		{14, "CORRUPT_RECORD_EXCEPTION", true, false},
		{18, "INVALID_REQUIRED_ACKS", false, false},
		{21, "UNKNOWN_TABLE_OR_BUCKET_EXCEPTION", true, true},
		{25, "REQUEST_TIME_OUT", true, false},
		{26, "STORAGE_EXCEPTION", true, false},
		{28, "NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION", true, false},
		{29, "NOT_ENOUGH_REPLICAS_EXCEPTION", true, false},
		{31, "OUT_OF_ORDER_SEQUENCE_EXCEPTION", false, false},
		{32, "DUPLICATE_SEQUENCE_EXCEPTION", false, false},
		{33, "UNKNOWN_WRITER_ID_EXCEPTION", false, false},
		{36, "PARTITION_NOT_EXISTS", false, false},
		{44, "LEADER_NOT_AVAILABLE_EXCEPTION", true, true},
		{46, "AUTHENTICATE_EXCEPTION", false, false},
		{51, "RETRIABLE_AUTHENTICATE_EXCEPTION", false, false},
		{59, "SEVER_TAG_ALREADY_EXIST_EXCEPTION", false, false},
		{63, "INVALID_PRODUCER_ID_EXCEPTION", false, false},
		{65, "NOT_COORDINATOR_LEADER_EXCEPTION", false, false},
		{72, "STORAGE_BACKPRESSURE_EXCEPTION", true, false},
		{73, "HISTORICAL_PARTITION_THROTTLED", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ErrorForCode(tt.code, "msg")
			var fe *Error
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.code, fe.Code)
			assert.Equal(t, tt.name, fe.Name)
			assert.Equal(t, tt.retriable, fe.Retriable)
			assert.Equal(t, tt.refresh, fe.RefreshMetadata)
			assert.Equal(t, tt.retriable, IsRetriable(err))
			assert.Equal(t, tt.refresh, NeedsMetadataRefresh(err))
			assert.Equal(t, "msg", fe.Message)
			assert.Contains(t, err.Error(), tt.name)
		})
	}
}

func TestErrorTableIsComplete(t *testing.T) {
	for code := int32(-1); code <= 74; code++ {
		info, ok := errorTable[code]
		require.True(t, ok, "code %d missing", code)
		assert.NotEmpty(t, info.name)
		if code > 0 {
			assert.NotEmpty(t, info.class, "code %d has no exception class", code)
		}
	}
	assert.Len(t, errorTable, 76)
	assert.Len(t, errorCodeByClass, 74)
}

func TestErrorForCode(t *testing.T) {
	assert.NoError(t, ErrorForCode(0, "ignored"))

	unknown := ErrorForCode(999, "from the future")
	var fe *Error
	require.ErrorAs(t, unknown, &fe)
	assert.Equal(t, int32(999), fe.Code, "the code is kept")
	assert.Equal(t, "UNKNOWN_SERVER_ERROR", fe.Name)
	assert.False(t, IsRetriable(unknown))

	wrapped := fmt.Errorf("produce_log to tablet server 1: %w", ErrorForCode(7, "Table 'a.b' does not exist."))
	assert.ErrorIs(t, wrapped, ErrTableNotExist)
	assert.NotErrorIs(t, wrapped, ErrTableAlreadyExist)
	assert.Equal(t, "produce_log to tablet server 1: fluss error 7 TABLE_NOT_EXIST: Table 'a.b' does not exist.", wrapped.Error())
}

func TestIsRetriableLocalErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection closed", fmt.Errorf("x: %w", ErrConnectionClosed), true},
		{"request timeout", fmt.Errorf("x: %w", ErrRequestTimeout), true},
		{"no leader", ErrNoLeader, true},
		{"bucket left out of a response", errNoBucketResponse, true},
		{"net error", &net.OpError{Op: "dial", Err: errors.New("refused")}, true},
		{"client closed", ErrClosed, false},
		{"cancelled", context.Canceled, false},
		{"caller deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{"plain", errors.New("bad"), false},
		{"server failure carries its code", fmt.Errorf("%w: %w", ErrConnectionClosed, ErrorForCode(-1, "")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsRetriable(tt.err))
		})
	}
}

// A real 0.9.1 cluster answers GET_METADATA for an unknown table with
// UNKNOWN_SERVER_ERROR and the wrapped cause in the stack trace (seen in
// TestUnknownTableIsTypedError); the cause's own code is recovered.
func TestRefineUnknownServerError(t *testing.T) {
	msg := "org.apache.fluss.exception.FlussRuntimeException: Failed to get tables '[d.t]'.\n" +
		"\tat org.apache.fluss.server.coordinator.MetadataManager.getTables(MetadataManager.java:624)\n" +
		"Caused by: org.apache.fluss.exception.TableNotExistException: Table 'd.t' does not exist.\n"
	tests := []struct {
		name string
		in   *Error
		want int32
	}{
		{"wrapped table not exist", newErrorMsg(-1, msg), 7},
		{"no cause", newErrorMsg(-1, "boom"), -1},
		{"unknown cause class", newErrorMsg(-1, "Caused by: org.apache.fluss.exception.Whatever: x"), -1},
		{"cause at end without message", newErrorMsg(-1, "Caused by: org.apache.fluss.exception.PartitionNotExistException"), 36},
		{"other codes untouched", newErrorMsg(3, msg), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := refineUnknownServerError(tt.in)
			assert.Equal(t, tt.want, got.Code)
			assert.Equal(t, tt.in.Message, got.Message)
		})
	}
}

func newErrorMsg(code int32, msg string) *Error {
	e := newError(code)
	e.Message = msg
	return e
}

// TestErrorShowsNoStackTrace: a server message carrying a Java stack trace
// (0.9.1 wraps unexpected exceptions so) is shown as its first line and
// innermost cause; the full message stays in Message for classification.
func TestErrorShowsNoStackTrace(t *testing.T) {
	msg := "org.apache.fluss.exception.FlussRuntimeException: failed to get metadata\n" +
		"\tat org.apache.fluss.server.RpcServiceBase.getMetadata(RpcServiceBase.java:321)\n" +
		"\tat java.base/java.lang.Thread.run(Thread.java:840)\n" +
		"Caused by: org.apache.fluss.exception.CoordinatorNotAvailableException: coordinator is starting\n" +
		"\tat org.apache.fluss.server.X.y(X.java:1)\n"
	err := ErrorForCode(-1, msg)
	assert.Equal(t, "fluss error -1 UNKNOWN_SERVER_ERROR: org.apache.fluss.exception.FlussRuntimeException: failed to get metadata "+
		"(Caused by: org.apache.fluss.exception.CoordinatorNotAvailableException: coordinator is starting)", err.Error())
	var fe *Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, msg, fe.Message)
	assert.Equal(t, "fluss error 12 NOT_LEADER_OR_FOLLOWER: not the leader", ErrorForCode(12, "not the leader").Error())
}
