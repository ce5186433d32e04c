package kafkaproto_test

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func saramaCodec(c kafkaproto.Codec) sarama.CompressionCodec {
	switch c {
	case kafkaproto.CodecGzip:
		return sarama.CompressionGZIP
	case kafkaproto.CodecSnappy:
		return sarama.CompressionSnappy
	case kafkaproto.CodecLZ4:
		return sarama.CompressionLZ4
	case kafkaproto.CodecZstd:
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}

func saramaConfig(version sarama.KafkaVersion, codec kafkaproto.Codec, idempotent bool) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "sarama-test"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Compression = saramaCodec(codec)
	cfg.Producer.Retry.Max = 2
	if idempotent {
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Net.MaxOpenRequests = 1
	}
	return cfg
}

func saramaMessages(n int) []*sarama.ProducerMessage {
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:   kafkatest.Topic,
			Key:     sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:   sarama.StringEncoder(fmt.Sprintf("sarama value %d %s", i, padding)),
			Headers: []sarama.RecordHeader{{Key: []byte("n"), Value: []byte(fmt.Sprint(i))}},
		}
	}
	return msgs
}

func checkSaramaMessages(t *testing.T, env *kafkatest.Env, msgs []*sarama.ProducerMessage) {
	t.Helper()
	for _, m := range msgs {
		log := env.Sink.Records(m.Topic, m.Partition)
		require.Less(t, m.Offset, int64(len(log)))
		got := log[m.Offset]
		key, _ := m.Key.Encode()
		val, _ := m.Value.Encode()
		assert.Equal(t, key, got.Key)
		assert.Equal(t, val, got.Value)
		require.Len(t, got.Headers, 1)
		assert.Equal(t, string(m.Headers[0].Value), string(got.Headers[0].Value))
	}
}

func TestSaramaProduce(t *testing.T) {
	t.Parallel()
	type tc struct {
		name       string
		version    sarama.KafkaVersion
		codec      kafkaproto.Codec
		idempotent bool
		async      bool
	}
	var cases []tc
	for _, v := range []sarama.KafkaVersion{sarama.V1_0_0_0, sarama.V2_1_0_0, sarama.V2_8_0_0, sarama.V3_6_0_0} {
		for _, c := range kafkatest.AllCodecs {
			if c == kafkaproto.CodecZstd && !v.IsAtLeast(sarama.V2_1_0_0) {
				continue // zstd needs Produce v7
			}
			cases = append(cases, tc{name: fmt.Sprintf("sync_%s_%s", v, c), version: v, codec: c})
		}
		cases = append(cases,
			tc{name: fmt.Sprintf("async_%s", v), version: v, codec: kafkaproto.CodecSnappy, async: true},
			tc{name: fmt.Sprintf("idempotent_async_%s", v), version: v, codec: kafkaproto.CodecLZ4, idempotent: true, async: true},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{})
			cfg := saramaConfig(c.version, c.codec, c.idempotent)
			msgs := saramaMessages(30)
			if c.async {
				p, err := sarama.NewAsyncProducer([]string{env.Addr}, cfg)
				require.NoError(t, err)
				for _, m := range msgs {
					p.Input() <- m
				}
				for range msgs {
					select {
					case <-p.Successes():
					case perr := <-p.Errors():
						t.Fatalf("async produce: %v", perr.Err)
					}
				}
				require.NoError(t, p.Close())
			} else {
				p, err := sarama.NewSyncProducer([]string{env.Addr}, cfg)
				require.NoError(t, err)
				require.NoError(t, p.SendMessages(msgs))
				require.NoError(t, p.Close())
			}
			checkSaramaMessages(t, env, msgs)
			assert.Equal(t, len(msgs), env.Sink.TotalRecords())
			for _, b := range env.Sink.Batches() {
				assert.Equal(t, c.codec, b.Produce.Codec)
				if c.idempotent {
					assert.GreaterOrEqual(t, b.Produce.ProducerID, int64(1))
				}
			}
		})
	}
}

// TestSaramaOldMessageFormat: a client configured for Kafka < 0.11 sends
// Produce v2 with magic-1 message sets and gets a clear, non-retried error.
func TestSaramaOldMessageFormat(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	cfg := saramaConfig(sarama.V0_10_2_0, kafkaproto.CodecNone, false)
	p, err := sarama.NewSyncProducer([]string{env.Addr}, cfg)
	require.NoError(t, err)
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: kafkatest.Topic, Value: sarama.StringEncoder("old")})
	require.ErrorIs(t, err, sarama.ErrUnsupportedVersion)
	assert.Equal(t, 0, env.Sink.TotalRecords())
}
