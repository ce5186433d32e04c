package kafkaproto_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestInitProducerIDFailureCodes: a failed allocation answers a code the
// producer retries (COORDINATOR_LOAD_IN_PROGRESS), whatever retriable or
// unclassified error the backend gave; only a non-retriable Kafka code the
// backend chose passes through.
func TestInitProducerIDFailureCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want int16
	}{
		{"unclassified", errors.New("zookeeper session expired"), 14},
		{"retriable kafka code", fmt.Errorf("%w: fluss down", kafkaproto.ErrRequestTimedOut), 14},
		{"not leader", kafkaproto.ErrNotLeaderOrFollower, 14},
		{"unknown server error", kafkaproto.ErrUnknownServerError, 14},
		{"load in progress", fmt.Errorf("%w: writer ids unavailable", kafkaproto.ErrCoordinatorLoadInProgress), 14},
		{"cluster authorization", fmt.Errorf("%w: no write permission", kafkaproto.ErrClusterAuthorizationFailed), 31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := dialRaw(t, serveFailingIDs(t, tc.err))
			for _, v := range []int16{0, 4, 5} {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.Version = v
				resp := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
				assert.Equal(t, tc.want, resp.ErrorCode, "v%d", v)
				assert.Equal(t, int64(-1), resp.ProducerID)
				assert.Equal(t, int16(-1), resp.ProducerEpoch)
			}
		})
	}
}

// TestInitProducerIDRetryCodeIsRetriableInFranzGo pins the code against
// franz-go's own table: it discards a producer id attempt and retries on
// exactly the codes kerr marks retriable.
func TestInitProducerIDRetryCodeIsRetriableInFranzGo(t *testing.T) {
	t.Parallel()
	code := kafkaproto.ErrCoordinatorLoadInProgress.Code
	assert.True(t, kerr.IsRetriable(kerr.ErrorForCode(code)))
	assert.Equal(t, kerr.CoordinatorLoadInProgress.Code, code)
	assert.False(t, kerr.IsRetriable(kerr.ErrorForCode(kafkaproto.ErrClusterAuthorizationFailed.Code)))
}

// failingIDs fails every allocation with err.
type failingIDs struct{ err error }

func (f failingIDs) NextProducerID(context.Context) (int64, error) { return -1, f.err }

// serveFailingIDs serves a server whose producer ids always fail with err
// and returns its address.
func serveFailingIDs(t *testing.T, err error) string {
	t.Helper()
	b := struct {
		*kafkatest.Topics
		*kafkatest.Sink
		failingIDs
	}{kafkatest.NewTopics(map[string]int32{kafkatest.Topic: 1}), kafkatest.NewSink(), failingIDs{err}}
	srv, nerr := kafkaproto.New(kafkaproto.Config{}, b)
	require.NoError(t, nerr)
	l, nerr := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, nerr)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		assert.ErrorIs(t, <-served, kafkaproto.ErrServerClosed)
	})
	return l.Addr().String()
}
