package gatewaytest

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// StartTest is [Start] for tests: the configuration and log live in a
// temporary directory of tb, the process is killed at cleanup if the test
// did not stop it, and a failed test logs the gateway's whole log.
func StartTest(tb testing.TB, bin string, cfg Config) *Process {
	tb.Helper()
	return StartTestOn(tb, bin, cfg, 0)
}

// StartTestOn is [StartTest] with the Kafka listener on kafkaPort (0: a
// free port), e.g. a port reserved with [FreePort] and given to clients
// before the instance exists.
func StartTestOn(tb testing.TB, bin string, cfg Config, kafkaPort int) *Process {
	tb.Helper()
	p, err := StartOn(tb.Context(), bin, tb.TempDir(), cfg, kafkaPort)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		p.Kill()
		if tb.Failed() {
			tb.Logf("gateway %s log:\n%s", p.KafkaAddr, p.Logs())
		}
	})
	return p
}

// SuccessorTest is [Process.Successor] for tests, with the same cleanup as
// [StartTest]; it waits up to a minute for the port.
func (p *Process) SuccessorTest(tb testing.TB) *Process {
	tb.Helper()
	s, err := p.Successor(tb.Context(), tb.TempDir(), time.Minute)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		s.Kill()
		if tb.Failed() {
			tb.Logf("gateway %s (successor) log:\n%s", s.KafkaAddr, s.Logs())
		}
	})
	return s
}

// RequireSignal sends sig to the process.
func (p *Process) RequireSignal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	require.NoError(tb, p.Signal(sig))
}

// RequireStop sends SIGTERM and requires a clean exit ([Process.RequireCleanExit]).
func (p *Process) RequireStop(tb testing.TB) {
	tb.Helper()
	p.RequireSignal(tb, syscall.SIGTERM)
	p.RequireCleanExit(tb)
}

// RequireCleanExit waits up to a minute for the process to end and requires
// status 0 and the gateway's "stopped cleanly" log line.
func (p *Process) RequireCleanExit(tb testing.TB) {
	tb.Helper()
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		tb.Fatalf("gateway did not exit within a minute after SIGTERM; log:\n%s", p.Logs())
	}
	require.NoError(tb, p.exitErr, "gateway exit status; log:\n%s", p.Logs())
	require.Contains(tb, p.Logs(), "stopped cleanly")
}

// RequireRewriteRoutes is [Process.RewriteRoutes] failing tb on error.
func (p *Process) RequireRewriteRoutes(tb testing.TB, routes string) {
	tb.Helper()
	require.NoError(tb, p.RewriteRoutes(routes))
}

// RequireMetrics is [Process.Scrape] failing tb on error.
func (p *Process) RequireMetrics(tb testing.TB) MetricSet {
	tb.Helper()
	m, err := p.Scrape()
	require.NoError(tb, err)
	return m
}
