package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KafkaTool returns the command line that runs one of Kafka's command-line
// tools, class main of org.apache.kafka:kafka-tools [JavaVersion] (e.g.
// "org.apache.kafka.tools.TransactionsCommand", kafka-transactions.sh),
// resolved by mvn from Maven Central into ~/.m2 (kafkatools/pom.xml).
// Each call resolves the classpath again: call it once per test.
func KafkaTool(ctx context.Context, main string) ([]string, error) {
	for _, tool := range []string{"mvn", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not installed: %w", tool, err)
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kafka-tools-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cpFile := filepath.Join(dir, "classpath.txt")
	out, err := exec.CommandContext(ctx, "mvn", "-q", "-f", filepath.Join(root, "internal", "gatewaytest", "kafkatools", "pom.xml"),
		"dependency:build-classpath", "-Dkafka.version="+JavaVersion, "-Dmdep.outputFile="+cpFile).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("resolve kafka-tools %s with maven: %w\n%s", JavaVersion, err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, err
	}
	return []string{"java", "-Xmx256m", "-cp", strings.TrimSpace(string(cp)), main}, nil
}
