package txn_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flussdb"
	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// TestMain stops the Fluss cluster flusstest may have started.
func TestMain(m *testing.M) { flusstest.Main(m) }

// TestLibrdkafkaTransactions: librdkafka 2.11's transactional producer
// (confluent-kafka-go) through the real gateway into real Fluss, read back
// with pyfluss: committed transactions once, an aborted one never, and a
// zombie fenced by a second producer with the same transactional id.
func TestLibrdkafkaTransactions(t *testing.T) {
	db := flussdb.New(t, "compat_txn")
	table := db.CreateTable(t, "txn_rdkafka", &fluss.TableDescriptor{Schema: fluss.Schema{Columns: []fluss.Column{
		{Name: "producer", Type: fluss.String()}, {Name: "seq", Type: fluss.BigInt()},
	}}, BucketCount: 3})
	topic := flussdb.UniqueName("txn-rdkafka")
	bin, err := gatewaytest.Binary(true)
	require.NoError(t, err)
	g := gatewaytest.StartTest(t, bin, gatewaytest.Config{
		Bootstrap: db.Bootstrap, RequestTimeout: "30s", DialTimeout: "10s", Linger: "20ms",
		DeliveryTimeout: "1m", LogLevel: "info", Deadline: "30s",
		Routes: fmt.Sprintf("  - topic: %s\n    table: %s\n", topic, table),
	})
	ctx := flussdb.Context(t)
	id := flussdb.UniqueName("rdkafka")
	newProducer := func() *ckafka.Producer {
		p, err := ckafka.NewProducer(&ckafka.ConfigMap{
			"bootstrap.servers": g.KafkaAddr, "transactional.id": id, "linger.ms": 5,
			"transaction.timeout.ms": 120000, "message.timeout.ms": 120000,
		})
		require.NoError(t, err)
		t.Cleanup(p.Close)
		require.NoError(t, p.InitTransactions(ctx))
		return p
	}
	send := func(p *ckafka.Producer, from, to int) {
		reports := make(chan ckafka.Event, to-from)
		for i := from; i < to; i++ {
			require.NoError(t, p.Produce(&ckafka.Message{
				TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
				Value:          fmt.Appendf(nil, `{"producer": "rdkafka", "seq": %d}`, i),
			}, reports))
		}
		timeout := time.After(2 * time.Minute)
		for range to - from {
			select {
			case ev := <-reports:
				m := ev.(*ckafka.Message)
				require.NoError(t, m.TopicPartition.Error)
			case <-timeout:
				t.Fatal("delivery reports missing")
			}
		}
	}
	round := func(p *ckafka.Producer, from, to int, commit bool) {
		require.NoError(t, p.BeginTransaction())
		send(p, from, to)
		if commit {
			require.NoError(t, p.CommitTransaction(ctx))
		} else {
			require.NoError(t, p.AbortTransaction(ctx))
		}
	}
	p := newProducer()
	round(p, 0, 100, true)
	round(p, 100, 150, false)
	round(p, 150, 200, true)
	require.NoError(t, p.BeginTransaction())
	send(p, 200, 210)
	successor := newProducer()
	require.Error(t, p.CommitTransaction(ctx), "the fenced producer's commit")
	round(successor, 210, 220, true)

	got := map[int64]int{}
	for _, r := range db.ScanLog(t, table) {
		var seq int64
		require.NoError(t, json.Unmarshal(r.Row["seq"], &seq))
		got[seq]++
	}
	want := map[int64]int{}
	for _, r := range [][2]int{{0, 100}, {150, 200}, {210, 220}} {
		for i := r[0]; i < r[1]; i++ {
			want[int64(i)] = 1
		}
	}
	assert.Equal(t, want, got, "committed rows once each, none of the aborted (100-149) or fenced (200-209) transactions")
}
