package answer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/sender"
)

// javaRetries is the set of Kafka codes the Java producer retries on
// Produce: those whose exception extends RetriableException in the
// client's error table (org.apache.kafka.common.protocol.Errors), which
// the sender's canRetry consults. MESSAGE_TOO_LARGE is not among them: Java
// splits the batch instead when it holds more than one record.
var javaRetries = map[int16]bool{
	2:  true, // CorruptRecordException
	3:  true, // UnknownTopicOrPartitionException (InvalidMetadataException)
	5:  true, // LeaderNotAvailableException (InvalidMetadataException)
	6:  true, // NotLeaderOrFollowerException (InvalidMetadataException)
	7:  true, // TimeoutException
	19: true, // NotEnoughReplicasException
	20: true, // NotEnoughReplicasAfterAppendException
	56: true, // KafkaStorageException (InvalidMetadataException)
}

// franzGoRetries is what franz-go does with a produce error code: it
// retries exactly the codes its error table (pkg/kerr) marks retriable.
func franzGoRetries(code int16) bool { return kerr.IsRetriable(kerr.ErrorForCode(code)) }

// TestKafkaErrorForEveryFlussCode is the Fluss → Kafka table as a producer
// sees it: for every Fluss code, the Kafka code, and whether franz-go and
// Java retry it. A code a producer retries must be one where nothing of
// the batch was written or a retry is absorbed by idempotence; every other
// code is UNKNOWN_SERVER_ERROR (not retried).
func TestKafkaErrorForEveryFlussCode(t *testing.T) {
	t.Parallel()
	table := map[int32]struct {
		kafka *kafkaproto.Error
		retry bool
	}{
		1:  {kafkaproto.ErrNotLeaderOrFollower, true},          // NETWORK_EXCEPTION: reconnect, refresh
		7:  {kafkaproto.ErrUnknownTopicOrPartition, true},      // TABLE_NOT_EXIST: until the delivery timeout
		9:  {kafkaproto.ErrKafkaStorage, true},                 // SCHEMA_NOT_EXIST: not propagated yet
		10: {kafkaproto.ErrKafkaStorage, true},                 // LOG_STORAGE_EXCEPTION
		11: {kafkaproto.ErrKafkaStorage, true},                 // KV_STORAGE_EXCEPTION
		12: {kafkaproto.ErrNotLeaderOrFollower, true},          // NOT_LEADER_OR_FOLLOWER
		13: {kafkaproto.ErrMessageTooLarge, false},             // RECORD_TOO_LARGE: Java splits
		18: {kafkaproto.ErrInvalidRequiredAcks, false},         // INVALID_REQUIRED_ACKS
		21: {kafkaproto.ErrNotLeaderOrFollower, true},          // UNKNOWN_TABLE_OR_BUCKET
		25: {kafkaproto.ErrRequestTimedOut, true},              // REQUEST_TIME_OUT: idempotence absorbs a duplicate
		26: {kafkaproto.ErrKafkaStorage, true},                 // STORAGE_EXCEPTION
		28: {kafkaproto.ErrNotEnoughReplicasAfterAppend, true}, // written, under-replicated
		29: {kafkaproto.ErrNotEnoughReplicas, true},            // nothing written
		31: {kafkaproto.ErrNotEnoughReplicas, true},            // OUT_OF_ORDER_SEQUENCE: refused, nothing written
		33: {kafkaproto.ErrNotEnoughReplicas, true},            // UNKNOWN_WRITER_ID: refused, nothing written
		36: {kafkaproto.ErrUnknownTopicOrPartition, true},      // PARTITION_NOT_EXISTS: re-resolved on retry
		38: {kafkaproto.ErrInvalidTimestamp, false},            // INVALID_TIMESTAMP
		44: {kafkaproto.ErrLeaderNotAvailable, true},           // LEADER_NOT_AVAILABLE
		46: {kafkaproto.ErrTopicAuthorizationFailed, false},    // the gateway's own credentials
		48: {kafkaproto.ErrTopicAuthorizationFailed, false},    // AUTHORIZATION_EXCEPTION
		65: {kafkaproto.ErrLeaderNotAvailable, true},           // NOT_COORDINATOR_LEADER: coordinator failover
		70: {kafkaproto.ErrKafkaStorage, true},                 // DISK_WRITE_LOCKED
		72: {kafkaproto.ErrKafkaStorage, true},                 // STORAGE_BACKPRESSURE: nothing written
		73: {kafkaproto.ErrKafkaStorage, true},                 // HISTORICAL_PARTITION_THROTTLED
		74: {kafkaproto.ErrNotLeaderOrFollower, true},          // INVALID_BUCKET_ROUTING: re-bucketed on retry
	}
	for code := int32(-1); code <= 74; code++ {
		if code == 0 {
			continue
		}
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			ferr := fluss.ErrorForCode(code, "from the server")
			require.Error(t, ferr)
			got := Error(fmt.Errorf("produce_log to tablet server 1: %w", ferr))
			want, ok := table[code]
			if !ok {
				want.kafka = kafkaproto.ErrUnknownServerError
			}
			assert.ErrorIs(t, got, want.kafka)
			assert.ErrorIs(t, got, ferr, "the Fluss error stays in the chain for the message")
			assert.Equal(t, want.retry, franzGoRetries(want.kafka.Code), "franz-go retries %s", want.kafka.Name)
			assert.Equal(t, want.retry, javaRetries[want.kafka.Code], "Java retries %s", want.kafka.Name)
			assert.Equal(t, want.retry, want.kafka.Retriable, "kafkaproto documents %s", want.kafka.Name)
		})
	}
}

// TestWriterResetIsRetriable: a batch failed by the writer's reset path
// (stamped with a writer id reset after OUT_OF_ORDER_SEQUENCE; not in
// Fluss) is retried by the producer, whatever Fluss error came with it,
// and says so in its message.
func TestWriterResetIsRetriable(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{
		fmt.Errorf("resend batch: %w", sender.ErrWriterReset),
		fmt.Errorf("%w: %w", sender.ErrWriterReset, fluss.ErrorForCode(31, "out of order")),
		fmt.Errorf("%w: %w", sender.ErrWriterReset, fluss.ErrorForCode(3, "corrupt")),
	} {
		got := Error(fmt.Errorf("table db.t bucket 2: %w", cause))
		assert.ErrorIs(t, got, kafkaproto.ErrNotEnoughReplicas, "%v", cause)
		assert.True(t, franzGoRetries(kafkaproto.ErrNotEnoughReplicas.Code))
		assert.True(t, javaRetries[kafkaproto.ErrNotEnoughReplicas.Code])
		assert.Contains(t, got.Error(), "none of the batch was written")
	}
}

// TestNoLeaderIsLeaderNotAvailable: a batch failed because its bucket had
// no leader (never sent) is LEADER_NOT_AVAILABLE, retried by producers,
// whatever lookup error it carries.
func TestNoLeaderIsLeaderNotAvailable(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{
		sender.ErrNoLeader,
		fmt.Errorf("%w for 5s: %w", sender.ErrNoLeader, fluss.ErrorForCode(21, "unknown table or bucket")),
		fmt.Errorf("%w for 5s: %w", sender.ErrNoLeader, fluss.ErrConnectionClosed),
	} {
		got := Error(fmt.Errorf("write to table db.t bucket 0: %w", cause))
		assert.ErrorIs(t, got, kafkaproto.ErrLeaderNotAvailable, "%v", cause)
		assert.True(t, franzGoRetries(kafkaproto.ErrLeaderNotAvailable.Code))
		assert.True(t, javaRetries[kafkaproto.ErrLeaderNotAvailable.Code])
	}
}

func TestKafkaErrorLocalConditions(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want *kafkaproto.Error
	}{
		{"nil", nil, nil},
		{"deadline", context.DeadlineExceeded, kafkaproto.ErrRequestTimedOut},
		{"delivery timeout", sender.ErrDeliveryTimeout, kafkaproto.ErrRequestTimedOut},
		{"buffer full", accumulator.ErrBufferFull, kafkaproto.ErrRequestTimedOut},
		{"fluss request timeout", fluss.ErrRequestTimeout, kafkaproto.ErrRequestTimedOut},
		{"record too large", accumulator.ErrRecordTooLarge, kafkaproto.ErrMessageTooLarge},
		{"connection closed", fluss.ErrConnectionClosed, kafkaproto.ErrNotLeaderOrFollower},
		{"no leader", fluss.ErrNoLeader, kafkaproto.ErrNotLeaderOrFollower},
		{"shutting down", sender.ErrStopped, kafkaproto.ErrNotLeaderOrFollower},
		{"writer reset", sender.ErrWriterReset, kafkaproto.ErrNotEnoughReplicas},
		{"kafka error passes", kafkaproto.ErrInvalidRecord, kafkaproto.ErrInvalidRecord},
		{"records error passes", &kafkaproto.RecordsError{Records: []kafkaproto.RecordError{{Index: 1, Message: "bad"}}}, kafkaproto.ErrInvalidRecord},
		{"anything else", errors.New("boom"), kafkaproto.ErrUnknownServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Error(tt.err)
			if tt.want == nil {
				assert.NoError(t, got)
				return
			}
			assert.ErrorIs(t, got, tt.want)
		})
	}
}

// TestFlussToKafkaTableHasEachCodeOnce: the table is the one mapping; a
// code listed twice would make the second entry dead.
func TestFlussToKafkaTableHasEachCodeOnce(t *testing.T) {
	seen := map[int32]bool{}
	for _, m := range flussToKafka {
		assert.False(t, seen[m.fluss.Code], "Fluss code %d (%s) listed twice", m.fluss.Code, m.fluss.Name)
		seen[m.fluss.Code] = true
		require.NotNil(t, m.kafka)
	}
}

// TestThrottleForStoragePressure: Fluss storage back-pressure also asks
// the producer to pause; other errors do not.
func TestThrottleForStoragePressure(t *testing.T) {
	t.Parallel()
	wrap := func(code int32) error {
		return fmt.Errorf("table db.t bucket 0: %w", fluss.ErrorForCode(code, "busy"))
	}
	assert.Equal(t, time.Second, Throttle(wrap(72)))
	assert.Equal(t, time.Second, Throttle(wrap(73)))
	assert.Zero(t, Throttle(wrap(10)))
	assert.Zero(t, Throttle(sender.ErrDeliveryTimeout))
	assert.Zero(t, Throttle(nil))
}
