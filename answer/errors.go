package answer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/sender"
)

// flussToKafka is the one translation from a Fluss error to the Kafka error a
// producer sees, with the client's reaction. A Fluss code not listed becomes
// UNKNOWN_SERVER_ERROR, which no producer retries; among them
// CORRUPT_MESSAGE (3) and CORRUPT_RECORD (14): the batch Fluss refused was
// built by the gateway, not by the producer (the converter refuses null
// keys and bad values itself, as INVALID_RECORD with record_errors), so a
// producer retry would not fix it.
//
// The writer retries retriable Fluss errors itself until
// writer.delivery_timeout, so a producer mostly sees a retriable code once
// the writer gave up on a batch, or for a batch the writer cannot resend.
// Codes that mean "none of the batch was written" map to
// NOT_ENOUGH_REPLICAS: every producer retries it and librdkafka marks it
// "not persisted" (REQUEST_TIMED_OUT says "maybe persisted").
//
// Of the codes new in Fluss 1.0 (64–74), the write path can meet 65, 70,
// 72, 73 and 74; the scanner codes (66–69), CONFIG_EXCEPTION (64) and
// INSUFFICIENT_KV_LEADER_REPLICA_CAPACITY (71, a cluster capacity problem
// no retry fixes) stay UNKNOWN_SERVER_ERROR.
var flussToKafka = []struct {
	fluss *fluss.Error
	kafka *kafkaproto.Error
}{
	{fluss.ErrNetworkException, kafkaproto.ErrNotLeaderOrFollower},     // reconnect, refresh metadata, retry
	{fluss.ErrNotLeaderOrFollower, kafkaproto.ErrNotLeaderOrFollower},  // refresh, retry
	{fluss.ErrUnknownTableOrBucket, kafkaproto.ErrNotLeaderOrFollower}, // refresh, retry
	{fluss.ErrLeaderNotAvailable, kafkaproto.ErrLeaderNotAvailable},    // refresh, retry
	{fluss.ErrTableNotExist, kafkaproto.ErrUnknownTopicOrPartition},    // retry until the delivery timeout
	{fluss.ErrPartitionNotExists, kafkaproto.ErrUnknownTopicOrPartition},
	{fluss.ErrSchemaNotExist, kafkaproto.ErrKafkaStorage}, // retriable in Fluss: schema not propagated yet
	{fluss.ErrLogStorage, kafkaproto.ErrKafkaStorage},
	{fluss.ErrKvStorage, kafkaproto.ErrKafkaStorage},
	{fluss.ErrStorage, kafkaproto.ErrKafkaStorage},
	{fluss.ErrDiskWriteLocked, kafkaproto.ErrKafkaStorage},
	{fluss.ErrStorageBackpressure, kafkaproto.ErrKafkaStorage},
	{fluss.ErrHistoricalPartitionThrottled, kafkaproto.ErrKafkaStorage},
	{fluss.ErrRequestTimedOut, kafkaproto.ErrRequestTimedOut}, // retry; idempotence absorbs duplicates
	{fluss.ErrNotEnoughReplicasAfterAppend, kafkaproto.ErrNotEnoughReplicasAfterAppend},
	{fluss.ErrNotEnoughReplicas, kafkaproto.ErrNotEnoughReplicas},
	{fluss.ErrRecordTooLarge, kafkaproto.ErrMessageTooLarge}, // Java splits the batch, others fail
	{fluss.ErrInvalidRequiredAcks, kafkaproto.ErrInvalidRequiredAcks},
	{fluss.ErrInvalidTimestamp, kafkaproto.ErrInvalidTimestamp},
	{fluss.ErrAuthenticate, kafkaproto.ErrTopicAuthorizationFailed}, // the gateway's own Fluss credentials
	{fluss.ErrAuthorization, kafkaproto.ErrTopicAuthorizationFailed},
	// Fluss refused the batch on sequence grounds and wrote none of it
	// (the writer resets its writer id for the bucket's later batches).
	{fluss.ErrOutOfOrderSequence, kafkaproto.ErrNotEnoughReplicas},
	{fluss.ErrUnknownWriterID, kafkaproto.ErrNotEnoughReplicas},
	// A coordinator failover while a partition is created: nothing written.
	{fluss.ErrNotCoordinatorLeader, kafkaproto.ErrLeaderNotAvailable},
	// The table was rescaled: the batch was refused, and the producer's
	// retry is bucketed against the refreshed bucket count.
	{fluss.ErrInvalidBucketRouting, kafkaproto.ErrNotLeaderOrFollower},
}

// flussThrottle adds a pause to the Kafka answer of the Fluss errors that
// mean "storage under pressure" (the Produce throttle time, which Java and
// franz-go honour on Produce v6+): the storage recovers sooner when the
// producers' retries do not come at once. A second is about what the
// writer's own retries wait between attempts by then.
var flussThrottle = map[int32]time.Duration{
	fluss.ErrStorageBackpressure.Code:          time.Second,
	fluss.ErrHistoricalPartitionThrottled.Code: time.Second,
}

// Throttle is the throttle time a failed Produce partition carries
// (kafkaproto.PartitionResult.ThrottleTime); zero for most errors.
func Throttle(err error) time.Duration {
	if err == nil {
		return 0 // the common case: no errors.As target escaping per answer
	}
	var fe *fluss.Error
	if !errors.As(err, &fe) {
		return 0
	}
	return flussThrottle[fe.Code]
}

// Error classifies an error of the write path for the Kafka front,
// keeping the original as the message: the result matches (errors.Is) one
// kafkaproto sentinel.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var ke *kafkaproto.Error
	if errors.As(err, &ke) {
		return err
	}
	var fe *fluss.Error
	switch {
	case errors.Is(err, sender.ErrWriterReset):
		// The batch was stamped with a writer id the writer has since
		// reset (after OUT_OF_ORDER_SEQUENCE): it was not written and will
		// not be, so the producer's retry is safe, and needed.
		return fmt.Errorf("%w: fluss writer reset after a sequence error; none of the batch was written, retry is safe: %w", kafkaproto.ErrNotEnoughReplicas, err)
	case errors.Is(err, sender.ErrNoLeader):
		// Never sent: the table's buckets have had no leader for a while,
		// as a Kafka partition without leader.
		return fmt.Errorf("%w: %w", kafkaproto.ErrLeaderNotAvailable, err)
	case errors.As(err, &fe):
		for _, m := range flussToKafka {
			if m.fluss.Code == fe.Code {
				return fmt.Errorf("%w: %w", m.kafka, err)
			}
		}
		return fmt.Errorf("%w: %w", kafkaproto.ErrUnknownServerError, err)
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, sender.ErrDeliveryTimeout),
		errors.Is(err, accumulator.ErrBufferFull),
		errors.Is(err, fluss.ErrRequestTimeout):
		return fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
	case errors.Is(err, accumulator.ErrRecordTooLarge):
		return fmt.Errorf("%w: %w", kafkaproto.ErrMessageTooLarge, err)
	case errors.Is(err, fluss.ErrConnectionClosed),
		errors.Is(err, fluss.ErrNoLeader),
		errors.Is(err, accumulator.ErrClosed): // shutting down: retry on another instance
		return fmt.Errorf("%w: %w", kafkaproto.ErrNotLeaderOrFollower, err)
	}
	return fmt.Errorf("%w: %w", kafkaproto.ErrUnknownServerError, err)
}

func Failed(err error) kafkaproto.PartitionResult {
	return kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: err, ThrottleTime: Throttle(err)}
}
