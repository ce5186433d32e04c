// Package localservice holds what flusstest and registrytest share: finding
// and running a scripts/*-local.sh script, and resolving the one service a
// test binary uses (env override, else started through the script) once.
// Test-only: production code never imports it.
package localservice

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Env looks up an environment variable (os.LookupEnv; tests replace it).
type Env func(string) (string, bool)

// Runner runs a script with args and returns its stdout; the error carries
// the script's stderr. Tests replace it.
type Runner func(ctx context.Context, script string, args ...string) ([]byte, error)

// RunScript is the real [Runner].
func RunScript(ctx context.Context, script string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, script, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// The services' JVMs never hold these pipes (the scripts redirect them),
	// but do not hang on a stray child either.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", script, strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Script says where a script is.
type Script struct {
	RelPath    string // path below the repository root, "scripts/fluss-local.sh"
	EnvScript  string // env variable overriding the path
	EnvService string // env variable naming a running service, suggested when no script is found
}

// Find returns the script's path: env EnvScript, else the first RelPath
// found walking up from the working directory.
func (s Script) Find(env Env) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", s.RelPath, err)
	}
	return s.FindFrom(env, wd)
}

// FindFrom is [Script.Find] walking up from dir.
func (s Script) FindFrom(env Env, dir string) (string, error) {
	if p, ok := env(s.EnvScript); ok && p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", s.EnvScript, err)
		}
		return p, nil
	}
	for d := dir; ; {
		p := filepath.Join(d, s.RelPath)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no %s in %s or any parent directory (set %s or %s)", s.RelPath, dir, s.EnvService, s.EnvScript)
		}
		d = parent
	}
}

// Binary is the service of one test binary: the value in env EnvService when
// that is set, otherwise one started on first use and stopped by [Binary.Main].
// The first resolution, failed or not, is remembered so that every test gets
// the same answer. Safe for concurrent use; set the fields before first use.
type Binary struct {
	Label      string // prefix of the stop error Main prints, "flusstest"
	Env        Env
	EnvService string
	// Check turns EnvService's raw value (not blank) into the value to use,
	// or says why it cannot be used.
	Check func(raw string) (string, error)
	// Start starts the service and returns its value; stop, when not nil,
	// stops what was started, even when err is not nil.
	Start func() (value string, stop func() error, err error)

	mu         sync.Mutex
	mainCalled bool
	resolved   bool
	value      string
	err        error
	stop       func() error // not nil while a started service is to be stopped
}

// Main runs the tests and then stops the service they started, if any; a
// failure to stop fails the run.
func (b *Binary) Main(runTests func() int) int {
	b.mu.Lock()
	b.mainCalled = true
	b.mu.Unlock()
	code := runTests()
	if err := b.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", b.Label, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// HasMain says whether [Binary.Main] runs the tests.
func (b *Binary) HasMain() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mainCalled
}

// Get resolves the service once; started says whether this call started it.
func (b *Binary) Get() (value string, started bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.resolved {
		return b.value, false, b.err
	}
	b.resolved = true
	if raw, ok := b.Env(b.EnvService); ok && strings.TrimSpace(raw) != "" {
		b.value, b.err = b.Check(raw)
		if b.err != nil {
			b.value = ""
		}
		return b.value, false, b.err
	}
	var stop func() error
	b.value, stop, b.err = b.Start()
	b.stop = stop
	if b.err != nil {
		b.value = ""
		return "", false, b.err
	}
	return b.value, stop != nil, nil
}

// Stop stops the service this process started, if any.
func (b *Binary) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	stop := b.stop
	b.stop = nil
	if stop == nil {
		return nil
	}
	return stop()
}
