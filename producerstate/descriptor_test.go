package producerstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func TestStateTableChangeLogIsNotCompressed(t *testing.T) {
	d := stateDescriptor()
	require.NoError(t, checkStateProperties(d), "the created table passes its own check")
	assert.Equal(t, fluss.ArrowCompressionNone, d.ArrowCompression(), "each commit's change-log batch is built uncompressed by the tablet server")
	assert.Equal(t, fluss.ArrowCompressionZstd, legacyDescriptor().ArrowCompression(), "the legacy table is only read; its descriptor is what earlier versions made")

	old := stateDescriptor()
	delete(old.Properties, fluss.PropArrowCompression)
	assert.NoError(t, checkStateProperties(old), "a state table made by an earlier version (ZSTD change log) is still used")
}
