package gatewaytest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ModulePath is the module whose root [ModuleRoot] looks for.
const ModulePath = "github.com/fluss-kafka/gateway"

// ModuleRoot returns the root of the gateway module: the first directory,
// from the working directory up, whose go.mod declares [ModulePath] (nested
// modules such as compat/ are passed over).
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if declaresModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or any parent directory: run from the repository", ModulePath, wd)
		}
		dir = parent
	}
}

func declaresModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == ModulePath
		}
	}
	return false
}

type build struct {
	once sync.Once
	bin  string
	err  error
}

var builds [2]build // [0] plain, [1] -race

// Binary builds ./cmd/gateway once per process, with the race detector when
// race is set, into .cache/gatewaytest (git-ignored) under the module root,
// and returns its path. Later calls return the first call's result.
func Binary(race bool) (string, error) {
	b := &builds[0]
	if race {
		b = &builds[1]
	}
	b.once.Do(func() { b.bin, b.err = buildBinary(race) })
	return b.bin, b.err
}

func buildBinary(race bool) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "gatewaytest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name, args := "gateway", []string{"build"}
	if race {
		name, args = "gateway-race", append(args, "-race")
	}
	// Build under a private name, then rename: concurrent processes never
	// run a half-written file.
	tmp := filepath.Join(dir, fmt.Sprintf("%s-%d", name, os.Getpid()))
	cmd := exec.Command("go", append(args, "-o", tmp, "./cmd/gateway")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("go %s ./cmd/gateway: %w\n%s", strings.Join(args, " "), err, out)
	}
	bin := filepath.Join(dir, name)
	if err := os.Rename(tmp, bin); err != nil {
		return "", errors.Join(err, os.Remove(tmp))
	}
	return bin, nil
}
