package localservice

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envMap(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestRunScriptReportsStderr(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "s.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho out\necho \"install it: $1\" >&2\nexit 3\n"), 0o755))
	out, err := RunScript(context.Background(), p, "maven")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "install it: maven")
	assert.Contains(t, err.Error(), "exit status 3")
	assert.Equal(t, "out\n", string(out))
}

func TestScriptFindFrom(t *testing.T) {
	t.Parallel()
	s := Script{RelPath: "scripts/x-local.sh", EnvScript: "X_SCRIPT", EnvService: "X_URL"}
	root := t.TempDir()
	want := filepath.Join(root, s.RelPath)
	require.NoError(t, os.MkdirAll(filepath.Dir(want), 0o755))
	require.NoError(t, os.WriteFile(want, nil, 0o755))
	deep := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	got, err := s.FindFrom(envMap(nil), deep)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	got, err = s.FindFrom(envMap(map[string]string{"X_SCRIPT": want}), t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = s.FindFrom(envMap(map[string]string{"X_SCRIPT": filepath.Join(root, "nope")}), root)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "X_SCRIPT")
	_, err = s.FindFrom(envMap(nil), t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set X_URL or X_SCRIPT")
}

func TestBinaryUsesEnvOnce(t *testing.T) {
	t.Parallel()
	var checked []string
	b := &Binary{Label: "t", Env: envMap(map[string]string{"X_URL": " v "}), EnvService: "X_URL",
		Check: func(raw string) (string, error) { checked = append(checked, raw); return "checked", nil },
		Start: func() (string, func() error, error) { t.Fatal("must not start"); return "", nil, nil }}
	for range 3 {
		v, started, err := b.Get()
		require.NoError(t, err)
		assert.Equal(t, "checked", v)
		assert.False(t, started)
	}
	assert.Equal(t, []string{" v "}, checked)
	assert.Equal(t, 0, b.Main(func() int { return 0 }))
	assert.True(t, b.HasMain())
}

func TestBinaryStartsOnceAndStopsInMain(t *testing.T) {
	t.Parallel()
	starts, stops := 0, 0
	b := &Binary{Label: "t", Env: envMap(map[string]string{"X_URL": "  "}), EnvService: "X_URL",
		Start: func() (string, func() error, error) {
			starts++
			return "v", func() error { stops++; return nil }, nil
		}}
	code := b.Main(func() int {
		for i := range 3 {
			v, started, err := b.Get()
			require.NoError(t, err)
			assert.Equal(t, "v", v)
			assert.Equal(t, i == 0, started, "only the first call starts")
		}
		return 0
	})
	assert.Equal(t, 0, code)
	assert.Equal(t, 1, starts)
	assert.Equal(t, 1, stops)
	require.NoError(t, b.Stop(), "stopped once")
	assert.Equal(t, 1, stops)
}

func TestBinaryRemembersFailureAndStopsWhatStarted(t *testing.T) {
	t.Parallel()
	stopped := false
	b := &Binary{Label: "t", Env: envMap(nil), EnvService: "X_URL",
		Start: func() (string, func() error, error) {
			return "ignored", func() error { stopped = true; return errors.New("boom") }, errors.New("bad output")
		}}
	for range 2 {
		v, started, err := b.Get()
		require.EqualError(t, err, "bad output")
		assert.Empty(t, v)
		assert.False(t, started)
	}
	assert.Equal(t, 1, b.Main(func() int { return 0 }), "a failed stop fails the run")
	assert.True(t, stopped)
}
