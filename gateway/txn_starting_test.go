package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// TestTransactionsAnnouncedWhileStarting: a client that connects while the
// routes' first load is still under way (here: a Fluss that accepts and
// never answers) is told the transactional APIs exist, and gets
// COORDINATOR_LOAD_IN_PROGRESS, which it retries, for them. Before, their
// absence from ApiVersions made Java's producer fail an EndTxn retried on
// a restarted instance with UnsupportedVersionException, for good.
func TestTransactionsAnnouncedWhileStarting(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: ''}
fluss: {bootstrap: ['%s'], request_timeout: 30s, dial_timeout: 2s}
routes:
  - {topic: t, table: db.t, value: {format: raw, column: payload}}
`, silent.Addr())))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx, context.Background()) }()
	t.Cleanup(func() {
		stop()
		<-ran // the load never finished: Run says so
	})
	nc, err := net.Dial("tcp", g.kafkaListeners[0].Addr().String())
	require.NoError(t, err)
	defer nc.Close()

	vreq := kmsg.NewPtrApiVersionsRequest()
	vreq.Version = 2 // versions whose response headers have no tagged fields, as kafkaRoundTrip reads them
	versions := kafkaRoundTrip(t, nc, 1, vreq).(*kmsg.ApiVersionsResponse)
	require.Zero(t, versions.ErrorCode)
	keys := map[int16]bool{}
	for _, k := range versions.ApiKeys {
		keys[k.ApiKey] = true
	}
	for _, key := range []int16{22, 24, 26} { // InitProducerId, AddPartitionsToTxn, EndTxn
		assert.True(t, keys[key], "api key %d announced while the routes load", key)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 1, kmsg.StringPtr("starting"), 60_000
	resp := kafkaRoundTrip(t, nc, 2, init).(*kmsg.InitProducerIDResponse)
	assert.Equal(t, kafkaproto.ErrCoordinatorLoadInProgress.Code, resp.ErrorCode, "retriable until the routes are loaded")
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 1, "starting", 7, 0, true
	eresp := kafkaRoundTrip(t, nc, 3, end).(*kmsg.EndTxnResponse)
	assert.Equal(t, kafkaproto.ErrCoordinatorLoadInProgress.Code, eresp.ErrorCode)
}
