package sender

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Config{
		Acks:                   -1,
		RequestTimeout:         30 * time.Second,
		RequestTimeoutOverhead: 5 * time.Second,
		MaxRequestSize:         10 << 20,
		MaxInflightPerBucket:   5,
		DisableIdempotence:     false,
		Retries:                math.MaxInt32,
		RetryBackoff:           100 * time.Millisecond,
		RetryBackoffMax:        time.Second,
		DeliveryTimeout:        2 * time.Minute,
		KvMaxThrottle:          3 * time.Second,
		LeaderWait:             5 * time.Second,
	}, DefaultConfig())
	require.NoError(t, DefaultConfig().Validate())
	// Zero Retries are taken as they are, not as "default".
	c := DefaultConfig()
	c.Retries = 0
	assert.Equal(t, c, c.withDefaults())
	// Other zero sizes and timeouts mean their default.
	assert.Equal(t, DefaultConfig(), Config{Acks: -1, Retries: math.MaxInt32}.withDefaults())
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		set     func(*writerConfig)
		wantErr string
	}{
		{name: "defaults"},
		{name: "no linger", set: func(c *writerConfig) { c.Linger = 0 }},
		{name: "no retries", set: func(c *writerConfig) { c.Retries = 0 }},
		{name: "small but consistent", set: func(c *writerConfig) { c.BatchSize, c.BufferMemory = 64, 128 }},
		{name: "buffer smaller than two batches", set: func(c *writerConfig) { c.BatchSize, c.BufferMemory = 1<<20, 1<<20 }, wantErr: "buffer memory"},
		{name: "negative linger", set: func(c *writerConfig) { c.Linger = -time.Second }, wantErr: "linger"},
		{name: "negative retries", set: func(c *writerConfig) { c.Retries = -1 }, wantErr: "retries"},
		{name: "acks 0", set: func(c *writerConfig) { c.Acks = 0 }, wantErr: "acks 0 is not supported towards Fluss: use 1 or -1 (all)"},
		{name: "acks 0 without idempotence", set: func(c *writerConfig) { c.Acks, c.DisableIdempotence = 0, true }, wantErr: "acks 0 is not supported towards Fluss: use 1 or -1 (all)"},
		{name: "idempotence needs acks all", set: func(c *writerConfig) { c.Acks = 1 }, wantErr: "idempotence requires acks -1"},
		{name: "acks 1 without idempotence", set: func(c *writerConfig) { c.Acks, c.DisableIdempotence = 1, true }},
		{name: "idempotence caps in-flight", set: func(c *writerConfig) { c.MaxInflightPerBucket = 6 }, wantErr: "in-flight"},
		{name: "backoff max below base", set: func(c *writerConfig) { c.RetryBackoff, c.RetryBackoffMax = time.Second, time.Millisecond }, wantErr: "backoff"},
		{name: "one table may take it all", set: func(c *writerConfig) { c.MaxTableShare = 1 }},
		{name: "table share above 1", set: func(c *writerConfig) { c.MaxTableShare = 1.5 }, wantErr: "max table share"},
		{name: "negative table share", set: func(c *writerConfig) { c.MaxTableShare = -0.1 }, wantErr: "max table share"},
		{name: "table share below a batch", set: func(c *writerConfig) { c.BatchSize, c.BufferMemory, c.MaxTableShare = 1<<20, 4<<20, 0.2 }, wantErr: "must hold a batch"},
		{name: "bad acks", set: func(c *writerConfig) { c.Acks, c.DisableIdempotence = 2, true }, wantErr: "acks 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := testConfig(tc.set).Validate()
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
