package gateway

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/writer"
)

func TestKafkaErrorForEveryFlussCode(t *testing.T) {
	// The classes a producer must see; every other code is UNKNOWN_SERVER_ERROR.
	want := map[int32]*kafkaproto.Error{
		1:  kafkaproto.ErrNotLeaderOrFollower,
		7:  kafkaproto.ErrUnknownTopicOrPartition,
		9:  kafkaproto.ErrKafkaStorage,
		10: kafkaproto.ErrKafkaStorage,
		11: kafkaproto.ErrKafkaStorage,
		12: kafkaproto.ErrNotLeaderOrFollower,
		13: kafkaproto.ErrMessageTooLarge,
		18: kafkaproto.ErrInvalidRequiredAcks,
		21: kafkaproto.ErrNotLeaderOrFollower,
		25: kafkaproto.ErrRequestTimedOut,
		26: kafkaproto.ErrKafkaStorage,
		28: kafkaproto.ErrNotEnoughReplicasAfterAppend,
		29: kafkaproto.ErrNotEnoughReplicas,
		36: kafkaproto.ErrUnknownTopicOrPartition,
		38: kafkaproto.ErrInvalidTimestamp,
		44: kafkaproto.ErrLeaderNotAvailable,
		46: kafkaproto.ErrTopicAuthorizationFailed,
		48: kafkaproto.ErrTopicAuthorizationFailed,
		70: kafkaproto.ErrKafkaStorage,
		72: kafkaproto.ErrKafkaStorage,
		73: kafkaproto.ErrKafkaStorage,
	}
	for code := int32(-1); code <= 73; code++ {
		if code == 0 {
			continue
		}
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			ferr := fluss.ErrorForCode(code, "from the server")
			require.Error(t, ferr)
			got := kafkaError(fmt.Errorf("produce_log to tablet server 1: %w", ferr))
			expected := want[code]
			if expected == nil {
				expected = kafkaproto.ErrUnknownServerError
			}
			assert.ErrorIs(t, got, expected)
			assert.ErrorIs(t, got, ferr, "the Fluss error stays in the chain for the message")
		})
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
		{"delivery timeout", writer.ErrDeliveryTimeout, kafkaproto.ErrRequestTimedOut},
		{"buffer full", writer.ErrBufferFull, kafkaproto.ErrRequestTimedOut},
		{"fluss request timeout", fluss.ErrRequestTimeout, kafkaproto.ErrRequestTimedOut},
		{"record too large", writer.ErrRecordTooLarge, kafkaproto.ErrMessageTooLarge},
		{"connection closed", fluss.ErrConnectionClosed, kafkaproto.ErrNotLeaderOrFollower},
		{"no leader", fluss.ErrNoLeader, kafkaproto.ErrNotLeaderOrFollower},
		{"shutting down", writer.ErrStopped, kafkaproto.ErrNotLeaderOrFollower},
		{"kafka error passes", kafkaproto.ErrInvalidRecord, kafkaproto.ErrInvalidRecord},
		{"records error passes", &kafkaproto.RecordsError{Records: []kafkaproto.RecordError{{Index: 1, Message: "bad"}}}, kafkaproto.ErrInvalidRecord},
		{"anything else", errors.New("boom"), kafkaproto.ErrUnknownServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kafkaError(tt.err)
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
