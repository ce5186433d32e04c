package registrytest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluss-kafka/gateway/internal/localservice"
)

// Environment variables read by the package.
const (
	// EnvURL holds the Confluent-compatible base URL of a running registry
	// ("http://127.0.0.1:8081/apis/ccompat/v7"); when set, none is started.
	EnvURL = "SCHEMA_REGISTRY_URL"
	// EnvScript overrides the path of scripts/registry-local.sh.
	EnvScript = "REGISTRY_LOCAL_SCRIPT"
)

const (
	// startTimeout covers a first start on a machine: Maven downloads the
	// app (about 160 MB) and, without a Java 21+, pip installs one.
	startTimeout  = 10 * time.Minute
	stopTimeout   = 2 * time.Minute
	probeTimeout  = 10 * time.Second
	scriptRelPath = "scripts/registry-local.sh"
	urlLabel      = EnvURL + "="
)

// shared is the test binary's registry: the only mutable package state (see
// the package comment).
var shared = newBinaryRegistry(os.LookupEnv, os.Getpid(), runScript, probe)

// Main runs the package's tests and stops the registry [URL] started, if
// any; call it from TestMain. It does not start a registry by itself, so a
// test binary that never calls URL starts no JVM.
func Main(m *testing.M) {
	os.Exit(shared.main(m.Run))
}

// URL returns the Confluent-compatible base URL of a running schema
// registry, "http://127.0.0.1:PORT/apis/ccompat/v7": env SCHEMA_REGISTRY_URL
// when set (checked to answer GET subjects), otherwise the registry started
// for this test binary on the first call. It fails tb with the reason when no
// registry can be had; it never skips.
func URL(tb testing.TB) string {
	tb.Helper()
	u, started, err := shared.url()
	if err != nil {
		tb.Fatalf("no schema registry: %v", err)
	}
	if started && !shared.hasMain() {
		tb.Logf("registrytest: registry started without registrytest.Main in TestMain; it stops when the test binary exits")
	}
	return u
}

// runner runs the script with args and returns its stdout; the error
// carries the script's stderr. Tests replace it.
type runner = localservice.Runner

var runScript = localservice.RunScript

// probe checks that base answers GET base/subjects with 200.
func probe(base string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/subjects", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// binaryRegistry resolves and owns the test binary's registry.
type binaryRegistry struct {
	svc   localservice.Binary
	env   func(string) (string, bool)
	pid   int
	run   runner
	probe func(base string) error
}

func newBinaryRegistry(env func(string) (string, bool), pid int, run runner, probe func(string) error) *binaryRegistry {
	b := &binaryRegistry{env: env, pid: pid, run: run, probe: probe}
	b.svc = localservice.Binary{Label: "registrytest", Env: env, EnvService: EnvURL, Check: b.check, Start: b.start}
	return b
}

func (b *binaryRegistry) main(runTests func() int) int { return b.svc.Main(runTests) }

func (b *binaryRegistry) hasMain() bool { return b.svc.HasMain() }

// url resolves the registry once; a failure is remembered so that every test
// fails fast with the same reason. started says whether this call started it.
func (b *binaryRegistry) url() (base string, started bool, err error) { return b.svc.Get() }

// check checks the URL in EnvURL, v.
func (b *binaryRegistry) check(v string) (string, error) {
	base := strings.TrimSuffix(strings.TrimSpace(v), "/")
	if err := checkURL(base); err != nil {
		return "", fmt.Errorf("%s=%s: %w", EnvURL, v, err)
	}
	if err := b.probe(base); err != nil {
		return "", fmt.Errorf("%s=%s does not answer: %w", EnvURL, v, err)
	}
	return base, nil
}

// start starts the binary's registry, which stop stops.
func (b *binaryRegistry) start() (base string, stop func() error, err error) {
	script, err := registryScript.Find(b.env)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("gotest-%d", b.pid)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := b.run(ctx, script, "start", "-s", name, "-o", strconv.Itoa(b.pid))
	if err != nil {
		return "", nil, fmt.Errorf("%s is unset, and starting a registry failed: %w", EnvURL, err)
	}
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if _, err := b.run(ctx, script, "stop", "-s", name); err != nil {
			return fmt.Errorf("stop schema registry %s: %w", name, err)
		}
		return nil
	}
	base, err = parseURL(out)
	if err != nil {
		// It may run all the same: stop it rather than leave it to the watcher.
		return "", stop, fmt.Errorf("%s is unset, and the started registry: %w", EnvURL, err)
	}
	return base, stop, nil
}

// stop stops the registry this process started, if any.
func (b *binaryRegistry) stop() error { return b.svc.Stop() }

// parseURL finds the SCHEMA_REGISTRY_URL=... line in the script's stdout.
func parseURL(out []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), urlLabel)
		if !ok {
			continue
		}
		if err := checkURL(v); err != nil {
			return "", fmt.Errorf("script printed a bad URL %q: %w", v, err)
		}
		return v, nil
	}
	return "", fmt.Errorf("no %s line in the script's output %q", urlLabel, out)
}

// checkURL wants an absolute http(s) URL with a host and port.
func checkURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want http://HOST:PORT/..., got %q", v)
	}
	return nil
}

// registryScript is scripts/registry-local.sh.
var registryScript = localservice.Script{RelPath: scriptRelPath, EnvScript: EnvScript, EnvService: EnvURL}

// findScript returns the path of scripts/registry-local.sh: env
// REGISTRY_LOCAL_SCRIPT, else the first one found walking up from dir.
func findScript(env func(string) (string, bool), dir string) (string, error) {
	return registryScript.FindFrom(env, dir)
}
