package kafkaproto_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestMetadataLeaderlessTopic: a topic the backend reports leaderless has
// every partition answered LEADER_NOT_AVAILABLE with leader -1, as Kafka
// reports a partition without leader; other topics are unaffected, and the
// topic is whole again once it has a leader.
func TestMetadataLeaderlessTopic(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	ask := func() map[string][]kmsg.MetadataResponseTopicPartition {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 9
		for _, name := range []string{kafkatest.Topic, "other"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		resp := c.roundTrip(req).(*kmsg.MetadataResponse)
		out := map[string][]kmsg.MetadataResponseTopicPartition{}
		for _, tp := range resp.Topics {
			require.Zero(t, tp.ErrorCode, "the topic itself is known")
			out[*tp.Topic] = tp.Partitions
		}
		return out
	}
	env.Topics.SetLeaderless(kafkatest.Topic, true)
	got := ask()
	require.Len(t, got[kafkatest.Topic], 3)
	for _, p := range got[kafkatest.Topic] {
		assert.Equal(t, kafkaproto.ErrLeaderNotAvailable.Code, p.ErrorCode)
		assert.Equal(t, int32(-1), p.Leader)
	}
	require.Len(t, got["other"], 1)
	assert.Zero(t, got["other"][0].ErrorCode)
	assert.Equal(t, int32(0), got["other"][0].Leader)

	env.Topics.SetLeaderless(kafkatest.Topic, false)
	for _, p := range ask()[kafkatest.Topic] {
		assert.Zero(t, p.ErrorCode)
		assert.GreaterOrEqual(t, p.Leader, int32(0))
	}
}
