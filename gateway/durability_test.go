package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
)

// TestValidateWarnsReplicationFactorOne: `gateway validate` accepts routes
// to tables with replication factor 1 (or none stated, so the cluster
// default of 1) but warns, naming route and table; RF >= 2 is not warned
// about, and a dead-letter table counts too.
func TestValidateWarnsReplicationFactorOne(t *testing.T) {
	t.Parallel()
	cl, err := flussfake.NewCluster()
	require.NoError(t, err)
	defer cl.Close()
	cols := fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}}
	dlqCols := fluss.Schema{Columns: []fluss.Column{{Name: "kafka_value", Type: fluss.Bytes()}, {Name: "reason", Type: fluss.String()}}}
	for name, rf := range map[string]string{"safe": "3", "single": "1", "unstated": ""} {
		d := fluss.TableDescriptor{Schema: cols, BucketCount: 1, Properties: map[string]string{}}
		if rf != "" {
			d.Properties[fluss.PropReplicationFactor] = rf
		}
		_, err := cl.AddTable(fluss.TablePath{Database: "db", Table: name}, d)
		require.NoError(t, err)
	}
	_, err = cl.AddTable(fluss.TablePath{Database: "db", Table: "dlq"}, fluss.TableDescriptor{Schema: dlqCols, BucketCount: 1,
		Properties: map[string]string{fluss.PropReplicationFactor: "1"}})
	require.NoError(t, err)
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s}
routes:
  - {topic: a, table: db.safe, value: {format: raw, column: payload}}
  - {topic: b, table: db.single, value: {format: raw, column: payload}}
  - {topic: c, table: db.unstated, value: {format: raw, column: payload}}
  - {topic: d, table: db.safe, value: {format: raw, column: payload}, errors: {mode: dlq, dlq_table: db.dlq}}
`, cl.Bootstrap())))
	require.NoError(t, err)
	ctx := t.Context()
	v, err := Validate(ctx, cfg)
	require.NoError(t, err, "replication factor 1 is a warning, not an error")
	require.Len(t, v.Routes.All(), 4)
	require.Len(t, v.Warnings, 3, "%q", v.Warnings)
	assert.Contains(t, v.Warnings[0], `route "b": table db.single has replication factor 1`)
	assert.Contains(t, v.Warnings[0], "can lose acknowledged rows")
	assert.Contains(t, v.Warnings[1], `route "c": table db.unstated does not state table.replication.factor`)
	assert.Contains(t, v.Warnings[2], `route "d": table db.dlq has replication factor 1`)
}

// TestDurabilityWarningsSummarized: the warning is logged once per table,
// naming its routes, for at most maxListed tables; one more line counts
// the rest, so 500 routes do not log 500 warnings at every load.
func TestDurabilityWarningsSummarized(t *testing.T) {
	t.Parallel()
	var ws []durabilityWarning
	for i := range 30 {
		table := fluss.TablePath{Database: "db", Table: fmt.Sprintf("t%02d", i)}
		ws = append(ws, durabilityWarning{route: fmt.Sprintf("r%02d", i), table: table, rf: 1, known: true})
		if i == 0 {
			ws = append(ws, durabilityWarning{route: "r00b", table: table, rf: 1, known: true})
		}
	}
	var buf bytes.Buffer
	logDurability(slog.New(slog.NewTextHandler(&buf, nil)), ws)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, maxListed+1, "%s", buf.String())
	assert.Contains(t, lines[0], "table=db.t00")
	assert.Contains(t, lines[0], "routes=\"[r00 r00b]\"")
	assert.Contains(t, lines[0], "replication_factor=1")
	assert.Contains(t, lines[maxListed], "tables=20 routes=20")
	assert.Contains(t, lines[maxListed], "first=db.t10 last=db.t29")
	for _, l := range lines {
		assert.Contains(t, l, "level=WARN")
	}
}
