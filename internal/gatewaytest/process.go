package gatewaytest

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
	"time"
)

// ReadyTimeout bounds how long [Start] waits for /readyz.
const ReadyTimeout = time.Minute

// logTailBytes is how much of the log an error message carries.
const logTailBytes = 4000

// Process is one running gateway process.
type Process struct {
	KafkaAddr  string // host:port of the Kafka listener
	AdminURL   string // http://host:port of the admin server (/metrics, /readyz)
	ConfigPath string // the configuration file it was started with
	LogPath    string // its stdout and stderr

	bin       string
	cmd       *exec.Cmd
	kafkaPort int
	adminPort int
	exited    chan struct{}
	exitErr   error

	mu  sync.Mutex
	cfg Config
}

// Start writes cfg (with free loopback ports) to dir/gateway.yaml, starts
// bin with it, logging to dir/gateway.log, and returns once /readyz answers
// 200. Reloads happen on SIGHUP only (-watch-interval 0), so the caller
// decides when. On error the process is killed.
func Start(ctx context.Context, bin, dir string, cfg Config) (*Process, error) {
	return StartOn(ctx, bin, dir, cfg, 0)
}

// StartOn is [Start] with the Kafka listener on kafkaPort (0: a free port),
// so that a test can put a new instance where an old one was and its
// clients reconnect to it. The admin port is always a free one.
func StartOn(ctx context.Context, bin, dir string, cfg Config, kafkaPort int) (*Process, error) {
	// A port that was free a moment ago can be taken by anything on the
	// machine (an outgoing connection's ephemeral port) before the gateway
	// binds it: a start that failed to bind a port chosen here is retried
	// with new ones. A port the caller gave is not.
	const attempts = 5
	for i := 1; ; i++ {
		p, err := startOnce(ctx, bin, dir, cfg, kafkaPort)
		if err == nil || i == attempts || !errors.Is(err, errPortTaken) {
			return p, err
		}
	}
}

// errPortTaken marks a start that failed because a port chosen by
// startOnce was bound by someone else first.
var errPortTaken = errors.New("a chosen port was taken before the gateway bound it")

func startOnce(ctx context.Context, bin, dir string, cfg Config, givenKafkaPort int) (*Process, error) {
	var err error
	kafkaPort := givenKafkaPort
	if kafkaPort == 0 {
		if kafkaPort, err = FreePort(); err != nil {
			return nil, err
		}
	}
	adminPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	p := &Process{
		KafkaAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(kafkaPort)),
		AdminURL:   fmt.Sprintf("http://127.0.0.1:%d", adminPort),
		ConfigPath: filepath.Join(dir, "gateway.yaml"),
		LogPath:    filepath.Join(dir, "gateway.log"),
		kafkaPort:  kafkaPort,
		adminPort:  adminPort,
		exited:     make(chan struct{}),
		cfg:        cfg,
	}
	if err := os.WriteFile(p.ConfigPath, []byte(cfg.YAML(kafkaPort, adminPort)), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return nil, err
	}
	p.bin = bin
	p.cmd = exec.Command(bin, "-config", p.ConfigPath, "-watch-interval", "0")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if len(cfg.Env) > 0 {
		p.cmd.Env = append(os.Environ(), cfg.Env...)
	}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, ReadyTimeout); err != nil {
		p.Kill()
		if p.tookChosenPort(givenKafkaPort == 0) {
			return nil, fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, err
	}
	return p, nil
}

// tookChosenPort reports whether the process exited because the admin
// port, or the Kafka port when kafkaChosen, was already in use.
func (p *Process) tookChosenPort(kafkaChosen bool) bool {
	select {
	case <-p.exited:
	default:
		return false
	}
	logs := p.Logs()
	if !strings.Contains(logs, "address already in use") {
		return false
	}
	admin := fmt.Sprintf("listen admin 127.0.0.1:%d:", p.adminPort)
	kafka := fmt.Sprintf("listen 127.0.0.1:%d ", p.kafkaPort)
	return strings.Contains(logs, admin) || (kafkaChosen && strings.Contains(logs, kafka))
}

// waitReady polls /readyz until it answers 200, the process exits, ctx
// ends or timeout passes.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		resp, err := http.Get(p.AdminURL + "/readyz")
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
		case <-p.exited:
			return fmt.Errorf("gateway exited before it was ready (%v); log %s:\n%s", p.exitErr, p.LogPath, p.LogTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gateway not ready after %s: %s; log %s:\n%s", timeout, last, p.LogPath, p.LogTail())
		}
	}
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal gateway: %w", err)
	}
	return nil
}

// Stop sends SIGTERM and waits up to timeout for a clean exit ([Process.Wait]).
func (p *Process) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	return p.Wait(timeout)
}

// Wait waits up to timeout for the process to end (killing it when it does
// not) and returns an error unless it exited with status 0.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("gateway did not exit within %s; killed; log %s:\n%s", timeout, p.LogPath, p.LogTail())
	}
	if p.exitErr != nil {
		return fmt.Errorf("gateway exit: %w; log %s:\n%s", p.exitErr, p.LogPath, p.LogTail())
	}
	return nil
}

// KafkaPort is the port of the Kafka listener.
func (p *Process) KafkaPort() int { return p.kafkaPort }

// Exited is closed once the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Successor starts another instance of the same binary and configuration
// (its routes as last rewritten) on the same Kafka port, in dir, as an
// operator's restart or takeover would: it waits up to portTimeout for the
// port to be free (p, or its listener, gone), then starts as [StartOn]
// does. p may still be running (a graceful stop that has closed its
// listener but is draining).
func (p *Process) Successor(ctx context.Context, dir string, portTimeout time.Duration) (*Process, error) {
	if err := waitPortFree(ctx, p.kafkaPort, portTimeout); err != nil {
		return nil, err
	}
	p.mu.Lock()
	cfg := p.cfg
	p.mu.Unlock()
	return StartOn(ctx, p.bin, dir, cfg, p.kafkaPort)
}

// waitPortFree polls until a listener can bind the loopback port.
func waitPortFree(ctx context.Context, port int, timeout time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(timeout)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %s still taken after %s: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Kill kills the process with SIGKILL (kill -9: no shutdown code runs)
// unless it has exited, and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Alive returns an error when the process has exited.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("gateway exited (%v); log %s:\n%s", p.exitErr, p.LogPath, p.LogTail())
	default:
		return nil
	}
}

// Logs returns everything the process has logged so far.
func (p *Process) Logs() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(read gateway log: %v)", err)
	}
	return string(b)
}

// LogTail returns the last few kilobytes of the log.
func (p *Process) LogTail() string {
	s := p.Logs()
	if len(s) > logTailBytes {
		s = s[len(s)-logTailBytes:]
	}
	return s
}

// Warnings counts the WARN and ERROR lines logged, and returns the first.
func (p *Process) Warnings() (int, string) {
	f, err := os.Open(p.LogPath)
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

// Scrape reads /metrics.
func (p *Process) Scrape() (MetricSet, error) {
	resp, err := http.Get(p.AdminURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// RewriteRoutes replaces the routes of the configuration file, keeping
// everything else (the next SIGHUP applies them).
func (p *Process) RewriteRoutes(routes string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg := p.cfg
	cfg.Routes = routes
	if err := os.WriteFile(p.ConfigPath, []byte(cfg.YAML(p.kafkaPort, p.adminPort)), 0o600); err != nil {
		return err
	}
	p.cfg = cfg
	return nil
}
