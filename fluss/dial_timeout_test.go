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

// A dial or handshake that runs out of DialTimeout while the caller's
// context is still alive is a retriable failure (the server may be
// restarting), not the caller giving up: a net dial timeout matches
// context.DeadlineExceeded, which IsRetriable reads as "caller gave up".
func TestDialTimeoutIsRetriable(t *testing.T) {
	tests := []struct {
		name string
		dial func(ctx context.Context, network, addr string) (net.Conn, error)
	}{
		{"dial times out", func(ctx context.Context, network, addr string) (net.Conn, error) {
			<-ctx.Done()
			var d net.Dialer
			return d.DialContext(ctx, network, addr) // the error of a real dial at its deadline
		}},
		{"handshake unanswered", func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() { // a server that reads and never answers
				buf := make([]byte, 1024)
				for {
					if _, err := server.Read(buf); err != nil {
						return
					}
				}
			}()
			return client, nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := NewClient(Config{Bootstrap: []string{"127.0.0.1:9123"}, DialTimeout: time.Second,
					RequestTimeout: time.Minute}, WithDialer(tc.dial))
				require.NoError(t, err)
				defer func() { require.NoError(t, c.Close()) }()
				c.update(func(s *clusterSnapshot) {
					s.servers[1] = ServerNode{ID: 1, Host: "127.0.0.1", Port: 9124}
				})
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				_, err = c.ProduceLog(ctx, 1, &ProduceLogRequest{TableID: 1, Acks: -1,
					Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: []byte{1}}}})
				require.Error(t, err)
				require.NoError(t, ctx.Err(), "the caller did not give up")
				assert.True(t, IsRetriable(err), "%v", err)
				assert.True(t, NeedsMetadataRefresh(err), "like a refused connection: %v", err)
			})
		})
	}
}
