package flusstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluss-kafka/gateway/internal/localservice"
)

// shared is the test binary's cluster: the only mutable package state (see
// the package comment).
var shared = newBinaryCluster(os.LookupEnv, os.Getpid(), runScript, dialCheck)

// Main runs the package's tests and stops the cluster [Bootstrap] started, if
// any; call it from TestMain. It does not start a cluster by itself, so a
// package whose tests do not need one (FLUSS_BOOTSTRAP unset and no call to
// Bootstrap) starts no JVM. Options apply to the cluster Bootstrap starts.
func Main(m *testing.M, opts ...Option) {
	os.Exit(shared.main(m.Run, opts))
}

// Bootstrap returns the address of a running Fluss cluster: env
// FLUSS_BOOTSTRAP when set (checked to accept TCP connections), otherwise the
// cluster started for this test binary on the first call. It fails tb with the
// reason when no cluster can be had; it never skips.
func Bootstrap(tb testing.TB) string {
	tb.Helper()
	addr, started, err := shared.bootstrap()
	if err != nil {
		tb.Fatalf("no fluss cluster: %v", err)
	}
	if started && !shared.hasMain() {
		tb.Logf("flusstest: cluster started without flusstest.Main in TestMain; it stops when the test binary exits")
	}
	return addr
}

// RestartTabletServer stops and starts tablet server id of the binary's
// cluster and returns once the coordinator knows it again. The cluster must be
// one this package started, or the one named by env FLUSS_LOCAL_CLUSTER.
// Other packages' tests may share that cluster; prefer [StartCluster] for
// tests that disturb servers.
func RestartTabletServer(tb testing.TB, id int32) {
	tb.Helper()
	c, err := shared.controlled()
	if err != nil {
		tb.Fatalf("restart tablet server %d: %v", id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tabletTimeout)
	defer cancel()
	if err := c.RestartTabletServer(ctx, id); err != nil {
		tb.Fatalf("restart tablet server %d: %v", id, err)
	}
}

// StartCluster starts a private cluster for one test, stopped in tb.Cleanup;
// the test may stop and restart its servers at will. It costs a few seconds
// of JVM start-up, so use it only where the shared cluster will not do.
func StartCluster(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	c, err := shared.startPrivate(tb.Name(), buildOptions(opts))
	if err != nil {
		tb.Fatalf("start private fluss cluster: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			tb.Errorf("stop private fluss cluster: %v", err)
		}
	})
	return c
}

// binaryCluster resolves and owns the test binary's cluster.
type binaryCluster struct {
	svc  localservice.Binary
	env  func(string) (string, bool)
	pid  int
	run  runner
	dial func(addr string) error
	seq  atomic.Int64

	// mu guards every field below.
	mu      sync.Mutex
	opts    options
	cluster *Cluster // nil unless this process started it or EnvCluster names it
}

func newBinaryCluster(env func(string) (string, bool), pid int, run runner, dial func(string) error) *binaryCluster {
	b := &binaryCluster{env: env, pid: pid, run: run, dial: dial, opts: buildOptions(nil)}
	b.svc = localservice.Binary{Label: "flusstest", Env: env, EnvService: EnvBootstrap, Check: b.check, Start: b.start}
	return b
}

func (b *binaryCluster) main(runTests func() int, opts []Option) int {
	b.mu.Lock()
	b.opts = buildOptions(opts)
	b.mu.Unlock()
	return b.svc.Main(runTests)
}

func (b *binaryCluster) hasMain() bool { return b.svc.HasMain() }

// bootstrap resolves the cluster once; a failure is remembered so that every
// test fails fast with the same reason. started says whether this call started
// the cluster.
func (b *binaryCluster) bootstrap() (addr string, started bool, err error) { return b.svc.Get() }

// check checks the address in EnvBootstrap.
func (b *binaryCluster) check(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if err := b.dial(addr); err != nil {
		return "", fmt.Errorf("%s=%s: %w", EnvBootstrap, addr, err)
	}
	return addr, nil
}

// start starts the binary's cluster, which stop stops.
func (b *binaryCluster) start() (addr string, stop func() error, err error) {
	script, err := b.script()
	if err != nil {
		return "", nil, err
	}
	b.mu.Lock()
	o := b.opts
	b.mu.Unlock()
	if o.version == "" {
		o.version, _ = b.env(EnvVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := startCluster(ctx, b.run, script, clusterName("bin", b.pid, 0), b.pid, o)
	if err != nil {
		return "", nil, fmt.Errorf("%s is unset, and %w", EnvBootstrap, err)
	}
	b.mu.Lock()
	b.cluster = c
	b.mu.Unlock()
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		return c.Stop(ctx)
	}
	return c.Bootstrap(), stop, nil
}

func (b *binaryCluster) script() (string, error) { return flussScript.Find(b.env) }

// controlled returns the binary's cluster as one the script can act on.
func (b *binaryCluster) controlled() (*Cluster, error) {
	addr, _, err := b.bootstrap()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cluster != nil {
		return b.cluster, nil
	}
	name, ok := b.env(EnvCluster)
	if !ok || name == "" {
		return nil, fmt.Errorf("%s=%s is a cluster this test cannot control: set %s to its scripts/fluss-local.sh name, or use flusstest.StartCluster",
			EnvBootstrap, addr, EnvCluster)
	}
	script, err := b.script()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := attachCluster(ctx, b.run, script, name, addr)
	if err != nil {
		return nil, err
	}
	b.cluster = c
	return c, nil
}

func (b *binaryCluster) startPrivate(testName string, o options) (*Cluster, error) {
	script, err := b.script()
	if err != nil {
		return nil, err
	}
	if o.version == "" {
		o.version, _ = b.env(EnvVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return startCluster(ctx, b.run, script, clusterName(testName, b.pid, b.seq.Add(1)), b.pid, o)
}

// stop stops the cluster this process started, if any.
func (b *binaryCluster) stop() error { return b.svc.Stop() }

// dialCheck checks that addr (or the first reachable of a comma-separated
// list) accepts TCP connections.
func dialCheck(addr string) error {
	var errs []error
	for _, a := range strings.Split(addr, ",") {
		a = strings.TrimSpace(a)
		conn, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err == nil {
			return conn.Close()
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("not reachable: %w", errors.Join(errs...))
}

// ServerJar returns the path of the fluss-server jar the clusters run (version
// from env FLUSS_VERSION, else the script's default), downloading it into
// .cache/fluss on first use; for tests that run Fluss's Java classes directly.
func ServerJar(tb testing.TB) string {
	tb.Helper()
	script, err := shared.script()
	if err != nil {
		tb.Fatalf("fluss-server jar: %v", err)
	}
	version, _ := shared.env(EnvVersion)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	jar, err := serverJar(ctx, shared.run, script, version)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return jar
}
