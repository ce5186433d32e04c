package registrytest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeScript records the script calls and answers start with out.
type fakeScript struct {
	calls [][]string
	out   string
	err   error
}

func (f *fakeScript) run(_ context.Context, _ string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, args)
	if args[0] == "start" {
		return []byte(f.out), f.err
	}
	return nil, nil
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestEnvURLIsProbedAndUsed(t *testing.T) {
	f := &fakeScript{}
	var probed []string
	b := newBinaryRegistry(envOf(map[string]string{EnvURL: " http://127.0.0.1:8081/apis/ccompat/v7/ "}), 42, f.run,
		func(u string) error { probed = append(probed, u); return nil })
	u, started, err := b.url()
	require.NoError(t, err)
	assert.False(t, started)
	assert.Equal(t, "http://127.0.0.1:8081/apis/ccompat/v7", u)
	assert.Equal(t, []string{u}, probed)
	assert.Empty(t, f.calls, "no registry started")
	require.NoError(t, b.stop())
	assert.Empty(t, f.calls, "nothing to stop")
}

func TestEnvURLNotAnsweringFails(t *testing.T) {
	b := newBinaryRegistry(envOf(map[string]string{EnvURL: "http://127.0.0.1:1/apis/ccompat/v7"}), 42, (&fakeScript{}).run,
		func(string) error { return errors.New("connection refused") })
	_, _, err := b.url()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not answer: connection refused")
	_, _, err2 := b.url()
	assert.Equal(t, err, err2, "the failure is remembered")
}

func TestStartsOnceAndStopsAtMain(t *testing.T) {
	script := filepath.Join(t.TempDir(), "registry-local.sh")
	require.NoError(t, os.WriteFile(script, nil, 0o755))
	f := &fakeScript{out: "SCHEMA_REGISTRY_URL=http://127.0.0.1:23456/apis/ccompat/v7\n"}
	b := newBinaryRegistry(envOf(map[string]string{EnvScript: script}), 42, f.run,
		func(string) error { t.Fatal("no probe of a started registry"); return nil })
	code := b.main(func() int {
		u, started, err := b.url()
		require.NoError(t, err)
		assert.True(t, started)
		assert.Equal(t, "http://127.0.0.1:23456/apis/ccompat/v7", u)
		_, started, _ = b.url()
		assert.False(t, started)
		return 0
	})
	assert.Equal(t, 0, code)
	assert.Equal(t, [][]string{{"start", "-s", "gotest-42", "-o", "42"}, {"stop", "-s", "gotest-42"}}, f.calls)
}

func TestStartFailureSaysWhy(t *testing.T) {
	script := filepath.Join(t.TempDir(), "registry-local.sh")
	require.NoError(t, os.WriteFile(script, nil, 0o755))
	f := &fakeScript{err: errors.New("exit status 1\nregistry-local: error: no Java 21+")}
	b := newBinaryRegistry(envOf(map[string]string{EnvScript: script}), 42, f.run, nil)
	_, _, err := b.url()
	require.Error(t, err)
	assert.Contains(t, err.Error(), EnvURL+" is unset")
	assert.Contains(t, err.Error(), "no Java 21+")
	require.NoError(t, b.stop())
	assert.Len(t, f.calls, 1, "nothing started, nothing stopped")
}

func TestParseURL(t *testing.T) {
	u, err := parseURL([]byte("noise\nSCHEMA_REGISTRY_URL=http://127.0.0.1:1234/apis/ccompat/v7\n"))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:1234/apis/ccompat/v7", u)
	_, err = parseURL([]byte("SCHEMA_REGISTRY_URL=127.0.0.1:1234\n"))
	assert.Error(t, err)
	_, err = parseURL(nil)
	assert.Error(t, err)
}

func TestParseProcAddr(t *testing.T) {
	ip, port, err := parseProcAddr("0100007F:1F90")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", ip.String())
	assert.Equal(t, 8080, port)
	ip, port, err = parseProcAddr("0000000000000000FFFF00000100007F:5DC5")
	require.NoError(t, err)
	assert.True(t, ip.IsLoopback(), ip.String())
	assert.Equal(t, 24005, port)
	ip, _, err = parseProcAddr("00000000000000000000000000000000:0050")
	require.NoError(t, err)
	assert.False(t, ip.IsLoopback())
	ip, _, err = parseProcAddr("00000000000000000000000001000000:0050")
	require.NoError(t, err)
	assert.True(t, ip.IsLoopback(), "::1, got %s", ip)
	_, _, err = parseProcAddr("zz:1")
	assert.Error(t, err)
}

func TestFindScriptWalksUp(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, scriptRelPath), nil, 0o755))
	deep := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	p, err := findScript(envOf(nil), deep)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, scriptRelPath), p)
	_, err = findScript(envOf(nil), t.TempDir())
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), EnvURL), err.Error())
}
