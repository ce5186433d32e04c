package kafkaproto

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Error is a Kafka protocol error code with its name. Sinks and ProducerIDs
// choose the code a client sees by returning (or wrapping, or errors.Join-ing)
// one of the sentinels below, or a fresh *Error for any other code.
// errors.Is matches on the code.
type Error struct {
	Code int16
	Name string
	// Retriable is what Java, librdkafka and kgo do with the code (they
	// retry it within their delivery timeout); documentation only.
	Retriable bool
}

func (e *Error) Error() string { return fmt.Sprintf("kafka error %d %s", e.Code, e.Name) }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The Kafka error codes the server sends. A Sink chooses what a client sees
// by returning (or wrapping) one of these; errorCode below turns any error
// into its code. Which backend failure becomes which code is the backend's
// business, not this package's.
var (
	ErrUnknownServerError      = &Error{-1, "UNKNOWN_SERVER_ERROR", false}
	ErrCorruptMessage          = &Error{2, "CORRUPT_MESSAGE", true}
	ErrUnknownTopicOrPartition = &Error{3, "UNKNOWN_TOPIC_OR_PARTITION", true}
	ErrLeaderNotAvailable      = &Error{5, "LEADER_NOT_AVAILABLE", true}
	ErrNotLeaderOrFollower     = &Error{6, "NOT_LEADER_OR_FOLLOWER", true}
	ErrRequestTimedOut         = &Error{7, "REQUEST_TIMED_OUT", true}
	ErrMessageTooLarge         = &Error{10, "MESSAGE_TOO_LARGE", false}
	// ErrCoordinatorLoadInProgress (InitProducerId): producer ids cannot be
	// handed out right now; every client retries it.
	ErrCoordinatorLoadInProgress    = &Error{14, "COORDINATOR_LOAD_IN_PROGRESS", true}
	ErrNotEnoughReplicas            = &Error{19, "NOT_ENOUGH_REPLICAS", true}
	ErrNotEnoughReplicasAfterAppend = &Error{20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true}
	ErrInvalidRequiredAcks          = &Error{21, "INVALID_REQUIRED_ACKS", false}
	ErrTopicAuthorizationFailed     = &Error{29, "TOPIC_AUTHORIZATION_FAILED", false}
	ErrGroupAuthorizationFailed     = &Error{30, "GROUP_AUTHORIZATION_FAILED", false}
	// ErrClusterAuthorizationFailed (InitProducerId): the backend refuses
	// to hand out ids (fatal for the producer, reported as a permission
	// problem).
	ErrClusterAuthorizationFailed = &Error{31, "CLUSTER_AUTHORIZATION_FAILED", false}
	ErrInvalidTimestamp           = &Error{32, "INVALID_TIMESTAMP", false}
	ErrUnsupportedSASLMechanism   = &Error{33, "UNSUPPORTED_SASL_MECHANISM", false}
	ErrIllegalSASLState           = &Error{34, "ILLEGAL_SASL_STATE", false}
	ErrUnsupportedVersion         = &Error{35, "UNSUPPORTED_VERSION", false}
	ErrInvalidRequest             = &Error{42, "INVALID_REQUEST", false}
	ErrOutOfOrderSequenceNumber   = &Error{45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false}
	// ErrDuplicateSequenceNumber (an IdempotenceOwner's answer): the batch
	// is older than the remembered window and was written before; Java and
	// franz-go count it as a success.
	ErrDuplicateSequenceNumber            = &Error{46, "DUPLICATE_SEQUENCE_NUMBER", false}
	ErrInvalidProducerEpoch               = &Error{47, "INVALID_PRODUCER_EPOCH", false}
	ErrInvalidTxnState                    = &Error{48, "INVALID_TXN_STATE", false}
	ErrInvalidProducerIDMapping           = &Error{49, "INVALID_PRODUCER_ID_MAPPING", false}
	ErrInvalidTransactionTimeout          = &Error{50, "INVALID_TRANSACTION_TIMEOUT", false}
	ErrConcurrentTransactions             = &Error{51, "CONCURRENT_TRANSACTIONS", true}
	ErrTransactionalIDAuthorizationFailed = &Error{53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false}
	ErrOperationNotAttempted              = &Error{55, "OPERATION_NOT_ATTEMPTED", false}
	ErrKafkaStorage                       = &Error{56, "KAFKA_STORAGE_ERROR", true}
	ErrSASLAuthenticationFailed           = &Error{58, "SASL_AUTHENTICATION_FAILED", false}
	ErrUnsupportedCompressionType         = &Error{76, "UNSUPPORTED_COMPRESSION_TYPE", false}
	ErrInvalidRecord                      = &Error{87, "INVALID_RECORD", false}
	// ErrProducerFenced is what newer clients get for an epoch older than
	// the transactional id's current one; request versions that predate
	// it get ErrInvalidProducerEpoch instead, as Kafka rewrites it.
	ErrProducerFenced = &Error{90, "PRODUCER_FENCED", false}
	// ErrTransactionalIDNotFound: DescribeTransactions of an id never seen.
	ErrTransactionalIDNotFound = &Error{105, "TRANSACTIONAL_ID_NOT_FOUND", false}
)

// RecordsError rejects a batch because of some of its records (Kafka's
// record_errors, KIP-467). The client sees INVALID_RECORD for the whole batch
// (Kafka batches are atomic; Java fails the listed records with their message
// and the others as "part of a batch which had invalid records"), so a sink
// returning it must have written none of the batch.
type RecordsError struct {
	Records []RecordError
}

// RecordError is one rejected record.
type RecordError struct {
	// Index is the record's position in its batch (Record.Index).
	Index   int32
	Message string
}

func (e *RecordsError) Error() string {
	if len(e.Records) == 0 {
		return "records rejected"
	}
	return fmt.Sprintf("%d records rejected, first (index %d): %s", len(e.Records), e.Records[0].Index, e.Records[0].Message)
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) true.
func (e *RecordsError) Unwrap() error { return ErrInvalidRecord }

// errorCode is the single translation from an error to a Kafka error code.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrRequestTimedOut.Code
	}
	return ErrUnknownServerError.Code
}

// maxErrorMessage bounds error_message strings sent to clients.
const maxErrorMessage = 512

// errorMessage is the error_message sent to clients (Produce v8+).
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	if len(s) > maxErrorMessage {
		s = s[:maxErrorMessage]
	}
	s = strings.ToValidUTF8(s, "?")
	return &s
}

// errorName names a code for logs and metric labels (bounded set).
func errorName(code int16) string {
	if e, ok := errorsByCode[code]; ok {
		return e.Name
	}
	if code == 0 {
		return "NONE"
	}
	return fmt.Sprintf("CODE_%d", code)
}

var errorsByCode = func() map[int16]*Error {
	m := map[int16]*Error{}
	for _, e := range []*Error{
		ErrUnknownServerError, ErrCorruptMessage, ErrUnknownTopicOrPartition, ErrLeaderNotAvailable,
		ErrNotLeaderOrFollower, ErrRequestTimedOut, ErrMessageTooLarge, ErrCoordinatorLoadInProgress, ErrNotEnoughReplicas,
		ErrNotEnoughReplicasAfterAppend, ErrInvalidRequiredAcks, ErrTopicAuthorizationFailed,
		ErrGroupAuthorizationFailed, ErrClusterAuthorizationFailed, ErrInvalidTimestamp, ErrUnsupportedSASLMechanism, ErrIllegalSASLState,
		ErrUnsupportedVersion, ErrInvalidRequest, ErrOutOfOrderSequenceNumber, ErrDuplicateSequenceNumber, ErrInvalidProducerEpoch,
		ErrTransactionalIDAuthorizationFailed, ErrKafkaStorage, ErrSASLAuthenticationFailed,
		ErrUnsupportedCompressionType, ErrInvalidRecord,
	} {
		m[e.Code] = e
	}
	return m
}()

// withMessage attaches a human-readable reason to a sentinel while keeping
// errors.Is/As working.
func withMessage(e *Error, format string, args ...any) error {
	return &detailedError{code: e, msg: fmt.Sprintf(format, args...)}
}

type detailedError struct {
	code *Error
	msg  string
}

func (d *detailedError) Error() string { return d.msg }
func (d *detailedError) Unwrap() error { return d.code }

func asRecordsError(err error) (*RecordsError, bool) {
	var re *RecordsError
	ok := errors.As(err, &re)
	return re, ok
}
