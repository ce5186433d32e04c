package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// TestMain stops the cluster flusstest.Bootstrap may start for this binary.
func TestMain(m *testing.M) { flusstest.Main(m) }

func TestKafkaConfigFromFile(t *testing.T) {
	cfg, err := configs.Parse([]byte(`
fluss: {bootstrap: ['127.0.0.1:9123']}
kafka:
  cluster_id: prod-gw
  max_message_bytes: 2MiB
  max_request_bytes: 16MiB
  max_in_flight_requests: 4
  idle_timeout: 1m
  producer_state_ttl: 30m
  max_producer_states: 10
listeners:
  - name: sasl
    bind: 127.0.0.1:0
    advertised: gw.example.com:9094
    sasl: {mechanisms: [SCRAM-SHA-512], users: [{username: u, password: p}]}
`))
	require.NoError(t, err)
	kc, err := kafkaConfig(cfg, cfg.Listeners[0])
	require.NoError(t, err)
	assert.Equal(t, "prod-gw", kc.ClusterID)
	assert.Equal(t, 2<<20, kc.MaxMessageBytes)
	assert.Equal(t, 16<<20, kc.MaxFrameBytes)
	assert.Equal(t, 4, kc.MaxInFlightRequests)
	assert.Equal(t, time.Minute, kc.IdleTimeout)
	assert.Equal(t, 30*time.Minute, kc.ProducerStateTTL)
	assert.Equal(t, 10, kc.MaxProducerStates)
	assert.Equal(t, "gw.example.com", kc.AdvertisedHost)
	assert.Equal(t, int32(9094), kc.AdvertisedPort)
	require.NotNil(t, kc.SASL)
	assert.Equal(t, []string{"SCRAM-SHA-512"}, kc.SASL.Mechanisms)
	require.Len(t, kc.SASL.Users, 1)
	assert.Equal(t, "u", kc.SASL.Users[0].Name)
	assert.NoError(t, kc.Validate(), "the file's limits are valid for the Kafka server")
}
