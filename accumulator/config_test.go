package accumulator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Config{
		BatchSize:         2 << 20,
		Linger:            20 * time.Millisecond,
		BufferMemory:      64 << 20,
		MaxTableShare:     0.5,
		BufferWaitTimeout: 30 * time.Second,
	}, DefaultConfig())
	require.NoError(t, DefaultConfig().Validate())
	// Zero Linger is taken as it is, not as "default".
	c := DefaultConfig()
	c.Linger = 0
	assert.Equal(t, c, c.withDefaults())
	// Other zero sizes and timeouts mean their default.
	assert.Equal(t, DefaultConfig(), Config{Linger: DefaultConfig().Linger}.withDefaults())
}
