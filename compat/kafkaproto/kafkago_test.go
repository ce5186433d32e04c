package kafkaproto_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func kafkaGoCodec(c kafkaproto.Codec) kafka.Compression {
	switch c {
	case kafkaproto.CodecGzip:
		return kafka.Gzip
	case kafkaproto.CodecSnappy:
		return kafka.Snappy
	case kafkaproto.CodecLZ4:
		return kafka.Lz4
	case kafkaproto.CodecZstd:
		return kafka.Zstd
	}
	return 0
}

func TestKafkaGoWriter(t *testing.T) {
	t.Parallel()
	type tc struct {
		name  string
		acks  kafka.RequiredAcks
		codec kafkaproto.Codec
	}
	var cases []tc
	for _, c := range kafkatest.AllCodecs {
		cases = append(cases, tc{name: "acks_none_default_" + c.String(), acks: kafka.RequireNone, codec: c})
	}
	cases = append(cases,
		tc{name: "acks_one_gzip", acks: kafka.RequireOne, codec: kafkaproto.CodecGzip},
		tc{name: "acks_all_zstd", acks: kafka.RequireAll, codec: kafkaproto.CodecZstd},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{})
			tr := &kafka.Transport{}
			defer tr.CloseIdleConnections()
			w := &kafka.Writer{
				Addr:         kafka.TCP(env.Addr),
				Topic:        kafkatest.Topic,
				Balancer:     &kafka.Hash{},
				RequiredAcks: c.acks,
				Compression:  kafkaGoCodec(c.codec),
				BatchTimeout: 5 * time.Millisecond,
				Transport:    tr,
			}
			msgs := make([]kafka.Message, 25)
			for i := range msgs {
				msgs[i] = kafka.Message{
					Key:     []byte(fmt.Sprintf("k%d", i)),
					Value:   []byte(fmt.Sprintf("kafka-go %d %s", i, padding)),
					Headers: []kafka.Header{{Key: "i", Value: []byte(fmt.Sprint(i))}},
				}
			}
			require.NoError(t, w.WriteMessages(kafkatest.Context(t), msgs...))
			require.NoError(t, w.Close())
			env.WaitRecords(t, len(msgs))
			seen := map[string]bool{}
			for p := int32(0); p < 3; p++ {
				for _, r := range env.Sink.Records(kafkatest.Topic, p) {
					seen[string(r.Value)] = true
					require.Len(t, r.Headers, 1)
				}
			}
			for _, m := range msgs {
				assert.True(t, seen[string(m.Value)], "missing %q", m.Value)
			}
			for _, b := range env.Sink.Batches() {
				assert.Equal(t, c.codec, b.Produce.Codec)
				assert.Equal(t, int16(c.acks), b.Produce.Acks)
			}
		})
	}
}
