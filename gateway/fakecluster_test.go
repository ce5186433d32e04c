package gateway

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
)

// rawTablesCluster starts a fake Fluss cluster (closed when the test ends)
// holding the tables db.<name>, each with one BYTES column "payload" (a raw
// route's table) and the given bucket count.
func rawTablesCluster(t *testing.T, buckets int, names ...string) *flussfake.Cluster {
	t.Helper()
	cl, err := flussfake.NewCluster()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	desc := fluss.TableDescriptor{Schema: fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}}, BucketCount: buckets}
	for _, name := range names {
		_, err := cl.AddTable(fluss.TablePath{Database: "db", Table: name}, desc)
		require.NoError(t, err)
	}
	return cl
}

// runGateway runs a listening gateway until the returned stop is called
// (at the latest when the test ends) and checks that Run returned nil.
func runGateway(t *testing.T, ctx context.Context, g *Gateway) (stop func()) {
	t.Helper()
	force, noForce := context.WithCancel(context.Background())
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx, force) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-ran)
		noForce()
	}
	t.Cleanup(stop)
	return stop
}
