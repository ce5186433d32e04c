package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// TestKafkaConnectJSONEnvelope runs Kafka Connect 4.1 standalone (from
// Maven Central) with its default value converter, JsonConverter with
// schemas enabled, and a FileStreamSource whose lines become structured
// records {id: int64, name: string} through Connect's own transforms
// (HoistField, Cast, InsertField), the case: read as json, every
// record filled no column; through a connect_json route every record lands
// once with its columns filled (read back with pyfluss). With
// follow_schema.add_columns, into a table that has only id, the gateway
// adds name from the envelope's schema first.
func TestKafkaConnectJSONEnvelope(t *testing.T) {
	t.Run("table with every column", func(t *testing.T) {
		testKafkaConnectJSONEnvelope(t, []fluss.Column{col("id", fluss.BigInt()), col("name", fluss.String())}, "")
	})
	t.Run("columns follow the envelope schema", func(t *testing.T) {
		testKafkaConnectJSONEnvelope(t, []fluss.Column{col("id", fluss.BigInt())}, "    follow_schema: {add_columns: true}\n")
	})
	t.Run("table created from the envelope schema", func(t *testing.T) {
		testKafkaConnectJSONEnvelope(t, nil, "    follow_schema: {create: true, add_columns: true, buckets: 2}\n")
	})
}

func testKafkaConnectJSONEnvelope(t *testing.T, cols []fluss.Column, follow string) {
	const records = 2000
	e := newEnv(t)
	tbl := e.Name + ".connect_env"
	if cols != nil {
		tbl = e.createTable(t, table{name: "connect_env", buckets: 2, columns: cols})
	}
	topic := "connect-" + uniqueName("t")
	routes := fmt.Sprintf("  - topic: %s\n    table: %s\n    value: {format: connect_json}\n%s", topic, tbl, follow)
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: routes})
	ctx := testContext(t)
	cmd, err := gatewaytest.KafkaTool(ctx, "org.apache.kafka.connect.cli.ConnectStandalone")
	require.NoError(t, err)

	dir := t.TempDir()
	input := filepath.Join(dir, "ids.txt")
	var lines strings.Builder
	for i := range records {
		fmt.Fprintln(&lines, i)
	}
	require.NoError(t, os.WriteFile(input, []byte(lines.String()), 0o644))
	worker := filepath.Join(dir, "worker.properties")
	require.NoError(t, os.WriteFile(worker, fmt.Appendf(nil, `bootstrap.servers=%s
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=true
offset.storage.file.filename=%s
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:0
`, g.KafkaAddr, filepath.Join(dir, "offsets")), 0o644))
	connector := filepath.Join(dir, "source.properties")
	require.NoError(t, os.WriteFile(connector, fmt.Appendf(nil, `name=file-source
connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector
tasks.max=1
file=%s
topic=%s
transforms=hoist,cast,name
transforms.hoist.type=org.apache.kafka.connect.transforms.HoistField$Value
transforms.hoist.field=id
transforms.cast.type=org.apache.kafka.connect.transforms.Cast$Value
transforms.cast.spec=id:int64
transforms.name.type=org.apache.kafka.connect.transforms.InsertField$Value
transforms.name.static.field=name
transforms.name.static.value=connect
`, input, topic), 0o644))
	log, err := os.Create(filepath.Join(dir, "connect.log"))
	require.NoError(t, err)
	defer log.Close()
	connect := exec.CommandContext(ctx, cmd[0], append(cmd[1:], worker, connector)...)
	connect.Stdout, connect.Stderr = log, log
	require.NoError(t, connect.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = connect.Wait(); close(exited) }()
	defer func() {
		_ = connect.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = connect.Process.Kill()
			<-exited
		}
	}()

	var rows []scannedRow
	require.NoError(t, waitFor(ctx, 4*time.Minute, func() bool {
		select {
		case <-exited:
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("Kafka Connect exited early (%v):\n%s", exitErr, tailString(string(out), 4000))
		default:
		}
		if cols == nil { // created by the gateway: not there before the first record
			if _, err := e.Client.GetTableInfo(ctx, fluss.TablePath{Database: e.Name, Table: "connect_env"}); err != nil {
				return false
			}
		}
		rows = e.scanLog(t, tbl)
		return len(rows) >= records
	}), "Kafka Connect's %d records in Fluss (have %d)", records, len(rows))

	seen := map[int64]int{}
	for _, r := range rows {
		id := num(t, r.Row, "id")
		seen[id]++
		assert.Equal(t, "connect", str(t, r.Row, "name"), "id %d", id)
	}
	for id := range int64(records) {
		assert.Equal(t, 1, seen[id], "id %d", id)
	}
	assert.Len(t, rows, records, "no duplicates")
	switch {
	case cols == nil:
		assert.Contains(t, g.Logs(), "table created from a writer schema")
		info, err := e.Client.GetTableInfo(ctx, fluss.TablePath{Database: e.Name, Table: "connect_env"})
		require.NoError(t, err)
		var got []string
		for _, c := range info.Descriptor.Schema.Columns {
			got = append(got, c.Name+" "+c.Type.String())
		}
		assert.Equal(t, []string{"id BIGINT", "name STRING"}, got, "the columns the Connect schema {id: int64, name: string} makes")
		assert.Equal(t, 2, info.Descriptor.BucketCount)
	case follow != "":
		assert.Contains(t, g.Logs(), "columns added to follow a writer schema", "name came from the envelope's schema")
	}
}
