package kafkaproto_test

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func TestSASLSarama(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	for _, tc := range []struct {
		name    string
		version int16
	}{{"handshake_v0", sarama.SASLHandshakeV0}, {"handshake_v1", sarama.SASLHandshakeV1}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := saramaConfig(sarama.V2_8_0_0, kafkaproto.CodecNone, false)
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", "s3cret"
			cfg.Net.SASL.Version = tc.version
			cfg.ApiVersionsRequest = tc.version != sarama.SASLHandshakeV0 // sarama's rule for v0
			p, err := sarama.NewSyncProducer([]string{env.Addr}, cfg)
			require.NoError(t, err)
			defer p.Close()
			_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: kafkatest.Topic, Value: sarama.StringEncoder(tc.name)})
			require.NoError(t, err)
		})
	}
	assert.Equal(t, 2, env.Sink.TotalRecords())
}
