package kafkaproto_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func TestProduceRefusals(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxMessageBytes: 4096})
	good := batch(-1, 0, -1, 2)
	big := kafkaproto.TestBatch{ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{{Value: make([]byte, 5000)}}}.Build()
	withAttr := func(attr int16) []byte {
		return kafkaproto.TestBatch{ProducerID: 1, BaseSequence: 0, Attributes: attr, Records: kafkaproto.SimpleRecords(1)}.Build()
	}
	badCRC := batch(-1, 0, -1, 2)
	badCRC[len(badCRC)-2] ^= 0x55
	magic1 := batch(-1, 0, -1, 1)
	magic1[16] = 1
	for _, tc := range []struct {
		name      string
		req       *kmsg.ProduceRequest
		want      int16
		msgSubstr string
	}{
		{"produce v2", produceRequest(2, 1, kafkatest.Topic, 0, good), 35, ""},
		{"produce v0", produceRequest(0, -1, kafkatest.Topic, 0, good), 35, ""},
		{"transactional id", func() *kmsg.ProduceRequest {
			r := produceRequest(9, -1, kafkatest.Topic, 0, good)
			r.TransactionID = kmsg.StringPtr("txn")
			return r
		}(), 53, "transactions"},
		{"acks 2", produceRequest(9, 2, kafkatest.Topic, 0, good), 21, ""},
		{"unknown topic", produceRequest(9, 1, "nope", 0, good), 3, ""},
		{"partition out of range", produceRequest(9, 1, kafkatest.Topic, 3, good), 3, ""},
		{"negative partition", produceRequest(9, 1, kafkatest.Topic, -1, good), 3, ""},
		{"bad crc", produceRequest(9, 1, kafkatest.Topic, 0, badCRC), 2, "crc"},
		{"magic 1", produceRequest(9, 1, kafkatest.Topic, 0, magic1), 87, "magic"},
		{"two batches", produceRequest(9, 1, kafkatest.Topic, 0, append(append([]byte{}, good...), good...)), 87, "exactly one"},
		{"no records", produceRequest(9, 1, kafkatest.Topic, 0, nil), 87, ""},
		{"too large", produceRequest(9, 1, kafkatest.Topic, 0, big), 10, ""},
		{"transactional batch", produceRequest(9, 1, kafkatest.Topic, 0, withAttr(0x10)), 53, ""},
		{"control batch", produceRequest(9, 1, kafkatest.Topic, 0, withAttr(0x20)), 87, "control"},
		{"log append time", produceRequest(9, 1, kafkatest.Topic, 0, withAttr(0x08)), 32, ""},
		{"zstd on v6", produceRequest(6, 1, kafkatest.Topic, 0, kafkaproto.TestBatch{ProducerID: -1, BaseSequence: -1,
			Codec: kafkaproto.CodecZstd, Records: kafkaproto.SimpleRecords(1)}.Build()), 76, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, env.Addr)
			p := onlyPartition(t, c.roundTrip(tc.req))
			assert.Equal(t, tc.want, p.ErrorCode)
			assert.Equal(t, int64(-1), p.BaseOffset)
			if tc.msgSubstr != "" {
				require.NotNil(t, p.ErrorMessage)
				assert.Contains(t, *p.ErrorMessage, tc.msgSubstr)
			}
		})
	}
	assert.Equal(t, 0, env.Sink.TotalRecords())
}

func TestProduceRecordErrors(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	env.Sink.Reject = func(p *kafkaproto.PartitionProduce) error {
		var re kafkaproto.RecordsError
		for _, r := range p.Records {
			if r.Value == nil {
				re.Records = append(re.Records, kafkaproto.RecordError{Index: r.Index, Message: "tombstones are not allowed for this table"})
			}
		}
		if len(re.Records) > 0 {
			return &re
		}
		return nil
	}
	recs := kafkaproto.SimpleRecords(4)
	recs[2].Value = nil
	b := kafkaproto.TestBatch{ProducerID: -1, BaseSequence: -1, Records: recs}.Build()
	c := dialRaw(t, env.Addr)
	p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, b)))
	assert.Equal(t, int16(87), p.ErrorCode)
	require.Len(t, p.ErrorRecords, 1)
	assert.Equal(t, int32(2), p.ErrorRecords[0].RelativeOffset)
	require.NotNil(t, p.ErrorRecords[0].ErrorMessage)
	assert.Contains(t, *p.ErrorRecords[0].ErrorMessage, "tombstones")
	require.NotNil(t, p.ErrorMessage)

	// v7 has no record_errors: the code alone.
	p = onlyPartition(t, c.roundTrip(produceRequest(7, -1, kafkatest.Topic, 0, b)))
	assert.Equal(t, int16(87), p.ErrorCode)
	assert.Empty(t, p.ErrorRecords)
}

func TestProduceTimeout(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	env.Sink.Hold()
	c := dialRaw(t, env.Addr)
	req := produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 1))
	req.TimeoutMillis = 50
	p := onlyPartition(t, c.roundTrip(req))
	assert.Equal(t, int16(7), p.ErrorCode)
	env.Sink.Release(nil)
}

// TestProduceMultiPartitionOrder: one request with several topics and
// partitions; each partition gets its own result, in request order.
func TestProduceMultiPartition(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	req := produceRequest(11, 1, kafkatest.Topic, 0, batch(-1, 0, -1, 2))
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = 2
	p.Records = batch(-1, 0, -1, 3)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	other := kmsg.NewProduceRequestTopic()
	other.Topic = "missing"
	other.Partitions = []kmsg.ProduceRequestTopicPartition{p}
	req.Topics = append(req.Topics, other)
	resp := dialRaw(t, env.Addr).roundTrip(req).(*kmsg.ProduceResponse)
	require.Len(t, resp.Topics, 2)
	require.Len(t, resp.Topics[0].Partitions, 2)
	assert.Equal(t, int32(0), resp.Topics[0].Partitions[0].Partition)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, int32(2), resp.Topics[0].Partitions[1].Partition)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[1].ErrorCode)
	assert.Equal(t, int16(3), resp.Topics[1].Partitions[0].ErrorCode)
	assert.Len(t, env.Sink.Records(kafkatest.Topic, 2), 3)
}

// TestProduceAcksZeroFailureCloses: no response for acks=0; a failed
// partition closes the connection so the client notices.
func TestProduceAcksZeroFailureCloses(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	c.send(produceRequest(9, 0, kafkatest.Topic, 0, batch(-1, 0, -1, 2)))
	// The next response on the wire must be the ApiVersions one: nothing
	// was written for the acks=0 request.
	req := kmsg.NewPtrApiVersionsRequest()
	resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	assert.Equal(t, int16(0), resp.ErrorCode)
	env.WaitRecords(t, 2)

	c.send(produceRequest(9, 0, "missing", 0, batch(-1, 0, -1, 1)))
	c.expectClosed()
	checkAlive(t, env.Addr)
}
