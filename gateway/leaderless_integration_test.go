package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// Integration, on a real Fluss with two tablet servers: when the only
// replica of one table's bucket goes away (its tablet server stops), that
// table's topic alone is affected. Its partition shows LEADER_NOT_AVAILABLE
// with leader -1 in Metadata once the gateway has looked for a leader for
// writer.leader_wait, and the producer keeps its record (as it would for a
// Kafka partition without leader), while the other table's topic, on the
// other server, keeps taking records; once the server is back the held
// record is written, once. Row counts are read back with ListOffsets.
//
// The routes turn exactly once off: on an exactly-once route every batch
// also commits to the producer-state table, whose buckets (replication
// factor 1 here) are spread over both servers, so the stop would stall
// the producer-partitions whose state rows live on the stopped server, on
// every route (docs/deployment.md, the producer-state table).
//
// The held record is acknowledged as soon as the server is back (within a
// second in the gateway's log); what takes minutes is the server's restart
// itself (3m27s: start-tablet waits until the coordinator knows the server
// again).
func TestIntegrationLeaderlessTableAffectsOnlyItsTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private cluster")
	}
	cl := flusstest.StartCluster(t, flusstest.TabletServers(2))
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: []string{cl.Bootstrap()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.WaitForTabletServers(ctx, 2))
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	db := "leaderless_it_" + hex.EncodeToString(rb[:])
	require.NoError(t, c.CreateDatabase(ctx, db, false))

	// One single-bucket, one-replica table led by each server.
	desc := &fluss.TableDescriptor{
		Schema:      fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}},
		BucketCount: 1,
		Properties:  map[string]string{fluss.PropReplicationFactor: "1"},
	}
	ledBy := map[int32]*fluss.TableInfo{}
	for i := 0; len(ledBy) < 2; i++ {
		require.Less(t, i, 20, "20 tables and both not led by different servers")
		path := fluss.TablePath{Database: db, Table: fmt.Sprintf("t%d", i)}
		require.NoError(t, c.CreateTableReady(ctx, path, desc, 10))
		require.NoError(t, c.WaitForTableLeaders(ctx, path))
		info, err := c.TableInfo(ctx, path)
		require.NoError(t, err)
		leader, err := c.BucketLeader(ctx, info.TableID, fluss.NoPartition, 0)
		require.NoError(t, err)
		if ledBy[leader.ID] == nil {
			ledBy[leader.ID] = info
		}
	}
	lost, kept := ledBy[1], ledBy[0] // server 1 stops

	cfg, err := configs.Parse(fmt.Appendf(nil, `
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: '127.0.0.1:0'}
fluss: {bootstrap: ['%s']}
writer: {linger: 5ms, leader_wait: 3s, delivery_timeout: 5m}
routes:
  - {topic: lost, table: %s, value: {format: raw, column: payload}, exactly_once: false}
  - {topic: kept, table: %s, value: {format: raw, column: payload}, exactly_once: false}
`, cl.Bootstrap(), lost.Path, kept.Path))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)
	addr := g.kafkaListeners[0].Addr().String()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer producer.Close()
	produce := func(topic string) error {
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return producer.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr()
	}
	require.NoError(t, produce("lost"))
	require.NoError(t, produce("kept"))

	require.NoError(t, cl.StopTabletServer(ctx, 1))
	t.Log("tablet server 1 stopped")

	// A record for the leaderless table. The gateway's Metadata then
	// reports the partition without leader (once the sender has looked for
	// one for leader_wait), and the producer keeps the record until the
	// partition has a leader again, as with a Kafka broker.
	lostStart := time.Now()
	lostErr := make(chan error, 1)
	go func() {
		pctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
		defer cancel()
		lostErr <- producer.ProduceSync(pctx, &kgo.Record{Topic: "lost", Value: []byte("lost")}).FirstErr()
	}()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		req := kmsg.NewPtrMetadataRequest()
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr("lost")
		req.Topics = append(req.Topics, topic)
		resp, err := req.RequestWith(ctx, producer)
		if !assert.NoError(ct, err) || !assert.Len(ct, resp.Topics, 1) || !assert.Len(ct, resp.Topics[0].Partitions, 1) {
			return
		}
		p := resp.Topics[0].Partitions[0]
		assert.Equal(ct, kerr.LeaderNotAvailable.Code, p.ErrorCode, "partition error")
		assert.Equal(ct, int32(-1), p.Leader, "leader")
	}, 2*time.Minute, 100*time.Millisecond, "Metadata never reported topic lost's partition as leaderless")
	t.Logf("Metadata reports topic lost leaderless %v after the stop", time.Since(lostStart).Round(time.Millisecond))

	// The other table's topic goes on meanwhile.
	keptAcked := 0
	for range 20 {
		require.NoError(t, produce("kept"), "the other table's topic while one table has no leader")
		keptAcked++
	}
	select {
	case err := <-lostErr:
		t.Fatalf("the leaderless topic's record completed (%v) while its table had no leader", err)
	default:
	}

	require.NoError(t, cl.StartTabletServer(ctx, 1))
	t.Log("tablet server 1 started again")
	require.NoError(t, <-lostErr, "the record held while its table had no leader")
	t.Logf("the leaderless topic's record acknowledged %v after it was produced", time.Since(lostStart).Round(time.Millisecond))
	require.NoError(t, produce("lost"))

	// Read back: the kept table has its 1 + 20 records, the lost table its
	// three, each once.
	offsets := func(info *fluss.TableInfo) int64 {
		var got int64
		require.Eventually(t, func() bool {
			m, err := c.ListOffsets(ctx, info.TableID, fluss.NoPartition, []int32{0}, fluss.LatestOffset)
			if err != nil {
				c.InvalidateTableMetadata(info.TableID)
				return false
			}
			got = m[0]
			return true
		}, time.Minute, 100*time.Millisecond)
		return got
	}
	assert.Equal(t, int64(1+keptAcked), offsets(kept))
	assert.Equal(t, int64(3), offsets(lost))
}
