package kafkaproto_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func kgoCodec(c kafkaproto.Codec) kgo.CompressionCodec {
	switch c {
	case kafkaproto.CodecGzip:
		return kgo.GzipCompression()
	case kafkaproto.CodecSnappy:
		return kgo.SnappyCompression()
	case kafkaproto.CodecLZ4:
		return kgo.Lz4Compression()
	case kafkaproto.CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func testRecords(n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	ts := time.UnixMilli(1_700_000_000_000)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic:     kafkatest.Topic,
			Key:       []byte(fmt.Sprintf("key-%d", i%7)),
			Value:     []byte(fmt.Sprintf("value-%d-%s", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}},
			Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return recs
}

// checkKgoResults asserts that every acknowledged record sits in the sink at
// the partition and offset the client was told.
func checkKgoResults(t *testing.T, sink *kafkatest.Sink, recs []*kgo.Record) {
	t.Helper()
	for _, r := range recs {
		log := sink.Records(r.Topic, r.Partition)
		require.Less(t, r.Offset, int64(len(log)), "offset of %q", r.Value)
		got := log[r.Offset]
		assert.Equal(t, r.Key, got.Key)
		assert.Equal(t, r.Value, got.Value)
		assert.Equal(t, r.Timestamp.UnixMilli(), got.Timestamp)
		require.Len(t, got.Headers, 1)
		assert.Equal(t, r.Headers[0].Key, got.Headers[0].Key)
		assert.Equal(t, r.Headers[0].Value, got.Headers[0].Value)
	}
}

func TestKgoProduce(t *testing.T) {
	t.Parallel()
	type tc struct {
		name      string
		opts      []kgo.Opt
		codec     kafkaproto.Codec
		idempoent bool
	}
	var cases []tc
	for _, c := range kafkatest.AllCodecs {
		cases = append(cases, tc{name: "defaults_idempotent_acks_all_" + c.String(), codec: c, idempoent: true,
			opts: []kgo.Opt{kgo.ProducerBatchCompression(kgoCodec(c))}})
	}
	cases = append(cases,
		tc{name: "acks_1", codec: kafkaproto.CodecSnappy, opts: []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		tc{name: "acks_all_not_idempotent", codec: kafkaproto.CodecLZ4, opts: []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{})
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.Addr)}, c.opts...)...)
			require.NoError(t, err)
			defer cl.Close()
			recs := testRecords(60)
			require.NoError(t, cl.ProduceSync(kafkatest.Context(t), recs...).FirstErr())
			checkKgoResults(t, env.Sink, recs)
			assert.Equal(t, len(recs), env.Sink.TotalRecords())
			batches := env.Sink.Batches()
			require.NotEmpty(t, batches)
			for _, b := range batches {
				assert.Equal(t, c.codec, b.Produce.Codec)
				if c.idempoent {
					assert.GreaterOrEqual(t, b.Produce.ProducerID, int64(1))
				} else {
					assert.Equal(t, int64(-1), b.Produce.ProducerID)
				}
			}
		})
	}
}

func TestKgoAcksZero(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	defer cl.Close()
	recs := testRecords(40)
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), recs...).FirstErr())
	env.WaitRecords(t, len(recs))
	// The connection stays usable: a second round also arrives.
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), testRecords(10)...).FirstErr())
	env.WaitRecords(t, len(recs)+10)
}

func TestKgoUnknownTopic(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.RecordDeliveryTimeout(time.Second))
	require.NoError(t, err)
	defer cl.Close()
	err = cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: "missing", Value: []byte("x")}).FirstErr()
	require.Error(t, err)
	assert.Equal(t, 0, env.Sink.TotalRecords())
}

// TestKgoIdempotentRetryAfterSinkFailure: writes failing with a retriable
// error are retried by kgo with the same sequence and land exactly once.
func TestKgoIdempotentRetryAfterSinkFailure(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	env.Sink.FailNext(2, kafkaproto.ErrNotEnoughReplicas)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.MaxProduceRequestsInflightPerBroker(1), kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "other", Value: []byte(fmt.Sprint(i))})
	}
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), recs...).FirstErr())
	log := env.Sink.Records("other", 0)
	require.Len(t, log, 30)
	for i, r := range log {
		assert.Equal(t, fmt.Sprint(i), string(r.Value), "exactly once, in order")
	}
	assert.GreaterOrEqual(t, env.MetricValue(t, "fluss_gateway_kafka_produce_partition_errors_total"), 2.0)
}
