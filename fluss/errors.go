package fluss

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
)

// Error is an error code returned by a Fluss server, at request level
// (ERROR_RESPONSE, SERVER_FAILURE) or for one bucket of a response.
//
// Compare with errors.Is against the ErrXxx values below: two *Error values
// match when their codes are equal, whatever their messages.
type Error struct {
	// Code is the Fluss error code (Errors.java).
	Code int32
	// Name is the upstream enum name, e.g. "TABLE_NOT_EXIST".
	Name string
	// Retriable reports whether the upstream exception extends
	// RetriableException: the same request may succeed later.
	Retriable bool
	// RefreshMetadata reports whether the upstream exception extends
	// InvalidMetadataException: refresh bucket leaders before retrying.
	RefreshMetadata bool
	// Message is the server's message, possibly empty. A 0.9.1 server
	// sends whole Java stack traces in it; Error shows only its first line
	// and innermost cause.
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("fluss error %d %s", e.Code, e.Name)
	}
	return fmt.Sprintf("fluss error %d %s: %s", e.Code, e.Name, compactMessage(e.Message))
}

// compactMessage keeps a server message's first line and, for a stack
// trace, its innermost "Caused by" line: what an operator needs, without
// the frames (a log line per failed request must stay one short line).
func compactMessage(msg string) string {
	first, rest, multi := strings.Cut(strings.TrimSpace(msg), "\n")
	if !multi {
		return first
	}
	first = strings.TrimSpace(first)
	if i := strings.LastIndex(rest, "Caused by: "); i >= 0 {
		cause, _, _ := strings.Cut(rest[i:], "\n")
		if cause = strings.TrimSpace(cause); cause != "" && !strings.Contains(first, strings.TrimPrefix(cause, "Caused by: ")) {
			return first + " (" + cause + ")"
		}
	}
	return first
}

// Is matches another *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// errorKind flags for the table below.
const (
	notRetriable = iota
	retriable
	retriableRefresh // retriable, and refresh metadata first
)

type errorInfo struct {
	name  string // Errors.java enum name
	class string // exception class in org.apache.fluss.exception
	kind  int
}

// errorTable is every code of Fluss's Errors enum as released in 1.0.0
// (0.9.1-incubating has -1..63; 64–74 are new in 1.0), classified by the
// exception hierarchy of org.apache.fluss.exception: retriable = extends
// RetriableException, refresh = extends InvalidMetadataException. Checked
// against the classes of the released fluss-client 1.0.0 jar. Immutable.
var errorTable = map[int32]errorInfo{
	-1: {"UNKNOWN_SERVER_ERROR", "UnknownServerException", notRetriable},
	0:  {"NONE", "", notRetriable},
	1:  {"NETWORK_EXCEPTION", "NetworkException", retriableRefresh},
	2:  {"UNSUPPORTED_VERSION", "UnsupportedVersionException", notRetriable},
	3:  {"CORRUPT_MESSAGE", "CorruptMessageException", retriable},
	4:  {"DATABASE_NOT_EXIST", "DatabaseNotExistException", notRetriable},
	5:  {"DATABASE_NOT_EMPTY", "DatabaseNotEmptyException", notRetriable},
	6:  {"DATABASE_ALREADY_EXIST", "DatabaseAlreadyExistException", notRetriable},
	7:  {"TABLE_NOT_EXIST", "TableNotExistException", notRetriable},
	8:  {"TABLE_ALREADY_EXIST", "TableAlreadyExistException", notRetriable},
	9:  {"SCHEMA_NOT_EXIST", "SchemaNotExistException", retriable},
	10: {"LOG_STORAGE_EXCEPTION", "LogStorageException", retriable},
	11: {"KV_STORAGE_EXCEPTION", "KvStorageException", retriable},
	12: {"NOT_LEADER_OR_FOLLOWER", "NotLeaderOrFollowerException", retriableRefresh},
	13: {"RECORD_TOO_LARGE_EXCEPTION", "RecordTooLargeException", notRetriable},
	14: {"CORRUPT_RECORD_EXCEPTION", "CorruptRecordException", retriable},
	15: {"INVALID_TABLE_EXCEPTION", "InvalidTableException", notRetriable},
	16: {"INVALID_DATABASE_EXCEPTION", "InvalidDatabaseException", notRetriable},
	17: {"INVALID_REPLICATION_FACTOR", "InvalidReplicationFactorException", notRetriable},
	18: {"INVALID_REQUIRED_ACKS", "InvalidRequiredAcksException", notRetriable},
	19: {"LOG_OFFSET_OUT_OF_RANGE_EXCEPTION", "LogOffsetOutOfRangeException", notRetriable},
	20: {"NON_PRIMARY_KEY_TABLE_EXCEPTION", "NonPrimaryKeyTableException", notRetriable},
	21: {"UNKNOWN_TABLE_OR_BUCKET_EXCEPTION", "UnknownTableOrBucketException", retriableRefresh},
	22: {"INVALID_UPDATE_VERSION_EXCEPTION", "InvalidUpdateVersionException", notRetriable},
	23: {"INVALID_COORDINATOR_EXCEPTION", "InvalidCoordinatorException", notRetriable},
	24: {"FENCED_LEADER_EPOCH_EXCEPTION", "FencedLeaderEpochException", notRetriable},
	25: {"REQUEST_TIME_OUT", "TimeoutException", retriable},
	26: {"STORAGE_EXCEPTION", "StorageException", retriable},
	27: {"OPERATION_NOT_ATTEMPTED_EXCEPTION", "OperationNotAttemptedException", notRetriable},
	28: {"NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION", "NotEnoughReplicasAfterAppendException", retriable},
	29: {"NOT_ENOUGH_REPLICAS_EXCEPTION", "NotEnoughReplicasException", retriable},
	30: {"SECURITY_TOKEN_EXCEPTION", "SecurityTokenException", notRetriable},
	31: {"OUT_OF_ORDER_SEQUENCE_EXCEPTION", "OutOfOrderSequenceException", notRetriable},
	32: {"DUPLICATE_SEQUENCE_EXCEPTION", "DuplicateSequenceException", notRetriable},
	33: {"UNKNOWN_WRITER_ID_EXCEPTION", "UnknownWriterIdException", notRetriable},
	34: {"INVALID_COLUMN_PROJECTION", "InvalidColumnProjectionException", notRetriable},
	35: {"INVALID_TARGET_COLUMN", "InvalidTargetColumnException", notRetriable},
	36: {"PARTITION_NOT_EXISTS", "PartitionNotExistException", notRetriable},
	37: {"TABLE_NOT_PARTITIONED_EXCEPTION", "TableNotPartitionedException", notRetriable},
	38: {"INVALID_TIMESTAMP_EXCEPTION", "InvalidTimestampException", notRetriable},
	39: {"INVALID_CONFIG_EXCEPTION", "InvalidConfigException", notRetriable},
	40: {"LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION", "LakeStorageNotConfiguredException", notRetriable},
	41: {"KV_SNAPSHOT_NOT_EXIST", "KvSnapshotNotExistException", notRetriable},
	42: {"PARTITION_ALREADY_EXISTS", "PartitionAlreadyExistsException", notRetriable},
	43: {"PARTITION_SPEC_INVALID_EXCEPTION", "InvalidPartitionException", notRetriable},
	44: {"LEADER_NOT_AVAILABLE_EXCEPTION", "LeaderNotAvailableException", retriableRefresh},
	45: {"PARTITION_MAX_NUM_EXCEPTION", "TooManyPartitionsException", notRetriable},
	46: {"AUTHENTICATE_EXCEPTION", "AuthenticationException", notRetriable},
	47: {"SECURITY_DISABLED_EXCEPTION", "SecurityDisabledException", notRetriable},
	48: {"AUTHORIZATION_EXCEPTION", "AuthorizationException", notRetriable},
	49: {"BUCKET_MAX_NUM_EXCEPTION", "TooManyBucketsException", notRetriable},
	50: {"FENCED_TIERING_EPOCH_EXCEPTION", "FencedTieringEpochException", notRetriable},
	// RetriableAuthenticationException extends AuthenticationException, not
	// RetriableException: the connection must redo its handshake, which is
	// the dialer's business, so a request retry alone does not help.
	51: {"RETRIABLE_AUTHENTICATE_EXCEPTION", "RetriableAuthenticationException", notRetriable},
	52: {"INVALID_SERVER_RACK_INFO_EXCEPTION", "InvalidServerRackInfoException", notRetriable},
	53: {"LAKE_SNAPSHOT_NOT_EXIST", "LakeTableSnapshotNotExistException", notRetriable},
	54: {"LAKE_TABLE_ALREADY_EXIST", "LakeTableAlreadyExistException", notRetriable},
	55: {"INELIGIBLE_REPLICA_EXCEPTION", "IneligibleReplicaException", notRetriable},
	56: {"INVALID_ALTER_TABLE_EXCEPTION", "InvalidAlterTableException", notRetriable},
	57: {"DELETION_DISABLED_EXCEPTION", "DeletionDisabledException", notRetriable},
	58: {"SERVER_NOT_EXIST_EXCEPTION", "ServerNotExistException", notRetriable},
	59: {"SEVER_TAG_ALREADY_EXIST_EXCEPTION", "ServerTagAlreadyExistException", notRetriable},
	60: {"SEVER_TAG_NOT_EXIST_EXCEPTION", "ServerTagNotExistException", notRetriable},
	61: {"REBALANCE_FAILURE_EXCEPTION", "RebalanceFailureException", notRetriable},
	62: {"NO_REBALANCE_IN_PROGRESS_EXCEPTION", "NoRebalanceInProgressException", notRetriable},
	63: {"INVALID_PRODUCER_ID_EXCEPTION", "InvalidProducerIdException", notRetriable},
	// Codes added in 1.0; a 0.9.1 server never sends them.
	64: {"CONFIG_EXCEPTION", "ConfigException", notRetriable},
	// The coordinator asked is not the leader among several: refresh the
	// coordinator through metadata (not a RetriableException upstream).
	65: {"NOT_COORDINATOR_LEADER_EXCEPTION", "NotCoordinatorLeaderException", notRetriable},
	66: {"SCANNER_EXPIRED", "ScannerExpiredException", notRetriable},
	67: {"UNKNOWN_SCANNER_ID", "UnknownScannerIdException", notRetriable},
	68: {"INVALID_SCAN_REQUEST", "InvalidScanRequestException", notRetriable},
	69: {"TOO_MANY_SCANNERS", "TooManyScannersException", notRetriable},
	70: {"DISK_WRITE_LOCKED", "DiskWriteLockedException", retriable},
	71: {"INSUFFICIENT_KV_LEADER_REPLICA_CAPACITY", "InsufficientKvLeaderReplicaCapacityException", notRetriable},
	// PUT_KV v2+ only (older versions get KV_STORAGE_EXCEPTION instead):
	// the bucket's storage stalls; retry after a delay, the response's
	// per-bucket pressure says how much to slow down.
	72: {"STORAGE_BACKPRESSURE_EXCEPTION", "StorageBackpressureException", retriable},
	73: {"HISTORICAL_PARTITION_THROTTLED", "HistoricalPartitionThrottledException", retriable},
	// Fluss 1.0 wire: routing bucket count. The write's (or lookup's)
	// routing_bucket_count is missing or differs from the partition's bucket
	// count, after a rescale. Resending the same request never helps: refresh
	// the partition's metadata (BucketCount) and rebuild it.
	74: {"INVALID_BUCKET_ROUTING", "InvalidBucketRoutingException", notRetriable},
}

// Error codes a caller commonly tests for, for use with errors.Is.
var (
	ErrUnknownServerError           = newError(-1)
	ErrNetworkException             = newError(1)
	ErrUnsupportedVersion           = newError(2)
	ErrCorruptMessage               = newError(3)
	ErrDatabaseNotExist             = newError(4)
	ErrDatabaseNotEmpty             = newError(5)
	ErrDatabaseAlreadyExist         = newError(6)
	ErrTableNotExist                = newError(7)
	ErrTableAlreadyExist            = newError(8)
	ErrSchemaNotExist               = newError(9)
	ErrLogStorage                   = newError(10)
	ErrKvStorage                    = newError(11)
	ErrNotLeaderOrFollower          = newError(12)
	ErrRecordTooLarge               = newError(13)
	ErrCorruptRecord                = newError(14)
	ErrInvalidTable                 = newError(15)
	ErrInvalidRequiredAcks          = newError(18)
	ErrUnknownTableOrBucket         = newError(21)
	ErrRequestTimedOut              = newError(25)
	ErrStorage                      = newError(26)
	ErrNotEnoughReplicasAfterAppend = newError(28)
	ErrNotEnoughReplicas            = newError(29)
	ErrOutOfOrderSequence           = newError(31)
	ErrDuplicateSequence            = newError(32)
	ErrUnknownWriterID              = newError(33)
	ErrPartitionNotExists           = newError(36)
	ErrTableNotPartitioned          = newError(37)
	ErrInvalidTimestamp             = newError(38)
	ErrInvalidConfig                = newError(39)
	ErrPartitionAlreadyExists       = newError(42)
	ErrLeaderNotAvailable           = newError(44)
	ErrInvalidAlterTable            = newError(56)
	ErrAuthenticate                 = newError(46)
	ErrAuthorization                = newError(48)
	ErrRetriableAuthenticate        = newError(51)
	ErrConfigException              = newError(64)
	ErrNotCoordinatorLeader         = newError(65)
	ErrScannerExpired               = newError(66)
	ErrUnknownScannerID             = newError(67)
	ErrInvalidScanRequest           = newError(68)
	ErrTooManyScanners              = newError(69)
	ErrDiskWriteLocked              = newError(70)
	ErrInsufficientKvLeaderSpace    = newError(71)
	ErrStorageBackpressure          = newError(72)
	ErrHistoricalPartitionThrottled = newError(73)
	ErrInvalidBucketRouting         = newError(74)

	// ErrInsufficientKvLeaderReplicaCapacity is code 71 under its 1.0 enum
	// name; ErrInsufficientKvLeaderSpace is the older spelling.
	ErrInsufficientKvLeaderReplicaCapacity = ErrInsufficientKvLeaderSpace
)

// Local conditions, not sent by a server.
var (
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("fluss: client closed")
	// ErrConnectionClosed is returned for requests in flight on a
	// connection that broke or was closed; the request may or may not have
	// been processed.
	ErrConnectionClosed = errors.New("fluss: connection closed")
	// ErrRequestTimeout is returned when a server did not answer within the
	// request's deadline. A Fluss server sends no answer at all to an API
	// key its role does not serve, so this is also the symptom of a
	// misrouted request.
	ErrRequestTimeout = errors.New("fluss: request timed out")
	// ErrAPINotSupported is returned before sending a request whose API
	// the server did not list in its ApiVersions response.
	ErrAPINotSupported = errors.New("fluss: api not supported by server")
	// ErrNoLeader is returned when metadata has no leader for a bucket.
	ErrNoLeader = errors.New("fluss: bucket has no leader")
)

func newError(code int32) *Error {
	info, ok := errorTable[code]
	if !ok {
		info = errorTable[-1]
	}
	return &Error{
		Code:            code,
		Name:            info.name,
		Retriable:       info.kind != notRetriable,
		RefreshMetadata: info.kind == retriableRefresh,
	}
}

// errorCodeByClass maps an exception class name to its code. Immutable.
var errorCodeByClass = func() map[string]int32 {
	m := make(map[string]int32, len(errorTable))
	for code, info := range errorTable {
		if info.class != "" && code > 0 {
			m[info.class] = code
		}
	}
	return m
}()

// causePrefix starts the cause lines of a Java stack trace in a message.
const causePrefix = "Caused by: org.apache.fluss.exception."

// refineUnknownServerError handles a 0.9.1 server habit: some typed
// exceptions (TableNotExistException for GET_METADATA of an unknown table,
// seen on a real 0.9.1 cluster) are wrapped in a FlussRuntimeException and
// reach the client as UNKNOWN_SERVER_ERROR with the stack trace as message.
// When the innermost "Caused by: org.apache.fluss.exception.X" names a class
// with its own code, the error gets that code; the message is kept.
func refineUnknownServerError(e *Error) *Error {
	if e.Code != -1 {
		return e
	}
	i := strings.LastIndex(e.Message, causePrefix)
	if i < 0 {
		return e
	}
	rest := e.Message[i+len(causePrefix):]
	if j := strings.IndexAny(rest, ": \n\t"); j >= 0 {
		rest = rest[:j]
	}
	code, ok := errorCodeByClass[rest]
	if !ok {
		return e
	}
	r := newError(code)
	r.Message = e.Message
	return r
}

// ErrorForCode returns the *Error for a Fluss error code carrying the
// server's message, or nil for code 0 (NONE). An unknown code keeps its
// number and is classified as UNKNOWN_SERVER_ERROR (not retriable), as the
// Java client does.
func ErrorForCode(code int32, message string) error {
	if code == 0 {
		return nil
	}
	e := newError(code)
	e.Message = message
	return e
}

// IsRetriable reports whether err may go away if the same request is sent
// again: a retriable Fluss code, a lost or timed-out connection, a timed-out
// request, a bucket without leader or a bucket the response left out. A
// cancelled or expired context, a closed client and every other error are
// not retriable.
func IsRetriable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false // the caller gave up (context.DeadlineExceeded is a net.Error)
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Retriable
	}
	if errors.Is(err, ErrConnectionClosed) || errors.Is(err, ErrRequestTimeout) ||
		errors.Is(err, ErrNoLeader) || errors.Is(err, errNoBucketResponse) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// NeedsMetadataRefresh reports whether bucket leaders should be refreshed
// before retrying after err: a metadata-class Fluss code, a missing leader,
// or a broken connection to the server.
func NeedsMetadataRefresh(err error) bool {
	if err == nil {
		return false
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.RefreshMetadata
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, ErrConnectionClosed) || errors.Is(err, ErrNoLeader) || errors.As(err, &ne)
}

// IsTransient reports whether a failure may go away by itself (Fluss
// not reachable yet, a retriable error), as opposed to a configuration
// problem or a refusal.
func IsTransient(err error) bool {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Retriable
	}
	return errors.Is(err, ErrRequestTimeout) || errors.Is(err, ErrConnectionClosed) ||
		errors.Is(err, context.DeadlineExceeded) || isNetError(err)
}

func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}
