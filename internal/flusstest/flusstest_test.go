package flusstest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBootstrap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		out     string
		want    string
		wantErr string
	}{
		{name: "single line", out: "FLUSS_BOOTSTRAP=127.0.0.1:9123\n", want: "127.0.0.1:9123"},
		{name: "noise around", out: "hello\n  FLUSS_BOOTSTRAP=127.0.0.1:20001  \nbye\n", want: "127.0.0.1:20001"},
		{name: "no newline", out: "FLUSS_BOOTSTRAP=localhost:1", want: "localhost:1"},
		{name: "missing", out: "nothing here\n", wantErr: "no FLUSS_BOOTSTRAP= line"},
		{name: "empty", out: "", wantErr: "no FLUSS_BOOTSTRAP= line"},
		{name: "no port", out: "FLUSS_BOOTSTRAP=127.0.0.1\n", wantErr: "want host:port"},
		{name: "bad port", out: "FLUSS_BOOTSTRAP=127.0.0.1:0\n", wantErr: "bad port"},
		{name: "no host", out: "FLUSS_BOOTSTRAP=:9123\n", wantErr: "want host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseBootstrap([]byte(tt.out))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFindScript(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	script := filepath.Join(root, scriptRelPath)
	require.NoError(t, os.MkdirAll(filepath.Dir(script), 0o755))
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	deep := filepath.Join(root, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	elsewhere := t.TempDir()
	noEnv := func(string) (string, bool) { return "", false }
	envWith := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == EnvScript {
				return v, true
			}
			return "", false
		}
	}

	tests := []struct {
		name    string
		env     func(string) (string, bool)
		dir     string
		want    string
		wantErr string
	}{
		{name: "from root", env: noEnv, dir: root, want: script},
		{name: "walks up", env: noEnv, dir: deep, want: script},
		{name: "env override", env: envWith(script), dir: elsewhere, want: script},
		{name: "env override missing", env: envWith(filepath.Join(elsewhere, "nope.sh")), dir: root, wantErr: EnvScript},
		{name: "not found", env: noEnv, dir: elsewhere, wantErr: "set FLUSS_BOOTSTRAP or FLUSS_LOCAL_SCRIPT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := findScript(tt.env, tt.dir)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestClusterName(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	tests := []struct {
		name   string
		prefix string
		want   string
	}{
		{name: "plain", prefix: "bin", want: "gotest-bin-42-0"},
		{name: "subtest slashes", prefix: "TestX/case_1", want: "gotest-TestX_case_1-42-7"},
		{name: "spaces and unicode", prefix: "a b\u00e9", want: "gotest-a_b_-42-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			seq := int64(7)
			if tt.prefix == "bin" {
				seq = 0
			}
			got := clusterName(tt.prefix, 42, seq)
			assert.Equal(t, tt.want, got)
			assert.Regexp(t, valid, got)
		})
	}
	long := clusterName(strings.Repeat("x", 200), 1, 1)
	assert.LessOrEqual(t, len(long), 60, "long test names are cut")
	assert.NotEqual(t, clusterName("t", 1, 1), clusterName("t", 1, 2))
}

// fakeScript records the script invocations and answers them.
type fakeScript struct {
	mu      sync.Mutex
	calls   [][]string
	answers map[string]func(args []string) ([]byte, error) // by command
}

func (f *fakeScript) run(_ context.Context, _ string, args ...string) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, append([]string(nil), args...))
	answer := f.answers[args[0]]
	f.mu.Unlock()
	if answer == nil {
		return nil, errors.New("unexpected command " + args[0])
	}
	return answer(args)
}

func (f *fakeScript) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func scriptFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fluss-local.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	return p
}

func TestBinaryClusterUsesEnvBootstrap(t *testing.T) {
	t.Parallel()
	fake := &fakeScript{}
	var dialed []string
	b := newBinaryCluster(envMap(map[string]string{EnvBootstrap: " 127.0.0.1:9999 "}), 42, fake.run,
		func(addr string) error { dialed = append(dialed, addr); return nil })
	for range 3 {
		addr, started, err := b.bootstrap()
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1:9999", addr)
		assert.False(t, started)
	}
	assert.Equal(t, []string{"127.0.0.1:9999"}, dialed, "checked once")
	assert.Empty(t, fake.commands(), "no cluster started")
	assert.Equal(t, 0, b.main(func() int { return 0 }, nil), "nothing to stop")
	assert.Empty(t, fake.commands())
}

func TestBinaryClusterEnvBootstrapUnreachable(t *testing.T) {
	t.Parallel()
	b := newBinaryCluster(envMap(map[string]string{EnvBootstrap: "127.0.0.1:1"}), 42, (&fakeScript{}).run,
		func(string) error { return errors.New("connection refused") })
	_, _, err := b.bootstrap()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "FLUSS_BOOTSTRAP=127.0.0.1:1")
	assert.Contains(t, err.Error(), "connection refused")
}

func TestBinaryClusterStartsOnceAndStops(t *testing.T) {
	t.Parallel()
	fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
		"start": func([]string) ([]byte, error) { return []byte("FLUSS_BOOTSTRAP=127.0.0.1:4567\n"), nil },
		"stop":  func([]string) ([]byte, error) { return nil, nil },
	}}
	env := envMap(map[string]string{EnvScript: scriptFile(t), EnvVersion: "0.9.1-incubating"})
	b := newBinaryCluster(env, 42, fake.run, func(string) error { return errors.New("must not dial") })

	code := b.main(func() int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		startedCount := 0
		for range 8 {
			wg.Go(func() {
				addr, started, err := b.bootstrap()
				assert.NoError(t, err)
				assert.Equal(t, "127.0.0.1:4567", addr)
				if started {
					mu.Lock()
					startedCount++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, startedCount)
		return 0
	}, []Option{TabletServers(3)})

	assert.Equal(t, 0, code)
	assert.Equal(t, []string{
		"start -s gotest-bin-42-0 -n 3 -o 42 -v 0.9.1-incubating",
		"stop -s gotest-bin-42-0",
	}, fake.commands())
}

func TestBinaryClusterStopFailureFailsRun(t *testing.T) {
	t.Parallel()
	fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
		"start": func([]string) ([]byte, error) { return []byte("FLUSS_BOOTSTRAP=127.0.0.1:4567\n"), nil },
		"stop":  func([]string) ([]byte, error) { return nil, errors.New("boom") },
	}}
	b := newBinaryCluster(envMap(map[string]string{EnvScript: scriptFile(t)}), 42, fake.run, nil)
	code := b.main(func() int {
		_, _, err := b.bootstrap()
		assert.NoError(t, err)
		return 0
	}, nil)
	assert.Equal(t, 1, code)
}

func TestBinaryClusterRemembersStartFailure(t *testing.T) {
	t.Parallel()
	fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
		"start": func([]string) ([]byte, error) { return nil, errors.New("a JDK 17 is required") },
	}}
	b := newBinaryCluster(envMap(map[string]string{EnvScript: scriptFile(t)}), 42, fake.run, nil)
	for range 3 {
		_, _, err := b.bootstrap()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "a JDK 17 is required")
		assert.Contains(t, err.Error(), "FLUSS_BOOTSTRAP is unset")
	}
	assert.Len(t, fake.commands(), 1, "start is tried once")
	assert.Equal(t, 0, b.main(func() int { return 0 }, nil), "nothing to stop")
}

func TestBinaryClusterControlled(t *testing.T) {
	t.Parallel()
	okDial := func(string) error { return nil }
	bootstrapAnswer := func(addr string) map[string]func([]string) ([]byte, error) {
		return map[string]func([]string) ([]byte, error){
			"bootstrap":      func([]string) ([]byte, error) { return []byte("FLUSS_BOOTSTRAP=" + addr + "\n"), nil },
			"restart-tablet": func([]string) ([]byte, error) { return nil, nil },
		}
	}
	tests := []struct {
		name     string
		env      map[string]string
		answers  map[string]func([]string) ([]byte, error)
		wantErr  string
		wantCmds []string
	}{
		{
			name:    "foreign cluster",
			env:     map[string]string{EnvBootstrap: "127.0.0.1:9123"},
			wantErr: "set FLUSS_LOCAL_CLUSTER",
		},
		{
			name:     "named cluster",
			env:      map[string]string{EnvBootstrap: "127.0.0.1:9123", EnvCluster: "ci"},
			answers:  bootstrapAnswer("127.0.0.1:9123"),
			wantCmds: []string{"bootstrap -s ci", "restart-tablet -s ci 2"},
		},
		{
			name:     "named cluster elsewhere",
			env:      map[string]string{EnvBootstrap: "127.0.0.1:9123", EnvCluster: "ci"},
			answers:  bootstrapAnswer("127.0.0.1:5555"),
			wantErr:  "has bootstrap 127.0.0.1:5555",
			wantCmds: []string{"bootstrap -s ci"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.env[EnvScript] = scriptFile(t)
			fake := &fakeScript{answers: tt.answers}
			b := newBinaryCluster(envMap(tt.env), 42, fake.run, okDial)
			c, err := b.controlled()
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			} else {
				require.NoError(t, err)
				assert.Equal(t, "ci", c.Name())
				require.NoError(t, c.RestartTabletServer(context.Background(), 2))
			}
			assert.Equal(t, tt.wantCmds, fake.commands())
		})
	}
}

// TestRunScriptOutputParses: the script's stdout, as runScript returns it,
// holds the bootstrap line (stderr reporting is tested in localservice).
func TestRunScriptOutputParses(t *testing.T) {
	t.Parallel()
	ok := filepath.Join(t.TempDir(), "ok.sh")
	require.NoError(t, os.WriteFile(ok, []byte("#!/bin/sh\necho FLUSS_BOOTSTRAP=127.0.0.1:7\n"), 0o755))
	out, err := runScript(context.Background(), ok)
	require.NoError(t, err)
	addr, err := parseBootstrap(out)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7", addr)
}

func TestDialCheck(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	require.NoError(t, dialCheck(l.Addr().String()))
	require.NoError(t, dialCheck(closedAddr+","+l.Addr().String()), "first reachable of a list")
	err = dialCheck(closedAddr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not reachable")
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	var v map[string]any
	require.NoError(t, decodeJSON([]byte(`{"l":9007199254740993}`+"\n"), &v))
	assert.Equal(t, "9007199254740993", v["l"].(interface{ String() string }).String(), "int64 kept exact")
	require.Error(t, decodeJSON([]byte(`{"a":1}{"b":2}`), &v))
	require.Error(t, decodeJSON([]byte(`not json`), &v))
}

func TestServerJar(t *testing.T) {
	t.Parallel()
	lib := t.TempDir()
	jar := filepath.Join(lib, "fluss-server-0.9.1-incubating.jar")
	require.NoError(t, os.WriteFile(jar, nil, 0o644))
	empty := t.TempDir()
	tests := []struct {
		name    string
		version string
		lib     string
		want    string
		wantCmd string
		wantErr string
	}{
		{name: "default version", lib: lib, want: jar, wantCmd: "fetch"},
		{name: "explicit version", version: "0.9.1-incubating", lib: lib, want: jar, wantCmd: "fetch -v 0.9.1-incubating"},
		{name: "no jar", lib: empty, wantCmd: "fetch", wantErr: "want one fluss-server-*.jar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
				"fetch": func([]string) ([]byte, error) { return []byte(tt.lib + "\n"), nil },
			}}
			got, err := serverJar(context.Background(), fake.run, "s", tt.version)
			assert.Equal(t, []string{tt.wantCmd}, fake.commands())
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
