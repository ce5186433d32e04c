package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// registerTypedSchema registers a schema of schemaType (AVRO, PROTOBUF,
// JSON) under subject through the registry's Confluent-compatible API and
// returns its id.
func registerTypedSchema(t *testing.T, registry, subject, schemaType, schema string) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]string{"schema": schema, "schemaType": schemaType})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, registry+"/subjects/"+subject+"/versions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "register %s: %s", subject, out)
	var id struct{ ID int64 }
	require.NoError(t, json.Unmarshal(out, &id))
	return id.ID
}

// TestTablesPlanProtobufMessage: `gateway tables plan|apply` on a value
// subject whose .proto declares two top-level messages (Meta, then Event)
// against real Apicurio and Fluss. Without value.message the plan is
// refused, naming both messages; with value.message: shop.Event the table
// has Event's columns (never Meta's), and with
// follow_schema.primary_key_from_key the key subject's Avro fields lead it
// as its primary key. A later version adding a field inside the nested
// message plans as a field not added, which does not stop apply.
func TestTablesPlanProtobufMessage(t *testing.T) {
	e := newEnv(t)
	registry := registrytest.URL(t)
	topic := uniqueName("plan-pb")
	valueSubject, keySubject := topic+"-value", topic+"-key"
	table := e.Name + ".plan_events"
	path := fluss.TablePath{Database: e.Name, Table: "plan_events"}
	const v1 = `syntax = "proto3";
package shop;
message Meta { string source = 1; }
message Event {
  message Place { string city = 1; }
  int64 id = 1;
  string name = 2;
  Place place = 3;
}
`
	registerTypedSchema(t, registry, valueSubject, "PROTOBUF", v1)
	registerTypedSchema(t, registry, keySubject, "AVRO", `{"type": "record", "name": "EventKey", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}`)

	bin, err := gatewayBinary()
	require.NoError(t, err)
	tables := func(route, cmd string) (string, error) {
		cfg := gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: route}
		file := filepath.Join(t.TempDir(), "gateway.yaml")
		require.NoError(t, os.WriteFile(file, []byte(cfg.yaml(freePort(t), freePort(t))), 0o644))
		var stdout, stderr bytes.Buffer
		c := exec.CommandContext(testContext(t), bin, "tables", cmd, "-config", file)
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		return stdout.String() + stderr.String(), err
	}

	ambiguous := fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: protobuf, subject: %s}
    follow_schema: {buckets: 2}
`, topic, table, valueSubject)
	out, err := tables(ambiguous, "plan")
	require.Error(t, err, out)
	assert.Contains(t, out, "declares 2 messages (shop.Meta, shop.Event)")
	assert.Contains(t, out, "value.message")

	named := fmt.Sprintf(`
  - topic: %s
    table: %s
    value: {format: protobuf, subject: %s, message: shop.Event}
    key: {format: avro, subject: %s}
    follow_schema: {buckets: 2, primary_key_from_key: true}
`, topic, table, valueSubject, keySubject)
	out, err = tables(named, "plan")
	require.NoError(t, err, out)
	assert.Contains(t, out, "CREATE TABLE "+table+" (")
	assert.Contains(t, out, "PRIMARY KEY (id) NOT ENFORCED")
	assert.NotContains(t, out, "source", "Meta's field is not a column")
	out, err = tables(named, "apply")
	require.NoError(t, err, out)
	info, err := e.Client.GetTableInfo(testContext(t), path)
	require.NoError(t, err)
	assert.Equal(t, []string{"id BIGINT NOT NULL", "name STRING", "place ROW<city STRING>"}, columnList(info))
	assert.Equal(t, []string{"id"}, info.Descriptor.Schema.PrimaryKey)

	// v2 adds a field inside Place and one at the top level.
	const v2 = `syntax = "proto3";
package shop;
message Meta { string source = 1; }
message Event {
  message Place { string city = 1; string zip = 2; }
  int64 id = 1;
  string name = 2;
  Place place = 3;
  string channel = 4;
}
`
	registerTypedSchema(t, registry, valueSubject, "PROTOBUF", v2)
	out, err = tables(named, "apply")
	require.NoError(t, err, "a field not added does not stop apply: %s", out)
	out, err = tables(named, "plan")
	require.NoError(t, err, out)
	assert.Contains(t, out, `-- not added`)
	assert.Contains(t, out, `field "place.zip"`)
	e.Client.InvalidateTableInfo(path)
	info, err = e.Client.GetTableInfo(testContext(t), path)
	require.NoError(t, err)
	assert.Equal(t, []string{"id BIGINT NOT NULL", "name STRING", "place ROW<city STRING>", "channel STRING"}, columnList(info))
}
