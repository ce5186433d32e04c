package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/configs"
)

// Writing to one more table costs the gateway little memory beyond what
// the writer's budget counts: the Arrow compression encoders (0.7 to 2.4
// MiB each) are shared between tables, so the live heap after every table
// was written once and acknowledged grows by a few KiB per table, not by
// an encoder per table. Both ends run in this process: the figure includes
// the test producer's per-topic metadata.
func TestTableWrittenOnceHoldsLittleMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const warm, n = 20, 220
	names := make([]string, n)
	var routes strings.Builder
	for i := range names {
		names[i] = fmt.Sprintf("t%03d", i)
		fmt.Fprintf(&routes, "  - {topic: %s, table: db.%s, value: {format: raw, column: payload}}\n", names[i], names[i])
	}
	cl := rawTablesCluster(t, 2, names...)
	cfg, err := configs.Parse(fmt.Appendf(nil, `
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: '127.0.0.1:0'}
fluss: {bootstrap: ['%s']}
writer: {linger: 1ms}
routes:
%s`, cl.Bootstrap(), routes.String()))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	runGateway(t, ctx, g)
	c, err := kgo.NewClient(kgo.SeedBrokers(g.kafkaListeners[0].Addr().String()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer c.Close()

	// Distinct values, so that every table's batch is compressed for real.
	write := func(tables []string) {
		for _, name := range tables {
			for p := range int32(2) {
				v := []byte(strings.Repeat(name, 200) + fmt.Sprint(p))
				r := &kgo.Record{Topic: name, Partition: p, Value: v}
				require.NoError(t, c.ProduceSync(ctx, r).FirstErr(), "topic %s", name)
			}
		}
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	write(names[:warm])
	before := heap()
	write(names[warm:])
	perTable := float64(int64(heap())-int64(before)) / (n - warm)
	t.Logf("live heap per table written once: %.0f bytes", perTable)
	assert.Less(t, perTable, 64.0*1024, "a table written once keeps compression encoders or batch buffers")
}
