package fluss

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write routed to a tablet server that metadata no longer lists (it left
// the cluster; the writer's cached leader is stale) must be retried after a
// leader refresh, as Java's sender does with LeaderNotAvailable: not fail
// for good with a non-retriable error that leaves the stale leader cached.
func TestWriteToServerGoneFromMetadataIsRetriable(t *testing.T) {
	ms := newMetadataServer(t) // lists tablet servers 1 and 2
	c := newTestClient(t, ms.addr(), Config{})
	_, err := c.ProduceLog(t.Context(), 7, &ProduceLogRequest{TableID: 42, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: []byte{1}}}})
	require.Error(t, err)
	assert.True(t, IsRetriable(err), "%v", err)
	assert.True(t, NeedsMetadataRefresh(err), "%v", err)
}
