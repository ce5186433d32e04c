package flusstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	venvScriptRelPath = "scripts/pyfluss-venv.sh"
	flussPyRelPath    = "tools/pyfluss/flusspy.py"
	venvTimeout       = 10 * time.Minute
	// flussPyTimeout bounds one flusspy run. e2e.TestFlussFaults reads
	// back some 2.5 million rows in one scan-log; on the CI machine that
	// passed 3 minutes once (the process was killed, the run failed).
	flussPyTimeout = 8 * time.Minute
)

// pyfluss is the binary's venv with the pinned pyfluss client, made once.
type pyfluss struct {
	once   sync.Once
	python string
	cli    string
	err    error
}

var sharedPy pyfluss

// PyFluss runs tools/pyfluss/flusspy.py COMMAND --bootstrap BOOTSTRAP ARGS...
// with the pinned pyfluss client, the independent reader/writer of the e2e
// tests, and returns its stdout (one JSON object; see the script's doc for
// the subcommands and the value representation). The venv is created by
// scripts/pyfluss-venv.sh on first use (about half a minute, then cached in
// .cache/venv). It fails tb with the script's stderr when the command fails.
func PyFluss(tb testing.TB, bootstrap, command string, args ...string) []byte {
	tb.Helper()
	sharedPy.once.Do(func() { sharedPy.python, sharedPy.cli, sharedPy.err = preparePyFluss() })
	if sharedPy.err != nil {
		tb.Fatalf("pyfluss: %v", sharedPy.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), flussPyTimeout)
	defer cancel()
	full := append([]string{sharedPy.cli, command, "--bootstrap", bootstrap}, args...)
	out, err := runScript(ctx, sharedPy.python, full...)
	if err != nil {
		tb.Fatalf("pyfluss %s: %v", command, err)
	}
	return out
}

// PyFlussJSON is [PyFluss] decoding the output into v; numbers decode as
// json.Number when v holds interfaces, so int64 values stay exact.
func PyFlussJSON(tb testing.TB, v any, bootstrap, command string, args ...string) {
	tb.Helper()
	out := PyFluss(tb, bootstrap, command, args...)
	if err := decodeJSON(out, v); err != nil {
		tb.Fatalf("pyfluss %s: decode output %q: %v", command, out, err)
	}
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// preparePyFluss makes the venv and returns its python and the CLI path.
func preparePyFluss() (python, cli string, err error) {
	script, err := shared.script()
	if err != nil {
		return "", "", err
	}
	root := filepath.Dir(filepath.Dir(script))
	ctx, cancel := context.WithTimeout(context.Background(), venvTimeout)
	defer cancel()
	out, err := runScript(ctx, filepath.Join(root, venvScriptRelPath))
	if err != nil {
		return "", "", fmt.Errorf("prepare the pyfluss venv: %w", err)
	}
	python = strings.TrimSpace(string(out))
	if python == "" {
		return "", "", fmt.Errorf("prepare the pyfluss venv: %s printed no python path", venvScriptRelPath)
	}
	return python, filepath.Join(root, flussPyRelPath), nil
}
