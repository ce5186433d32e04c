package kafkaproto_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

const refusedTxnMsg = "refused transactional producer: transactions are not served by this gateway (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)"

// A transactional producer is refused at FindCoordinator, where Java
// clients (and Flink's exactly-once sink) stop: the refusal is logged there,
// naming the transactional id, rate-limited; a group lookup is not logged.
func TestTransactionalProducerRefusalIsLogged(t *testing.T) {
	t.Parallel()
	logs := newCaptureLog()
	env := kafkatest.StartServer(t, kafkaproto.Config{}, kafkaproto.WithLogger(slog.New(logs)))
	c := dialRaw(t, env.Addr)

	group := kmsg.NewPtrFindCoordinatorRequest()
	group.Version, group.CoordinatorKeys = 4, []string{"a-group"}
	require.Equal(t, int16(30), c.roundTrip(group).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)
	assert.Empty(t, logs.withMsg(refusedTxnMsg), "a group lookup")

	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.Version, txn.CoordinatorType, txn.CoordinatorKeys = 4, 1, []string{"kafka-sink-0-1"}
	require.Equal(t, int16(53), c.roundTrip(txn).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.Version, old.CoordinatorType, old.CoordinatorKey = 3, 1, "kafka-sink-0-2"
	require.Equal(t, int16(53), c.roundTrip(old).(*kmsg.FindCoordinatorResponse).ErrorCode)

	lines := logs.withMsg(refusedTxnMsg)
	require.NotEmpty(t, lines)
	assert.Contains(t, lines[0]["transactional_ids"], "kafka-sink-0-1")
	assert.LessOrEqual(t, len(lines), 2, "one line per second at most (two if a second passed)")
}
