package kafkaproto

import (
	"context"
	"net"
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type oneTopic struct{}

func (oneTopic) Topic(string) (int32, bool) { return 1, true }
func (oneTopic) AllTopics() []TopicInfo     { return nil }

type doneSink struct{}

func (doneSink) Produce(context.Context, *PartitionProduce) (PartitionWrite, error) {
	return Completed(PartitionResult{BaseOffset: 0, LogAppendTime: -1, LogStartOffset: -1}), nil
}

type fixedIDs struct{}

func (fixedIDs) NextProducerID(context.Context) (int64, error) { return 7, nil }

// TestProducerStateDoesNotPinRequestFrame: the idempotence state outlives
// the request by up to ProducerStateTTL; its key must not alias the request
// frame (parsed without copying), or every (producer id, partition) would
// keep its first request's frame, up to MaxFrameBytes, in memory.
func TestProducerStateDoesNotPinRequestFrame(t *testing.T) {
	t.Parallel()
	s, err := New(Config{}, struct {
		oneTopic
		doneSink
		fixedIDs
	}{}, WithRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	defer s.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(s, a)

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 1000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "pinned-topic"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = TestBatch{ProducerID: 7, BaseSequence: 0, Records: SimpleRecords(1)}.Build()
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:]

	r, closeConn := c.handleFrame(frame)
	require.False(t, closeConn)
	require.NotNil(t, r)
	require.NotNil(t, r.produce)

	lo, hi := uintptr(unsafe.Pointer(&frame[0])), uintptr(unsafe.Pointer(&frame[len(frame)-1]))
	s.states.mu.Lock()
	defer s.states.mu.Unlock()
	require.Len(t, s.states.m, 1)
	for key, el := range s.states.m {
		for _, topic := range []string{key.topic, el.Value.(*partitionState).key.topic} {
			require.Equal(t, "pinned-topic", topic)
			ptr := uintptr(unsafe.Pointer(unsafe.StringData(topic)))
			require.False(t, ptr >= lo && ptr <= hi, "producer state key aliases the request frame")
		}
	}
}

// TestDecodedRecordsBounded: NumRecords is client input; decoding allocates
// a Record (88 bytes) per record, over ten times a minimal record's wire
// size, so a small compressed batch of many empty records must not turn
// into memory far beyond MaxDecompressedBytes.
func TestDecodedRecordsBounded(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	d, err := newBatchDecoder(limit, nil)
	require.NoError(t, err)
	defer d.close()
	records := make([]Record, 110_000) // ~1 MB of 8-9 byte records, ~10 MB decoded
	for _, codec := range []Codec{CodecNone, CodecZstd} {
		data := TestBatch{ProducerID: -1, BaseSequence: -1, Codec: codec, Records: records}.Build()
		_, err := d.decode(data, 9)
		require.ErrorIs(t, err, ErrMessageTooLarge, "codec %s", codec)
	}
	// A batch whose records fit is decoded.
	b, err := d.decode(TestBatch{ProducerID: -1, BaseSequence: -1, Codec: CodecZstd, Records: records[:1000]}.Build(), 9)
	require.NoError(t, err)
	require.Len(t, b.Records, 1000)
}
