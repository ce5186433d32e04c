package kafkaproto_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func values(recs []kafkaproto.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

// A franz-go transactional producer, end to end through the protocol:
// records of a committed transaction reach the sink after EndTxn, an
// aborted one's never, and a second producer with the same transactional
// id fences the first.
func TestTransactionalProducerFranzGo(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartTxnServer(t, kafkaproto.Config{})
	addr := env.Addr
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("tx-1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()

	produce := func(cl *kgo.Client, prefix string, n int) {
		for i := range n {
			r := &kgo.Record{Topic: kafkatest.Topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
		}
	}
	require.NoError(t, cl.BeginTransaction())
	produce(cl, "committed", 6)
	assert.Zero(t, env.Sink.TotalRecords(), "nothing visible before the commit")
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	assert.Equal(t, 6, env.Sink.TotalRecords())
	assert.Equal(t, []string{"committed-0", "committed-3"}, values(env.Sink.Records(kafkatest.Topic, 0)))

	require.NoError(t, cl.BeginTransaction())
	produce(cl, "aborted", 3)
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort))
	assert.Equal(t, 6, env.Sink.TotalRecords(), "an aborted transaction adds nothing")

	// A new producer with the same id fences the first.
	require.NoError(t, cl.BeginTransaction())
	produce(cl, "zombie", 1)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("tx-1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl2.Close()
	require.NoError(t, cl2.BeginTransaction())
	produce(cl2, "successor", 1)
	err = cl.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "the zombie's commit")
	assert.True(t, errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch), "got %v", err)
	require.NoError(t, cl2.EndTransaction(ctx, kgo.TryCommit))
	assert.Equal(t, []string{"committed-0", "committed-3", "successor-0"}, values(env.Sink.Records(kafkatest.Topic, 0)))
	assert.Equal(t, []string{"tx-1:commit", "tx-1:abort", "tx-1:commit"}, env.Txns.Ends())
}

// The protocol's answers, request by request.
func TestTransactionRequests(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartTxnServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)

	versions := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	advertised := map[int16][2]int16{}
	for _, k := range versions.ApiKeys {
		advertised[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for _, key := range []int16{24, 25, 26} {
		assert.Equal(t, [2]int16{0, 3}, advertised[key], "key %d", key)
	}
	_, txnOffsets := advertised[28]
	assert.False(t, txnOffsets, "TxnOffsetCommit is not advertised")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType, fc.CoordinatorKeys = 4, 1, []string{"a", "b"}
	fcr := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse)
	require.Len(t, fcr.Coordinators, 2)
	for _, co := range fcr.Coordinators {
		assert.Zero(t, co.ErrorCode)
		assert.Equal(t, "127.0.0.1", co.Host)
		assert.Positive(t, co.Port)
	}
	fc3 := kmsg.NewPtrFindCoordinatorRequest()
	fc3.Version, fc3.CoordinatorType, fc3.CoordinatorKey = 3, 1, "a"
	assert.Zero(t, c.roundTrip(fc3).(*kmsg.FindCoordinatorResponse).ErrorCode)

	initReq := func(version int16, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version, r.TransactionalID, r.TransactionTimeoutMillis = version, kmsg.StringPtr("raw"), 60_000
		r.ProducerID, r.ProducerEpoch = pid, epoch
		return c.roundTrip(r).(*kmsg.InitProducerIDResponse)
	}
	first := initReq(4, -1, -1)
	require.Zero(t, first.ErrorCode)
	second := initReq(4, first.ProducerID, first.ProducerEpoch)
	require.Zero(t, second.ErrorCode)
	assert.Equal(t, first.ProducerEpoch+1, second.ProducerEpoch)
	assert.Equal(t, int16(90), initReq(4, first.ProducerID, first.ProducerEpoch).ErrorCode, "PRODUCER_FENCED on v4")
	assert.Equal(t, int16(47), initReq(3, first.ProducerID, first.ProducerEpoch).ErrorCode, "INVALID_PRODUCER_EPOCH before v4")

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, "raw", second.ProducerID, second.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: kafkatest.Topic, Partitions: []int32{0, 7}}, {Topic: "nope", Partitions: []int32{0}}}
	ar := c.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse)
	codes := map[string]int16{}
	for _, tp := range ar.Topics {
		for _, p := range tp.Partitions {
			codes[fmt.Sprintf("%s/%d", tp.Topic, p.Partition)] = p.ErrorCode
		}
	}
	assert.Equal(t, map[string]int16{kafkatest.Topic + "/0": 55, kafkatest.Topic + "/7": 3, "nope/0": 3}, codes,
		"unknown partitions fail, the others are not attempted")
	add.Topics = add.Topics[:1]
	add.Topics[0].Partitions = []int32{0}
	ar = c.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse)
	assert.Zero(t, ar.Topics[0].Partitions[0].ErrorCode)
	add.ProducerEpoch = first.ProducerEpoch
	add.Version = 1
	assert.Equal(t, int16(47), c.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode, "a fenced epoch, v1")

	offsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	offsets.TransactionalID, offsets.ProducerID, offsets.ProducerEpoch, offsets.Group = "raw", second.ProducerID, second.ProducerEpoch, "g"
	assert.Equal(t, int16(30), c.roundTrip(offsets).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, "no consumer groups")

	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, "raw", second.ProducerID, first.ProducerEpoch, true
	assert.Equal(t, int16(90), c.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode)
	end.Version = 1
	assert.Equal(t, int16(47), c.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode)
	end.ProducerEpoch = second.ProducerEpoch
	assert.Zero(t, c.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode)

	// Turned off (a reload): the keys leave ApiVersions and are refused.
	env.Txns.SetEnabled(false)
	versions = c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, k := range versions.ApiKeys {
		assert.NotContains(t, []int16{24, 25, 26}, k.ApiKey)
	}
	assert.Equal(t, int16(53), c.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode)
	assert.Equal(t, int16(53), c.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)
}
