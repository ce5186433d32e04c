package e2e

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRecord is one record of a hand-built batch.
type rawRecord struct {
	key, value []byte // nil = null
}

// recordBatch builds an uncompressed, non-idempotent v2 record batch, so a
// test can send a Produce request of exactly its choosing.
func recordBatch(ts time.Time, recs ...rawRecord) []byte {
	var body []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		enc := rec.AppendTo(nil) // Length 0 encodes as one byte
		body = kbin.AppendVarint(body, int32(len(enc)-1))
		body = append(body, enc[1:]...)
	}
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  ts.UnixMilli(),
		MaxTimestamp:    ts.UnixMilli(),
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
		Records:         body,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:21], crc)
	return out
}

// produceRaw sends one Produce request (acks=all) with the batch to
// topic/partition and returns the partition's response.
func produceRaw(t *testing.T, addr, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// metadataError returns the topic error code of a Metadata request for topic.
func metadataError(t *testing.T, addr, topic string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0].ErrorCode
}
