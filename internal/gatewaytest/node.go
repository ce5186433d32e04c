package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// KafkaJSVersion is the kafkajs [KafkaJSTxn] runs (node/package.json).
const KafkaJSVersion = "2.2.4"

type nodeBuild struct {
	once sync.Once
	dir  string
	err  error
}

var kafkaJS nodeBuild

// KafkaJSTxn installs kafkajs (node/package.json) with npm once into
// .cache/gatewaytest/node-kafkajs-* and returns the command line that runs
// node/txn.js with it; append <bootstrap> <topic> <transactional id>
// <producer name>.
func KafkaJSTxn(ctx context.Context) ([]string, error) {
	kafkaJS.once.Do(func() { kafkaJS.dir, kafkaJS.err = installKafkaJS(ctx) })
	if kafkaJS.err != nil {
		return nil, kafkaJS.err
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	return []string{"env", "NODE_PATH=" + filepath.Join(kafkaJS.dir, "node_modules"), "node",
		filepath.Join(root, "internal", "gatewaytest", "node", "txn.js")}, nil
}

// installKafkaJS installs kafkajs into the cache; the script finds it
// through NODE_PATH.
func installKafkaJS(ctx context.Context) (string, error) {
	for _, tool := range []string{"node", "npm", "env"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s not installed: %w", tool, err)
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "gatewaytest", "node-kafkajs-"+KafkaJSVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs", "package.json")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	pkg, err := os.ReadFile(filepath.Join(root, "internal", "gatewaytest", "node", "package.json"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--no-package-lock")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install kafkajs %s: %w\n%s", KafkaJSVersion, err, out)
	}
	return dir, nil
}
