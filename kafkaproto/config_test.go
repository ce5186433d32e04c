package kafkaproto_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

func TestConfigReadLimits(t *testing.T) {
	t.Parallel()
	d := kafkaproto.DefaultConfig()
	assert.Equal(t, 2<<20, d.MaxFirstRequestBytes)
	assert.Equal(t, 10*time.Second, d.RequestReadTimeout)
	assert.Equal(t, int64(1<<20), d.MinReadBytesPerSecond)
	for _, tc := range []struct {
		name string
		cfg  kafkaproto.Config
		err  string
	}{
		{"defaults", kafkaproto.Config{}, ""},
		{"first request cap follows a small frame limit", kafkaproto.Config{MaxFrameBytes: 1 << 20, MaxMessageBytes: 1 << 19}, ""},
		{"first request above frame limit", kafkaproto.Config{MaxFrameBytes: 1 << 20, MaxMessageBytes: 1 << 19, MaxFirstRequestBytes: 2 << 20},
			"max first request bytes 2097152 exceeds max frame bytes 1048576"},
		{"first request tiny", kafkaproto.Config{MaxFirstRequestBytes: 5}, "max first request bytes 5 is below 10"},
		{"negative rate", kafkaproto.Config{MinReadBytesPerSecond: -1}, "min read bytes per second -1 is below 1"},
		{"negative read timeout", kafkaproto.Config{RequestReadTimeout: -time.Second}, "timeouts must not be negative"},
		{"negative max connections", kafkaproto.Config{MaxConnections: -1}, "max connections -1 is negative"},
		{"shared memory budget", kafkaproto.Config{Memory: &countingBudget{}}, ""},
		{"shared memory budget and max read bytes", kafkaproto.Config{Memory: &countingBudget{}, MaxReadBytes: 1 << 30},
			"max read bytes is the limit of the private memory budget: set it or memory, not both"},
		{"sasl without users", kafkaproto.Config{SASL: &kafkaproto.SASLConfig{}}, "sasl enabled without users"},
		{"sasl credential store", kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Credentials: &swappableStore{}}}, ""},
		{"sasl users and credential store", kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Credentials: &swappableStore{},
			Users: []kafkaproto.SASLUser{{Name: "u", Password: "p"}}}}, "sasl users and a credential store are exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.err)
		})
	}
}
