package registrytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"
)

func TestMain(m *testing.M) { Main(m) }

const orderAvro = `{"type":"record","name":"Order","namespace":"registrytest",
 "fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null},
  {"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}}]}`

// TestAvroRoundTrip registers an Avro schema with franz-go's sr client and
// reads it back by id from the real registry.
func TestAvroRoundTrip(t *testing.T) {
	base := URL(t)
	assert.Equal(t, base, URL(t), "one registry per binary")
	require.True(t, strings.HasSuffix(base, "/apis/ccompat/v7"), base)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(base))
	require.NoError(t, err)
	subject := fmt.Sprintf("registrytest-%d-value", time.Now().UnixNano())
	created, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: orderAvro, Type: sr.TypeAvro})
	require.NoError(t, err)
	assert.Positive(t, created.ID)
	assert.Equal(t, subject, created.Subject)
	assert.Equal(t, 1, created.Version)

	got, err := cl.SchemaByID(ctx, created.ID)
	require.NoError(t, err)
	assert.Equal(t, sr.TypeAvro, got.Type)
	assert.JSONEq(t, orderAvro, got.Schema)

	// The same content again is the same id (ids are content ids, as in Confluent's registry).
	again, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: orderAvro, Type: sr.TypeAvro})
	require.NoError(t, err)
	assert.Equal(t, created.ID, again.ID)
	subjects, err := cl.SubjectsByID(ctx, created.ID)
	require.NoError(t, err)
	assert.Contains(t, subjects, subject)
}

// TestListensOnLoopbackOnly finds the registry's process by its HTTP port and
// checks that every socket it listens on, the management interface included
// (Apicurio's default would be 0.0.0.0:9000), is bound to a loopback address.
func TestListensOnLoopbackOnly(t *testing.T) {
	base := URL(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Skipf("%s=%s is not on this machine's loopback: its bind addresses cannot be inspected", EnvURL, base)
	}
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)

	socks, err := listeningSockets()
	require.NoError(t, err)
	pid, err := pidListeningOn(socks, port)
	require.NoError(t, err)
	mine := socketsOf(socks, pid)
	require.GreaterOrEqual(t, len(mine), 2, "want the HTTP and the management listener of pid %d, got %v", pid, mine)
	var others []int
	for _, s := range mine {
		assert.True(t, s.ip.IsLoopback(), "pid %d listens on %s:%d", pid, s.ip, s.port)
		if s.port != port {
			others = append(others, s.port)
		}
	}
	// One of the other listeners is the management interface: it answers /health/ready.
	ready := false
	for _, p := range others {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health/ready", p))
		if err != nil {
			continue
		}
		var body struct {
			Status string `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK && body.Status == "UP" {
			ready = true
			t.Logf("pid %d: HTTP 127.0.0.1:%d, management 127.0.0.1:%d", pid, port, p)
		}
	}
	assert.True(t, ready, "no listener of pid %d other than %d answers /health/ready (%v)", pid, port, others)
}
