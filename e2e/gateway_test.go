package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// gatewayBinary builds cmd/gateway with the race detector once per test
// binary (internal/gatewaytest) and returns its path.
func gatewayBinary() (string, error) { return gatewaytest.Binary(true) }

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := gatewaytest.FreePort()
	require.NoError(t, err)
	return port
}

// gatewayConfig is what a test varies in the generated configuration.
type gatewayConfig struct {
	Bootstrap string
	Routes    string // YAML of the routes list, indented by two spaces per level, no "routes:" line
	Linger    string // writer.linger; default 20ms
	Deadline  string // shutdown.deadline; default 30s
	Buffer    string // writer.buffer_memory; default 32MiB
	BatchSize string // writer.batch_size; default 256KiB
	Registry  string // schema_registry.urls; default none
	// MaxMessage is kafka.max_message_bytes; default the gateway's.
	MaxMessage string
	// SASL is the listener's sasl (YAML flow mapping); default none.
	SASL string
	// TLS is the listener's tls (YAML flow mapping); default none.
	TLS string
	// MaxConnectionsPerIP is kafka.max_connections_per_ip; default none.
	MaxConnectionsPerIP string
	// Quotas is kafka.quotas (YAML flow mapping); default none.
	Quotas string
	// ACLs is the acls list (YAML flow sequence); default none.
	ACLs string
}

// config fills in the e2e defaults.
func (c gatewayConfig) config() gatewaytest.Config {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return gatewaytest.Config{
		Bootstrap:       c.Bootstrap,
		Routes:          c.Routes,
		RequestTimeout:  "30s",
		DialTimeout:     "10s",
		Linger:          or(c.Linger, "20ms"),
		BatchSize:       or(c.BatchSize, "256KiB"),
		BufferMemory:    or(c.Buffer, "32MiB"),
		DeliveryTimeout: "1m",
		LogLevel:        "info",
		Deadline:        or(c.Deadline, "30s"),
		SchemaRegistry:  c.Registry,
		MaxMessageBytes: c.MaxMessage,
		ListenerSASL:    c.SASL,
		ListenerTLS:     c.TLS,

		MaxConnectionsPerIP: c.MaxConnectionsPerIP,
		Quotas:              c.Quotas,
		ACLs:                c.ACLs,
	}
}

func (c gatewayConfig) yaml(kafkaPort, adminPort int) string {
	return c.config().YAML(kafkaPort, adminPort)
}

// startGateway starts the race-built gateway with cfg, returning once
// /readyz answers 200. The process is killed at cleanup if the test did not
// stop it.
func startGateway(t testing.TB, cfg gatewayConfig) *gatewaytest.Process {
	t.Helper()
	bin, err := gatewayBinary()
	require.NoError(t, err)
	return gatewaytest.StartTest(t, bin, cfg.config())
}

// waitFor polls cond every 50ms until it holds or the timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return errors.New("condition not met in time")
		case <-tick.C:
		}
	}
	return nil
}
