package main

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
	"time"
)

// gatewayProc is the gateway binary running as a child process on loopback
// ports, with a generated configuration.
type gatewayProc struct {
	cmd       *exec.Cmd
	kafkaAddr string
	adminURL  string
	logPath   string
	exited    chan struct{}
	exitErr   error
}

// writerSettings are the writer keys the bench may override; empty strings
// keep the gateway's defaults.
type writerSettings struct {
	Linger, BatchSize, BufferMemory string
	LogLevel                        string // logging.level; default warn
}

// buildGateway builds ./cmd/gateway (no race detector) into dir.
func buildGateway(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gateway")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gateway")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gateway: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot finds the directory holding go.mod, from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory: run from the repository, or pass -gateway-bin")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// gatewayYAML writes the configuration: loopback listener and admin, the
// writer at its defaults unless overridden, and the routes.
func gatewayYAML(bootstrap string, kafkaPort, adminPort int, w writerSettings, routes string) string {
	level := w.LogLevel
	if level == "" {
		level = "warn"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listeners:\n  - name: plain\n    bind: 127.0.0.1:%d\n    advertised: 127.0.0.1:%d\n", kafkaPort, kafkaPort)
	fmt.Fprintf(&b, "fluss:\n  bootstrap: [%s]\n", bootstrap)
	var wl []string
	if w.Linger != "" {
		wl = append(wl, "  linger: "+w.Linger)
	}
	if w.BatchSize != "" {
		wl = append(wl, "  batch_size: "+w.BatchSize)
	}
	if w.BufferMemory != "" {
		wl = append(wl, "  buffer_memory: "+w.BufferMemory)
	}
	if len(wl) > 0 {
		b.WriteString("writer:\n" + strings.Join(wl, "\n") + "\n")
	}
	fmt.Fprintf(&b, "admin:\n  address: 127.0.0.1:%d\nlogging:\n  level: %s\n  format: text\nshutdown:\n  deadline: 30s\n", adminPort, level)
	b.WriteString("routes:\n" + routes)
	return b.String()
}

// startGateway writes the configuration into dir, starts bin and waits for
// /readyz.
func startGateway(ctx context.Context, bin, dir, bootstrap string, w writerSettings, routes string) (*gatewayProc, error) {
	kafkaPort, err := freePort()
	if err != nil {
		return nil, err
	}
	adminPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(gatewayYAML(bootstrap, kafkaPort, adminPort, w, routes)), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "gateway.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	g := &gatewayProc{
		kafkaAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(kafkaPort)),
		adminURL:  fmt.Sprintf("http://127.0.0.1:%d", adminPort),
		logPath:   logPath,
		exited:    make(chan struct{}),
	}
	g.cmd = exec.Command(bin, "-config", cfgPath, "-watch-interval", "0")
	g.cmd.Stdout, g.cmd.Stderr = logFile, logFile
	if err := g.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	go func() {
		g.exitErr = g.cmd.Wait()
		logFile.Close()
		close(g.exited)
	}()
	if err := g.waitReady(ctx, time.Minute); err != nil {
		g.kill()
		return nil, err
	}
	return g, nil
}

func (g *gatewayProc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := http.Get(g.adminURL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-g.exited:
			return fmt.Errorf("gateway exited before it was ready (%v); log %s:\n%s", g.exitErr, g.logPath, g.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return fmt.Errorf("gateway not ready after %s: %s; log %s", timeout, last, g.logPath)
}

// alive returns an error when the process has exited.
func (g *gatewayProc) alive() error {
	select {
	case <-g.exited:
		return fmt.Errorf("gateway exited (%v); log %s:\n%s", g.exitErr, g.logPath, g.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (g *gatewayProc) stop(timeout time.Duration) error {
	if err := g.cmd.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("signal gateway: %w", err)
	}
	select {
	case <-g.exited:
	case <-time.After(timeout):
		g.kill()
		return fmt.Errorf("gateway did not stop within %s; killed", timeout)
	}
	if g.exitErr != nil {
		return fmt.Errorf("gateway exit: %w; log %s:\n%s", g.exitErr, g.logPath, g.logTail())
	}
	return nil
}

func (g *gatewayProc) kill() {
	select {
	case <-g.exited:
	default:
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

func (g *gatewayProc) logTail() string {
	b, err := os.ReadFile(g.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// warnings counts the WARN and ERROR lines the gateway logged.
func (g *gatewayProc) warnings() (int, string) {
	f, err := os.Open(g.logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	n, first := 0, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			if n == 0 {
				first = line
			}
			n++
		}
	}
	return n, first
}

// metrics reads the gateway's /metrics and returns each wanted name's
// value, summed over its labelled series (0 when absent).
func (g *gatewayProc) metrics(names ...string) (map[string]float64, error) {
	resp, err := http.Get(g.adminURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range names {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
				continue
			}
			f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
			if len(f) == 0 {
				continue
			}
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[name] += v
			}
		}
	}
	return out, sc.Err()
}

// series returns the /metrics lines of a metric, with their labels.
func (g *gatewayProc) series(name string) ([]string, error) {
	resp, err := http.Get(g.adminURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), name+"{") {
			out = append(out, sc.Text())
		}
	}
	return out, sc.Err()
}

// procStat is what /proc tells about a process.
type procStat struct {
	cpu time.Duration // user + system
	rss int64         // bytes
}

// clockTicks is sysconf(_SC_CLK_TCK), 100 on every Linux we run on.
const clockTicks = 100

func readProcStat(pid int) (procStat, error) {
	var s procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may hold spaces; fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return s, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15, rss 24.
	if len(f) < 22 {
		return s, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	rssPages, err3 := strconv.ParseInt(f[21], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return s, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	s.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	s.rss = rssPages * int64(os.Getpagesize())
	return s, nil
}

// rssSampler records the peak RSS of a process while it runs.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if st, err := readProcStat(pid); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, st.rss)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the peak.
func (s *rssSampler) Stop() int64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}
