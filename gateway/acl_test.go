package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// TestACLsOnTheWire: a gateway with ACLs refuses a Produce its principal
// may not Write with TOPIC_AUTHORIZATION_FAILED, and Metadata shows only
// what it may Describe.
func TestACLsOnTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: ''}
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s}
routes:
  - {topic: visible, table: db.t, value: {format: raw, column: payload}}
  - {topic: hidden, table: db.t, value: {format: raw, column: payload}}
acls: [{principal: 'User:ANONYMOUS', operation: Describe, topic: visible}]
`, cl.Bootstrap())))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	require.NoError(t, g.load(ctx)) // Run's own load then finds the routes bound
	runGateway(t, ctx, g)
	nc, err := net.Dial("tcp", g.kafkaListeners[0].Addr().String())
	require.NoError(t, err)
	defer nc.Close()

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 1
	for _, topic := range []string{"visible", "hidden"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		meta.Topics = append(meta.Topics, mt)
	}
	var resp *kmsg.MetadataResponse
	for corr := int32(1); ; corr++ { // until Run's listeners answer as ready
		resp = kafkaRoundTrip(t, nc, corr, meta).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != kafkaproto.ErrLeaderNotAvailable.Code {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("never ready")
		case <-time.After(10 * time.Millisecond):
		}
	}
	codes := map[string]int16{}
	for _, tp := range resp.Topics {
		codes[*tp.Topic] = tp.ErrorCode
	}
	assert.Equal(t, map[string]int16{"visible": 0, "hidden": kafkaproto.ErrTopicAuthorizationFailed.Code}, codes)

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 3, -1, 10000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "visible"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = testBatch(t)
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	presp := kafkaRoundTrip(t, nc, 100, req).(*kmsg.ProduceResponse)
	require.Len(t, presp.Topics, 1)
	assert.Equal(t, kafkaproto.ErrTopicAuthorizationFailed.Code, presp.Topics[0].Partitions[0].ErrorCode, "Describe does not allow Write")
}
