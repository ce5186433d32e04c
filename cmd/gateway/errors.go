package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/sender"
)

// kafkaCodeForFluss is the one translation from a Fluss error code to the
// Kafka error a producer sees (the classes are documented in
// kafkaproto/errors.go). Codes not listed become UNKNOWN_SERVER_ERROR: among
// them CORRUPT_MESSAGE (3) and CORRUPT_RECORD (14), since the batch Fluss
// refused was built by the gateway, not by the producer, and a producer
// retry would not fix it.
var kafkaCodeForFluss = map[int32]*kafkaproto.Error{
	1:  kafkaproto.ErrNotLeaderOrFollower,     // NETWORK_EXCEPTION: reconnect, refresh, retry
	7:  kafkaproto.ErrUnknownTopicOrPartition, // TABLE_NOT_EXIST
	9:  kafkaproto.ErrKafkaStorage,            // SCHEMA_NOT_EXIST: retriable in Fluss (schema not propagated yet)
	10: kafkaproto.ErrKafkaStorage,
	11: kafkaproto.ErrKafkaStorage,
	12: kafkaproto.ErrNotLeaderOrFollower,
	13: kafkaproto.ErrMessageTooLarge,
	18: kafkaproto.ErrInvalidRequiredAcks,
	21: kafkaproto.ErrNotLeaderOrFollower, // UNKNOWN_TABLE_OR_BUCKET
	25: kafkaproto.ErrRequestTimedOut,
	26: kafkaproto.ErrKafkaStorage,
	28: kafkaproto.ErrNotEnoughReplicasAfterAppend,
	29: kafkaproto.ErrNotEnoughReplicas,
	36: kafkaproto.ErrUnknownTopicOrPartition, // PARTITION_NOT_EXISTS
	38: kafkaproto.ErrInvalidTimestamp,
	44: kafkaproto.ErrLeaderNotAvailable,
	46: kafkaproto.ErrTopicAuthorizationFailed, // the gateway's own Fluss credentials
	48: kafkaproto.ErrTopicAuthorizationFailed,
	70: kafkaproto.ErrKafkaStorage,
	72: kafkaproto.ErrKafkaStorage,
	73: kafkaproto.ErrKafkaStorage,
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
		if k, ok := kafkaCodeForFluss[fe.Code]; ok {
			return fmt.Errorf("%w: %w", k, err)
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
