package fluss

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jarErrors is the Errors enum of the released fluss-client 1.0.0 jar, read
// by loading the jar's classes: code, enum name, exception class and its
// classification (retriable = the class extends RetriableException, refresh
// = it also extends InvalidMetadataException). NONE has no exception class.
var jarErrors = []struct {
	code      int32
	name      string
	class     string
	retriable bool
	refresh   bool
}{
	{-1, "UNKNOWN_SERVER_ERROR", "UnknownServerException", false, false},
	{0, "NONE", "", false, false},
	{1, "NETWORK_EXCEPTION", "NetworkException", true, true},
	{2, "UNSUPPORTED_VERSION", "UnsupportedVersionException", false, false},
	{3, "CORRUPT_MESSAGE", "CorruptMessageException", true, false},
	{4, "DATABASE_NOT_EXIST", "DatabaseNotExistException", false, false},
	{5, "DATABASE_NOT_EMPTY", "DatabaseNotEmptyException", false, false},
	{6, "DATABASE_ALREADY_EXIST", "DatabaseAlreadyExistException", false, false},
	{7, "TABLE_NOT_EXIST", "TableNotExistException", false, false},
	{8, "TABLE_ALREADY_EXIST", "TableAlreadyExistException", false, false},
	{9, "SCHEMA_NOT_EXIST", "SchemaNotExistException", true, false},
	{10, "LOG_STORAGE_EXCEPTION", "LogStorageException", true, false},
	{11, "KV_STORAGE_EXCEPTION", "KvStorageException", true, false},
	{12, "NOT_LEADER_OR_FOLLOWER", "NotLeaderOrFollowerException", true, true},
	{13, "RECORD_TOO_LARGE_EXCEPTION", "RecordTooLargeException", false, false},
	{14, "CORRUPT_RECORD_EXCEPTION", "CorruptRecordException", true, false},
	{15, "INVALID_TABLE_EXCEPTION", "InvalidTableException", false, false},
	{16, "INVALID_DATABASE_EXCEPTION", "InvalidDatabaseException", false, false},
	{17, "INVALID_REPLICATION_FACTOR", "InvalidReplicationFactorException", false, false},
	{18, "INVALID_REQUIRED_ACKS", "InvalidRequiredAcksException", false, false},
	{19, "LOG_OFFSET_OUT_OF_RANGE_EXCEPTION", "LogOffsetOutOfRangeException", false, false},
	{20, "NON_PRIMARY_KEY_TABLE_EXCEPTION", "NonPrimaryKeyTableException", false, false},
	{21, "UNKNOWN_TABLE_OR_BUCKET_EXCEPTION", "UnknownTableOrBucketException", true, true},
	{22, "INVALID_UPDATE_VERSION_EXCEPTION", "InvalidUpdateVersionException", false, false},
	{23, "INVALID_COORDINATOR_EXCEPTION", "InvalidCoordinatorException", false, false},
	{24, "FENCED_LEADER_EPOCH_EXCEPTION", "FencedLeaderEpochException", false, false},
	{25, "REQUEST_TIME_OUT", "TimeoutException", true, false},
	{26, "STORAGE_EXCEPTION", "StorageException", true, false},
	{27, "OPERATION_NOT_ATTEMPTED_EXCEPTION", "OperationNotAttemptedException", false, false},
	{28, "NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION", "NotEnoughReplicasAfterAppendException", true, false},
	{29, "NOT_ENOUGH_REPLICAS_EXCEPTION", "NotEnoughReplicasException", true, false},
	{30, "SECURITY_TOKEN_EXCEPTION", "SecurityTokenException", false, false},
	{31, "OUT_OF_ORDER_SEQUENCE_EXCEPTION", "OutOfOrderSequenceException", false, false},
	{32, "DUPLICATE_SEQUENCE_EXCEPTION", "DuplicateSequenceException", false, false},
	{33, "UNKNOWN_WRITER_ID_EXCEPTION", "UnknownWriterIdException", false, false},
	{34, "INVALID_COLUMN_PROJECTION", "InvalidColumnProjectionException", false, false},
	{35, "INVALID_TARGET_COLUMN", "InvalidTargetColumnException", false, false},
	{36, "PARTITION_NOT_EXISTS", "PartitionNotExistException", false, false},
	{37, "TABLE_NOT_PARTITIONED_EXCEPTION", "TableNotPartitionedException", false, false},
	{38, "INVALID_TIMESTAMP_EXCEPTION", "InvalidTimestampException", false, false},
	{39, "INVALID_CONFIG_EXCEPTION", "InvalidConfigException", false, false},
	{40, "LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION", "LakeStorageNotConfiguredException", false, false},
	{41, "KV_SNAPSHOT_NOT_EXIST", "KvSnapshotNotExistException", false, false},
	{42, "PARTITION_ALREADY_EXISTS", "PartitionAlreadyExistsException", false, false},
	{43, "PARTITION_SPEC_INVALID_EXCEPTION", "InvalidPartitionException", false, false},
	{44, "LEADER_NOT_AVAILABLE_EXCEPTION", "LeaderNotAvailableException", true, true},
	{45, "PARTITION_MAX_NUM_EXCEPTION", "TooManyPartitionsException", false, false},
	{46, "AUTHENTICATE_EXCEPTION", "AuthenticationException", false, false},
	{47, "SECURITY_DISABLED_EXCEPTION", "SecurityDisabledException", false, false},
	{48, "AUTHORIZATION_EXCEPTION", "AuthorizationException", false, false},
	{49, "BUCKET_MAX_NUM_EXCEPTION", "TooManyBucketsException", false, false},
	{50, "FENCED_TIERING_EPOCH_EXCEPTION", "FencedTieringEpochException", false, false},
	{51, "RETRIABLE_AUTHENTICATE_EXCEPTION", "RetriableAuthenticationException", false, false},
	{52, "INVALID_SERVER_RACK_INFO_EXCEPTION", "InvalidServerRackInfoException", false, false},
	{53, "LAKE_SNAPSHOT_NOT_EXIST", "LakeTableSnapshotNotExistException", false, false},
	{54, "LAKE_TABLE_ALREADY_EXIST", "LakeTableAlreadyExistException", false, false},
	{55, "INELIGIBLE_REPLICA_EXCEPTION", "IneligibleReplicaException", false, false},
	{56, "INVALID_ALTER_TABLE_EXCEPTION", "InvalidAlterTableException", false, false},
	{57, "DELETION_DISABLED_EXCEPTION", "DeletionDisabledException", false, false},
	{58, "SERVER_NOT_EXIST_EXCEPTION", "ServerNotExistException", false, false},
	{59, "SEVER_TAG_ALREADY_EXIST_EXCEPTION", "ServerTagAlreadyExistException", false, false},
	{60, "SEVER_TAG_NOT_EXIST_EXCEPTION", "ServerTagNotExistException", false, false},
	{61, "REBALANCE_FAILURE_EXCEPTION", "RebalanceFailureException", false, false},
	{62, "NO_REBALANCE_IN_PROGRESS_EXCEPTION", "NoRebalanceInProgressException", false, false},
	{63, "INVALID_PRODUCER_ID_EXCEPTION", "InvalidProducerIdException", false, false},
	{64, "CONFIG_EXCEPTION", "ConfigException", false, false},
	{65, "NOT_COORDINATOR_LEADER_EXCEPTION", "NotCoordinatorLeaderException", false, false},
	{66, "SCANNER_EXPIRED", "ScannerExpiredException", false, false},
	{67, "UNKNOWN_SCANNER_ID", "UnknownScannerIdException", false, false},
	{68, "INVALID_SCAN_REQUEST", "InvalidScanRequestException", false, false},
	{69, "TOO_MANY_SCANNERS", "TooManyScannersException", false, false},
	{70, "DISK_WRITE_LOCKED", "DiskWriteLockedException", true, false},
	{71, "INSUFFICIENT_KV_LEADER_REPLICA_CAPACITY", "InsufficientKvLeaderReplicaCapacityException", false, false},
	{72, "STORAGE_BACKPRESSURE_EXCEPTION", "StorageBackpressureException", true, false},
	{73, "HISTORICAL_PARTITION_THROTTLED", "HistoricalPartitionThrottledException", true, false},
	{74, "INVALID_BUCKET_ROUTING", "InvalidBucketRoutingException", false, false},
}

// TestErrorTableMatchesFluss10Jar pins every code of Fluss 1.0 (-1..74):
// name, exception class and retriability, and that no code is missing.
func TestErrorTableMatchesFluss10Jar(t *testing.T) {
	require.Len(t, errorTable, len(jarErrors), "the table has exactly the 1.0 codes")
	for _, want := range jarErrors {
		info, ok := errorTable[want.code]
		require.True(t, ok, "code %d missing", want.code)
		assert.Equal(t, want.name, info.name, "code %d", want.code)
		assert.Equal(t, want.class, info.class, "code %d", want.code)
		if want.code == 0 {
			continue
		}
		e := newError(want.code)
		assert.Equal(t, want.retriable, e.Retriable, "code %d %s retriable", want.code, want.name)
		assert.Equal(t, want.refresh, e.RefreshMetadata, "code %d %s refresh", want.code, want.name)
		assert.Equal(t, want.retriable, IsRetriable(ErrorForCode(want.code, "")), "code %d", want.code)
	}
}

// TestFluss10Sentinels pins the sentinel of each 1.0 code, and the handling
// a writer relies on: back-pressure is retriable, a bucket-routing error is
// not (rebuild the request from fresh metadata instead).
func TestFluss10Sentinels(t *testing.T) {
	sentinels := map[int32]error{
		64: ErrConfigException,
		65: ErrNotCoordinatorLeader,
		66: ErrScannerExpired,
		67: ErrUnknownScannerID,
		68: ErrInvalidScanRequest,
		69: ErrTooManyScanners,
		70: ErrDiskWriteLocked,
		71: ErrInsufficientKvLeaderReplicaCapacity,
		72: ErrStorageBackpressure,
		73: ErrHistoricalPartitionThrottled,
		74: ErrInvalidBucketRouting,
	}
	for code := int32(64); code <= 74; code++ {
		s, ok := sentinels[code]
		require.True(t, ok, "no sentinel for code %d", code)
		err := ErrorForCode(code, "from the server")
		assert.ErrorIs(t, err, s, "code %d", code)
		var fe *Error
		require.True(t, errors.As(s, &fe))
		assert.Equal(t, code, fe.Code)
	}
	assert.Same(t, ErrInsufficientKvLeaderSpace, ErrInsufficientKvLeaderReplicaCapacity)

	routing := ErrorForCode(74, "routing bucket count 3 does not match 4")
	assert.False(t, IsRetriable(routing), "74 is not retriable: the request must be rebuilt")
	assert.False(t, NeedsMetadataRefresh(routing), "74 is not a leader problem")
	assert.Equal(t, "INVALID_BUCKET_ROUTING", routing.(*Error).Name)

	bp := ErrorForCode(72, "")
	assert.True(t, IsRetriable(bp))
	assert.False(t, NeedsMetadataRefresh(bp))
}

// TestRefineUnknownServerErrorFluss10 maps a wrapped 1.0 exception class to
// its code, as for the 0.9.1 ones.
func TestRefineUnknownServerErrorFluss10(t *testing.T) {
	msg := "org.apache.fluss.exception.FlussRuntimeException: x\nCaused by: org.apache.fluss.exception.InvalidBucketRoutingException: bucket count 3 != 4"
	err := refineUnknownServerError(&Error{Code: -1, Name: "UNKNOWN_SERVER_ERROR", Message: msg})
	assert.ErrorIs(t, err, ErrInvalidBucketRouting)
}
