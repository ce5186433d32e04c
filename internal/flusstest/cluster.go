package flusstest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fluss-kafka/gateway/internal/localservice"
)

// Environment variables read by the package.
const (
	// EnvBootstrap holds the coordinator address of an already running cluster
	// ("127.0.0.1:9123"); when set, no cluster is started.
	EnvBootstrap = "FLUSS_BOOTSTRAP"
	// EnvCluster names the scripts/fluss-local.sh cluster behind EnvBootstrap,
	// which lets [RestartTabletServer] act on it.
	EnvCluster = "FLUSS_LOCAL_CLUSTER"
	// EnvScript overrides the path of scripts/fluss-local.sh.
	EnvScript = "FLUSS_LOCAL_SCRIPT"
	// EnvVersion selects the Fluss server version a started cluster runs.
	EnvVersion = "FLUSS_VERSION"
)

// Time budgets for the script's commands; a JVM start on a loaded 2-core
// machine takes seconds, a download of the jars a minute or two.
const (
	startTimeout         = 10 * time.Minute
	stopTimeout          = 3 * time.Minute
	tabletTimeout        = 5 * time.Minute
	scriptRelPath        = "scripts/fluss-local.sh"
	bootstrapLabel       = "FLUSS_BOOTSTRAP="
	saslBootstrapLabel   = "FLUSS_SASL_BOOTSTRAP="
	clientBootstrapLabel = "FLUSS_CLIENT_BOOTSTRAP="
)

// Option configures a cluster started by this package.
type Option func(*options)

type options struct {
	tabletServers int
	version       string
	settings      []string   // "key=value" lines of every server's server.yaml
	sasl          bool       // SASLUsers was given
	saslUsers     []SASLUser // users of the SASL listener when sasl
	clientProxies bool       // ClientProxies was given
}

// TabletServers sets the number of tablet servers of a started cluster
// (default 1).
func TabletServers(n int) Option { return func(o *options) { o.tabletServers = n } }

// Version sets the Fluss server version of a started cluster (default: env
// FLUSS_VERSION, else the script's default).
func Version(v string) Option { return func(o *options) { o.version = v } }

// ServerSetting adds "key: value" to every server's server.yaml of a
// started cluster (e.g. default.replication.factor).
func ServerSetting(key, value string) Option {
	return func(o *options) { o.settings = append(o.settings, key+"="+value) }
}

func buildOptions(opts []Option) options {
	o := options{tabletServers: 1}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// runner runs scripts/fluss-local.sh with args and returns its stdout; the
// error carries the script's stderr. Tests replace it.
type runner = localservice.Runner

var runScript = localservice.RunScript

// Cluster is a cluster run by scripts/fluss-local.sh under a name.
type Cluster struct {
	script        string
	name          string
	bootstrap     string
	saslBootstrap string // "" unless the cluster has a SASL listener
	run           runner

	clientBootstrap string         // "" unless started with ClientProxies
	proxies         []*clientProxy // by tablet server id, with ClientProxies
}

// Bootstrap returns the coordinator address, "127.0.0.1:PORT".
func (c *Cluster) Bootstrap() string { return c.bootstrap }

// Name returns the script's cluster name (its -s argument).
func (c *Cluster) Name() string { return c.name }

// RestartTabletServer stops tablet server id (SIGTERM, SIGKILL after the
// script's timeout) and starts it again with the same id and data directory.
// It returns once the coordinator knows the server again; bucket leadership
// may still be moving, so callers retry their requests.
func (c *Cluster) RestartTabletServer(ctx context.Context, id int32) error {
	return c.tabletCommand(ctx, "restart-tablet", id)
}

// StopTabletServer stops tablet server id and returns once its process has
// exited.
func (c *Cluster) StopTabletServer(ctx context.Context, id int32) error {
	return c.tabletCommand(ctx, "stop-tablet", id)
}

// StartTabletServer starts a stopped tablet server id again and returns once
// the coordinator knows it.
func (c *Cluster) StartTabletServer(ctx context.Context, id int32) error {
	return c.tabletCommand(ctx, "start-tablet", id)
}

// Signal names what SignalTabletServer does to a server's process.
type Signal string

const (
	Crash  Signal = "KILL" // SIGKILL; StartTabletServer brings the server back
	Stop   Signal = "TERM" // a graceful stop (SIGKILL after the script's timeout)
	Pause  Signal = "STOP" // SIGSTOP, a long GC pause as the others see it
	Resume Signal = "CONT" // SIGCONT after a Pause
)

// SignalTabletServer sends sig to tablet server id; after a Crash it
// returns once the process has exited.
func (c *Cluster) SignalTabletServer(ctx context.Context, id int32, sig Signal) error {
	if _, err := c.run(ctx, c.script, "signal-tablet", "-s", c.name, strconv.Itoa(int(id)), string(sig)); err != nil {
		return fmt.Errorf("signal-tablet %d %s of cluster %s: %w", id, sig, c.name, err)
	}
	return nil
}

// SignalCoordinator sends sig to the coordinator; after a Crash it returns
// once the process has exited.
func (c *Cluster) SignalCoordinator(ctx context.Context, sig Signal) error {
	if _, err := c.run(ctx, c.script, "signal-coordinator", "-s", c.name, string(sig)); err != nil {
		return fmt.Errorf("signal-coordinator %s of cluster %s: %w", sig, c.name, err)
	}
	return nil
}

// StartCoordinator starts a crashed coordinator again on its address and
// returns once it runs.
func (c *Cluster) StartCoordinator(ctx context.Context) error {
	if _, err := c.run(ctx, c.script, "start-coordinator", "-s", c.name); err != nil {
		return fmt.Errorf("start-coordinator of cluster %s: %w", c.name, err)
	}
	return nil
}

func (c *Cluster) tabletCommand(ctx context.Context, command string, id int32) error {
	if _, err := c.run(ctx, c.script, command, "-s", c.name, strconv.Itoa(int(id))); err != nil {
		return fmt.Errorf("%s %d of cluster %s: %w", command, id, c.name, err)
	}
	return nil
}

// Stop stops every process of the cluster and removes its directory.
func (c *Cluster) Stop(ctx context.Context) error {
	if _, err := c.run(ctx, c.script, "stop", "-s", c.name); err != nil {
		return errors.Join(fmt.Errorf("stop cluster %s: %w", c.name, err), c.closeProxies())
	}
	return c.closeProxies()
}

// startCluster starts a cluster named name that the script stops by itself
// once process ownerPID has exited.
func startCluster(ctx context.Context, run runner, script, name string, ownerPID int, o options) (*Cluster, error) {
	args := []string{"start", "-s", name, "-n", strconv.Itoa(o.tabletServers), "-o", strconv.Itoa(ownerPID)}
	if o.version != "" {
		args = append(args, "-v", o.version)
	}
	for _, kv := range o.settings {
		args = append(args, "-D", kv)
	}
	if o.sasl {
		users, err := saslArg(o.saslUsers)
		if err != nil {
			return nil, fmt.Errorf("start fluss cluster %s: %w", name, err)
		}
		args = append(args, "--sasl", users)
	}
	var proxyListeners []net.Listener
	if o.clientProxies {
		lns, err := listenClientProxies(o.tabletServers)
		if err != nil {
			return nil, fmt.Errorf("start fluss cluster %s: %w", name, err)
		}
		proxyListeners = lns
		args = append(args, "--client-ports", clientPortsArg(lns))
	}
	closeListeners := func() {
		for _, ln := range proxyListeners {
			ln.Close()
		}
	}
	out, err := run(ctx, script, args...)
	if err != nil {
		closeListeners()
		return nil, fmt.Errorf("start fluss cluster %s: %w", name, err)
	}
	addr, err := parseBootstrap(out)
	if err != nil {
		closeListeners()
		return nil, fmt.Errorf("start fluss cluster %s: %w", name, err)
	}
	c := &Cluster{script: script, name: name, bootstrap: addr, run: run}
	if o.sasl {
		if c.saslBootstrap, err = parseSASLBootstrap(out); err != nil {
			closeListeners()
			return nil, fmt.Errorf("start fluss cluster %s with a SASL listener: %w", name, err)
		}
	}
	if o.clientProxies {
		if c.clientBootstrap, err = parseAddressLine(out, clientBootstrapLabel); err != nil {
			closeListeners()
			return nil, fmt.Errorf("start fluss cluster %s with a CLIENT listener: %w", name, err)
		}
		for id, ln := range proxyListeners {
			c.proxies = append(c.proxies, newClientProxy(ln, func(ctx context.Context) (string, error) {
				return c.tabletClientAddr(ctx, id)
			}))
		}
	}
	return c, nil
}

// attachCluster returns the script cluster name whose bootstrap address must
// be want (so that a test never restarts servers of some other cluster).
func attachCluster(ctx context.Context, run runner, script, name, want string) (*Cluster, error) {
	out, err := run(ctx, script, "bootstrap", "-s", name)
	if err != nil {
		return nil, fmt.Errorf("find cluster %s=%s: %w", EnvCluster, name, err)
	}
	addr, err := parseBootstrap(out)
	if err != nil {
		return nil, fmt.Errorf("find cluster %s=%s: %w", EnvCluster, name, err)
	}
	if addr != want {
		return nil, fmt.Errorf("cluster %s=%s has bootstrap %s but %s=%s", EnvCluster, name, addr, EnvBootstrap, want)
	}
	c := &Cluster{script: script, name: name, bootstrap: addr, run: run}
	if bytes.Contains(out, []byte(saslBootstrapLabel)) {
		if c.saslBootstrap, err = parseSASLBootstrap(out); err != nil {
			return nil, fmt.Errorf("find cluster %s=%s: %w", EnvCluster, name, err)
		}
	}
	return c, nil
}

// parseBootstrap finds the FLUSS_BOOTSTRAP=host:port line in the script's
// stdout.
func parseBootstrap(out []byte) (string, error) { return parseAddressLine(out, bootstrapLabel) }

// parseSASLBootstrap finds the FLUSS_SASL_BOOTSTRAP=host:port line that the
// script prints for a cluster started with --sasl.
func parseSASLBootstrap(out []byte) (string, error) { return parseAddressLine(out, saslBootstrapLabel) }

// parseAddressLine finds the line label+host:port in the script's stdout.
func parseAddressLine(out []byte, label string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		addr, ok := strings.CutPrefix(line, label)
		if !ok {
			continue
		}
		if err := checkHostPort(addr); err != nil {
			return "", fmt.Errorf("script printed a bad address %q: %w", addr, err)
		}
		return addr, nil
	}
	return "", fmt.Errorf("no %s line in the script's output %q", label, out)
}

func checkHostPort(addr string) error {
	host, port, ok := strings.Cut(addr, ":")
	if !ok || host == "" {
		return errors.New("want host:port")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// flussScript is scripts/fluss-local.sh.
var flussScript = localservice.Script{RelPath: scriptRelPath, EnvScript: EnvScript, EnvService: EnvBootstrap}

// findScript returns the path of scripts/fluss-local.sh: env FLUSS_LOCAL_SCRIPT,
// else the first one found walking up from dir.
func findScript(env func(string) (string, bool), dir string) (string, error) {
	return flussScript.FindFrom(env, dir)
}

// clusterName turns a test name into a script cluster name, unique in this
// process through seq.
func clusterName(prefix string, pid int, seq int64) string {
	var b strings.Builder
	for _, r := range prefix {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return fmt.Sprintf("gotest-%s-%d-%d", b.String(), pid, seq)
}

// serverJar returns the fluss-server jar of version (empty: env FLUSS_VERSION,
// else the script's default), downloading it through the script if needed.
func serverJar(ctx context.Context, run runner, script, version string) (string, error) {
	args := []string{"fetch"}
	if version != "" {
		args = append(args, "-v", version)
	}
	out, err := run(ctx, script, args...)
	if err != nil {
		return "", fmt.Errorf("fetch the fluss-server jar: %w", err)
	}
	lib := strings.TrimSpace(string(out))
	jars, err := filepath.Glob(filepath.Join(lib, "fluss-server-*.jar"))
	if err != nil || len(jars) != 1 {
		return "", fmt.Errorf("fetch the fluss-server jar: want one fluss-server-*.jar in %q, found %v", lib, jars)
	}
	return jars[0], nil
}
