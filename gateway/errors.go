package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/writer"
)

// flussToKafka is the one translation from a Fluss error to the Kafka error a
// producer sees, with the client's reaction. A Fluss code not listed becomes
// UNKNOWN_SERVER_ERROR, which no producer retries; among them
// CORRUPT_MESSAGE (3) and CORRUPT_RECORD (14): the batch Fluss refused was
// built by the gateway, not by the producer (the converter refuses null
// keys and bad values itself, as INVALID_RECORD with record_errors), so a
// producer retry would not fix it.
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
}

// kafkaError classifies an error of the write path for the Kafka front,
// keeping the original as the message: the result matches (errors.Is) one
// kafkaproto sentinel.
func kafkaError(err error) error {
	if err == nil {
		return nil
	}
	var ke *kafkaproto.Error
	if errors.As(err, &ke) {
		return err
	}
	var fe *fluss.Error
	switch {
	case errors.As(err, &fe):
		for _, m := range flussToKafka {
			if m.fluss.Code == fe.Code {
				return fmt.Errorf("%w: %w", m.kafka, err)
			}
		}
		return fmt.Errorf("%w: %w", kafkaproto.ErrUnknownServerError, err)
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, writer.ErrDeliveryTimeout),
		errors.Is(err, writer.ErrBufferFull),
		errors.Is(err, fluss.ErrRequestTimeout):
		return fmt.Errorf("%w: %w", kafkaproto.ErrRequestTimedOut, err)
	case errors.Is(err, writer.ErrRecordTooLarge):
		return fmt.Errorf("%w: %w", kafkaproto.ErrMessageTooLarge, err)
	case errors.Is(err, fluss.ErrConnectionClosed),
		errors.Is(err, fluss.ErrNoLeader),
		errors.Is(err, writer.ErrClosed): // shutting down: retry on another instance
		return fmt.Errorf("%w: %w", kafkaproto.ErrNotLeaderOrFollower, err)
	}
	return fmt.Errorf("%w: %w", kafkaproto.ErrUnknownServerError, err)
}
