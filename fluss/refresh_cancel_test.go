package fluss

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A caller of BucketLeader whose context ends while the shared leader
// refresh is stuck (here: the metadata server does not accept) returns at
// once with its context's error, also when it is the caller that started
// the refresh. Otherwise the sender's Close cannot end before the dial and
// request timeouts.
func TestBucketLeaderRefreshHonoursCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		c, err := NewClient(Config{Bootstrap: []string{"127.0.0.1:9123"}, DialTimeout: time.Minute,
			RequestTimeout: time.Minute}, WithDialer(dial))
		require.NoError(t, err)
		defer func() { require.NoError(t, c.Close()) }()
		c.update(func(s *clusterSnapshot) { s.tableByID[42] = TablePath{"db", "t"} })

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err = c.BucketLeader(ctx, 42, NoPartition, 0)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start), "returned when the caller's context ended")
		synctest.Wait() // the abandoned refresh ends by itself (dial timeout)
	})
}
