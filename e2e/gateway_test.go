package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gatewayBinary builds cmd/gateway with the race detector once per test
// binary, into .cache/e2e (git-ignored), and returns its path.
var gatewayBinary = sync.OnceValues(func() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Build under a private name, then rename: concurrent test binaries never
	// run a half-written file.
	tmp := filepath.Join(dir, fmt.Sprintf("gateway-%d", os.Getpid()))
	cmd := exec.Command("go", "build", "-race", "-o", tmp, "./cmd/gateway")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -race ./cmd/gateway: %w\n%s", err, out)
	}
	bin := filepath.Join(dir, "gateway")
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
})

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
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
}

func (c gatewayConfig) yaml(kafkaPort, adminPort int) string {
	linger := c.Linger
	if linger == "" {
		linger = "20ms"
	}
	deadline := c.Deadline
	if deadline == "" {
		deadline = "30s"
	}
	buffer := c.Buffer
	if buffer == "" {
		buffer = "32MiB"
	}
	batch := c.BatchSize
	if batch == "" {
		batch = "256KiB"
	}
	return fmt.Sprintf(`listeners:
  - name: plain
    bind: 127.0.0.1:%d
    advertised: 127.0.0.1:%d
fluss:
  bootstrap: [%s]
  request_timeout: 30s
  dial_timeout: 10s
writer:
  linger: %s
  batch_size: %s
  buffer_memory: %s
  delivery_timeout: 1m
admin:
  address: 127.0.0.1:%d
logging:
  level: info
  format: text
shutdown:
  deadline: %s
routes:
%s`, kafkaPort, kafkaPort, c.Bootstrap, linger, batch, buffer, adminPort, deadline, c.Routes)
}

// gatewayProc is one running gateway process.
type gatewayProc struct {
	t          testing.TB
	cmd        *exec.Cmd
	cfg        gatewayConfig
	configPath string
	kafkaAddr  string
	adminURL   string
	logs       *syncBuffer
	exited     chan struct{}
	exitErr    error
}

// startGateway writes a configuration and starts the gateway binary with it,
// returning once /readyz answers 200. The process is killed at cleanup if the
// test did not stop it.
func startGateway(t testing.TB, cfg gatewayConfig) *gatewayProc {
	t.Helper()
	bin, err := gatewayBinary()
	require.NoError(t, err)
	kafkaPort, adminPort := freePort(t), freePort(t)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg.yaml(kafkaPort, adminPort)), 0o600))

	g := &gatewayProc{
		t:          t,
		cfg:        cfg,
		configPath: path,
		kafkaAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(kafkaPort)),
		adminURL:   fmt.Sprintf("http://127.0.0.1:%d", adminPort),
		logs:       &syncBuffer{},
		exited:     make(chan struct{}),
	}
	// -watch-interval 0: reloads happen on SIGHUP only, so a test decides when.
	g.cmd = exec.Command(bin, "-config", path, "-watch-interval", "0")
	g.cmd.Stdout = g.logs
	g.cmd.Stderr = g.logs
	require.NoError(t, g.cmd.Start())
	go func() {
		g.exitErr = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
		if t.Failed() {
			t.Logf("gateway %s log:\n%s", g.kafkaAddr, g.logs.String())
		}
	})
	g.waitReady(t)
	return g
}

// waitReady polls /readyz until it answers 200, the process exits, or a
// minute passes.
func (g *gatewayProc) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		resp, err := http.Get(g.adminURL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-g.exited:
			t.Fatalf("gateway exited before it was ready (%v); log:\n%s", g.exitErr, g.logs.String())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready after a minute: %s; log:\n%s", last, g.logs.String())
		}
	}
}

// signal sends sig to the gateway process.
func (g *gatewayProc) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	require.NoError(t, g.cmd.Process.Signal(sig))
}

// stop sends SIGTERM and requires a clean exit (status 0) within a minute.
func (g *gatewayProc) stop(t testing.TB) {
	t.Helper()
	g.signal(t, syscall.SIGTERM)
	g.requireCleanExit(t)
}

// requireCleanExit waits for the process to end and requires status 0.
func (g *gatewayProc) requireCleanExit(t testing.TB) {
	t.Helper()
	select {
	case <-g.exited:
	case <-time.After(time.Minute):
		t.Fatalf("gateway did not exit within a minute after SIGTERM; log:\n%s", g.logs.String())
	}
	require.NoError(t, g.exitErr, "gateway exit status; log:\n%s", g.logs.String())
	require.Contains(t, g.logs.String(), "stopped cleanly")
}

// rewriteRoutes replaces the routes of the configuration file (the next
// SIGHUP applies them).
func (g *gatewayProc) rewriteRoutes(t testing.TB, routes string) {
	t.Helper()
	cfg := g.cfg
	cfg.Routes = routes
	_, kport, err := net.SplitHostPort(g.kafkaAddr)
	require.NoError(t, err)
	kp, _ := strconv.Atoi(kport)
	ap, _ := strconv.Atoi(g.adminURL[strings.LastIndex(g.adminURL, ":")+1:])
	require.NoError(t, os.WriteFile(g.configPath, []byte(cfg.yaml(kp, ap)), 0o600))
	g.cfg = cfg
}

// metrics scrapes /metrics into series → value; a series is written as the
// exposition format prints it: name{label="value",...} with sorted labels.
func (g *gatewayProc) metrics(t testing.TB) metricSet {
	t.Helper()
	resp, err := http.Get(g.adminURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m, err := parseMetrics(resp.Body)
	require.NoError(t, err)
	return m
}

// metricSet is a scrape of the Prometheus text format.
type metricSet map[string]float64

func parseMetrics(r io.Reader) (metricSet, error) {
	m := make(metricSet)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// sum adds every series of the metric name whose labels include all of want
// (each `key="value"`).
func (m metricSet) sum(name string, want ...string) float64 {
	var total float64
	for series, v := range m {
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(labels, w) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// has reports whether any series of the metric name exists.
func (m metricSet) has(name string) bool {
	for series := range m {
		if n, _, _ := strings.Cut(series, "{"); n == name {
			return true
		}
	}
	return false
}

// syncBuffer is a bytes.Buffer safe for the process's writers and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
