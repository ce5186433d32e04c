package gatewaytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(`# HELP a_total A.
# TYPE a_total counter
a_total{route="x",table="d.t"} 2
a_total{route="y",table="d.t"} 3
b 1.5e+06

`))
	require.NoError(t, err)
	assert.Equal(t, 5.0, m.Sum("a_total"))
	assert.Equal(t, 3.0, m.Sum("a_total", `route="y"`, `table="d.t"`))
	assert.Zero(t, m.Sum("a_total", `route="z"`))
	assert.Equal(t, 1.5e6, m.Sum("b"))
	assert.True(t, m.Has("a_total"))
	assert.False(t, m.Has("a"))
	assert.Equal(t, []string{`a_total{route="x",table="d.t"} 2`, `a_total{route="y",table="d.t"} 3`}, m.Series("a_total"))

	_, err = ParseMetrics(strings.NewReader("novalue\n"))
	assert.Error(t, err)
}

func TestConfigYAML(t *testing.T) {
	var got struct {
		Listeners []struct{ Name, Bind, Advertised string }
		Fluss     map[string]any
		Writer    map[string]string
		Admin     struct{ Address string }
		Logging   map[string]string
		Shutdown  map[string]string
		Routes    []struct{ Topic, Table string }
	}
	routes := "  - topic: a\n    table: d.a\n"
	require.NoError(t, yaml.Unmarshal([]byte(Config{Bootstrap: "127.0.0.1:9123", Routes: routes}.YAML(1000, 1001)), &got))
	require.Len(t, got.Listeners, 1)
	assert.Equal(t, "127.0.0.1:1000", got.Listeners[0].Advertised)
	assert.Equal(t, map[string]any{"bootstrap": []any{"127.0.0.1:9123"}}, got.Fluss)
	assert.Nil(t, got.Writer)
	assert.Nil(t, got.Shutdown)
	assert.Equal(t, map[string]string{"format": "text"}, got.Logging)
	assert.Equal(t, "127.0.0.1:1001", got.Admin.Address)
	require.Len(t, got.Routes, 1)

	full := Config{Bootstrap: "h:1", Routes: routes, RequestTimeout: "30s", DialTimeout: "10s", Linger: "5ms",
		BatchSize: "16KiB", BufferMemory: "64KiB", DeliveryTimeout: "1m", LogLevel: "info", Deadline: "30s"}
	require.NoError(t, yaml.Unmarshal([]byte(full.YAML(1, 2)), &got))
	assert.Equal(t, "30s", got.Fluss["request_timeout"])
	assert.Equal(t, "10s", got.Fluss["dial_timeout"])
	assert.Equal(t, map[string]string{"linger": "5ms", "batch_size": "16KiB", "buffer_memory": "64KiB", "delivery_timeout": "1m"}, got.Writer)
	assert.Equal(t, map[string]string{"level": "info", "format": "text"}, got.Logging)
	assert.Equal(t, map[string]string{"deadline": "30s"}, got.Shutdown)
}

func TestModuleRootSkipsNestedModules(t *testing.T) {
	root, err := ModuleRoot()
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(root, "cmd", "gateway", "main.go"))

	nested := filepath.Join(t.TempDir(), "compat")
	require.NoError(t, os.MkdirAll(nested, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module "+ModulePath+"/compat\n"), 0o600))
	assert.False(t, declaresModule(filepath.Join(nested, "go.mod")))
	assert.True(t, declaresModule(filepath.Join(root, "go.mod")))
}
