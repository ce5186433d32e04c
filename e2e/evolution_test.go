package e2e

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
)

// TestReloadPicksUpAddedColumns: a column added to a table (ALTER TABLE
// ADD COLUMN, here through the Fluss client) is filled after a reload,
// while a producer keeps writing across it: every record lands once, rows
// written before read null there, rows after carry the value (read back
// with pyfluss). Before this, writes after such a reload failed until a
// restart: the table's batches were still built for the old schema.
func TestReloadPicksUpAddedColumns(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, table{name: "grows", buckets: 2, columns: []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String())}})
	topic := "grows-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})
	ctx := testContext(t)
	cl := newProducer(t, g.KafkaAddr)

	// A producer that never stops while the table changes.
	var sent atomic.Int64
	var failed atomic.Value
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id": %d, "name": "n%d", "extra": "x%d"}`, i, i, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				failed.Store(err)
				return
			}
			sent.Store(i + 1)
		}
	}()
	require.NoError(t, waitFor(ctx, time.Minute, func() bool { return sent.Load() >= 50 }))

	path := fluss.TablePath{Database: e.Name, Table: strings.TrimPrefix(tbl, e.Name+".")}
	require.NoError(t, e.Client.AddColumns(ctx, path, []fluss.Column{col("extra", fluss.String())}))
	g.RequireSignal(t, syscall.SIGHUP)
	require.NoError(t, waitFor(ctx, 2*time.Minute, func() bool {
		return g.RequireMetrics(t).Sum("fluss_gateway_config_reloads_total", `result="success"`) == 1
	}), "reload not applied; log:\n%s", g.Logs())
	afterReload := sent.Load()
	require.NoError(t, waitFor(ctx, time.Minute, func() bool { return sent.Load() >= afterReload+50 }), "the producer stalled: %v", failed.Load())
	close(stop)
	<-done
	require.Nil(t, failed.Load(), "a write failed across the schema change")
	total := sent.Load()

	rows := e.scanLog(t, tbl)
	seen := map[int64]int{}
	var filled, null int
	for _, r := range rows {
		id := num(t, r.Row, "id")
		seen[id]++
		_, has := r.Row["extra"] // a batch of the older schema has no such column
		switch {
		case !has || isNull(r.Row, "extra"):
			null++
			assert.Less(t, id, afterReload, "id %d, written after the reload, has no extra", id)
		default:
			filled++
			assert.Equal(t, fmt.Sprintf("x%d", id), str(t, r.Row, "extra"))
			assert.GreaterOrEqual(t, id, int64(50), "id %d was written before the column existed", id)
		}
	}
	for id := range total {
		assert.Equal(t, 1, seen[id], "id %d", id)
	}
	assert.Len(t, rows, int(total))
	assert.GreaterOrEqual(t, null, 50, "rows before the change read null")
	assert.GreaterOrEqual(t, filled, 50, "rows after the reload carry the new column")
	t.Logf("%d records: %d with extra null, %d filled", total, null, filled)
}
