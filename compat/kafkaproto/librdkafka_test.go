package kafkaproto_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestConfluentKafkaGo drives librdkafka 2.11 (bundled by confluent-kafka-go).
func TestConfluentKafkaGo(t *testing.T) {
	t.Parallel()
	type tc struct {
		name       string
		codec      kafkaproto.Codec
		idempotent bool
		acks       string
	}
	var cases []tc
	for _, c := range kafkatest.AllCodecs {
		cases = append(cases, tc{name: c.String(), codec: c, acks: "all"})
	}
	cases = append(cases,
		tc{name: "idempotent_zstd", codec: kafkaproto.CodecZstd, idempotent: true, acks: "all"},
		tc{name: "acks_1_lz4", codec: kafkaproto.CodecLZ4, acks: "1"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{})
			p, err := ckafka.NewProducer(&ckafka.ConfigMap{
				"bootstrap.servers":  env.Addr,
				"compression.codec":  c.codec.String(),
				"enable.idempotence": c.idempotent,
				"acks":               c.acks,
				"linger.ms":          5,
				"message.timeout.ms": 20000,
			})
			require.NoError(t, err)
			defer p.Close()
			topic := kafkatest.Topic
			const n = 40
			deliveries := make(chan ckafka.Event, n)
			for i := range n {
				require.NoError(t, p.Produce(&ckafka.Message{
					TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
					Key:            []byte(fmt.Sprintf("k%d", i)),
					Value:          []byte(fmt.Sprintf("librdkafka value %d %s", i, padding)),
					Headers:        []ckafka.Header{{Key: "i", Value: []byte(fmt.Sprint(i))}},
				}, deliveries))
			}
			ctx := kafkatest.Context(t)
			for range n {
				select {
				case ev := <-deliveries:
					m := ev.(*ckafka.Message)
					require.NoError(t, m.TopicPartition.Error)
					log := env.Sink.Records(topic, m.TopicPartition.Partition)
					off := int64(m.TopicPartition.Offset)
					require.Less(t, off, int64(len(log)))
					assert.Equal(t, m.Value, log[off].Value)
					assert.Equal(t, m.Key, log[off].Key)
				case <-ctx.Done():
					t.Fatal("timed out waiting for delivery reports")
				}
			}
			assert.Equal(t, n, env.Sink.TotalRecords())
			for _, b := range env.Sink.Batches() {
				assert.Equal(t, c.codec, b.Produce.Codec, "librdkafka must compress with the requested codec")
				assert.Equal(t, c.idempotent, b.Produce.ProducerID >= 0)
			}
		})
	}
}

// TestKcat drives Debian's kcat (librdkafka 2.0.2, the old feature gating).
func TestKcat(t *testing.T) {
	t.Parallel()
	kcat := kafkatest.RequireKcat(t)
	type tc struct {
		name       string
		codec      kafkaproto.Codec
		idempotent bool
	}
	var cases []tc
	for _, c := range kafkatest.AllCodecs {
		cases = append(cases, tc{name: c.String(), codec: c})
	}
	cases = append(cases, tc{name: "idempotent_gzip", codec: kafkaproto.CodecGzip, idempotent: true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{})
			const n = 30
			var in bytes.Buffer
			for i := range n {
				fmt.Fprintf(&in, "k%d:kcat value %d %s\n", i, i, padding)
			}
			cmd := exec.CommandContext(kafkatest.Context(t), kcat, "-P", "-b", env.Addr, "-t", kafkatest.Topic, "-K", ":",
				"-z", c.codec.String(), "-X", fmt.Sprintf("enable.idempotence=%t", c.idempotent), "-X", "linger.ms=5")
			cmd.Stdin = &in
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "kcat output: %s", out)
			assert.NotContains(t, string(out), "failed")
			env.WaitRecords(t, n)
			values := map[string]string{}
			for p := int32(0); p < 3; p++ {
				for _, r := range env.Sink.Records(kafkatest.Topic, p) {
					values[string(r.Key)] = string(r.Value)
				}
			}
			for i := range n {
				assert.Equal(t, fmt.Sprintf("kcat value %d %s", i, padding), values[fmt.Sprintf("k%d", i)])
			}
			for _, b := range env.Sink.Batches() {
				assert.Equal(t, c.codec, b.Produce.Codec, "kcat must compress with %s", c.codec)
				assert.Equal(t, c.idempotent, b.Produce.ProducerID >= 0)
			}
		})
	}
}

// TestKcatMetadata lists topics with kcat -L (Metadata v4 from librdkafka 2.0.2).
func TestKcatMetadata(t *testing.T) {
	t.Parallel()
	kcat := kafkatest.RequireKcat(t)
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	out, err := exec.CommandContext(kafkatest.Context(t), kcat, "-L", "-b", env.Addr).CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)
	assert.Contains(t, s, `topic "events" with 3 partitions`)
	assert.Contains(t, s, `topic "other" with 1 partitions`)
	assert.True(t, strings.Contains(s, "1 brokers"), s)
}
