package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
)

// FlinkVersion and FlinkKafkaConnector are what [FlinkTxnJob] runs: the
// Flink 1.20 line and the Kafka connector issue 20 names.
const (
	FlinkVersion        = "1.20.3"
	FlinkKafkaConnector = "3.4.0-1.20"
)

// FlinkJVMOpens are the module openings Flink (and Arrow) need on Java 17,
// as Flink's own start scripts pass them.
func FlinkJVMOpens() []string {
	return []string{
		"--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
		"--add-opens=java.base/java.lang.invoke=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
		"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
		"--add-opens=java.base/java.net=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
		"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.time=ALL-UNNAMED",
		"--add-opens=java.base/java.text=ALL-UNNAMED", "--add-opens=java.base/java.math=ALL-UNNAMED",
	}
}

type flinkBuild struct {
	once sync.Once
	args []string
	err  error
}

// FlinkTxnJob resolves Flink and its Kafka connector (flink/pom.xml) from
// Maven Central once into .cache/gatewaytest/flink-*, compiles
// flink/FlinkTxnJob.java once per process (Flink loads its functions by
// class name, so source-file mode will not do) and returns the command
// line that runs it; append <bootstrap> <topic> <transactional id prefix>
// <records> <parallelism>.
func FlinkTxnJob(ctx context.Context) ([]string, error) {
	b := &flinkTxn
	b.once.Do(func() { b.args, b.err = buildFlinkTxnJob(ctx) })
	return slices.Clone(b.args), b.err
}

func buildFlinkTxnJob(ctx context.Context) ([]string, error) {
	lib, err := resolveFlink(ctx)
	if err != nil {
		return nil, err
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	classes := filepath.Join(root, ".cache", "gatewaytest", fmt.Sprintf("flink-job-%d", os.Getpid()))
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return nil, err
	}
	cp := filepath.Join(lib, "*")
	src := filepath.Join(root, "internal", "gatewaytest", "flink", "FlinkTxnJob.java")
	if out, err := exec.CommandContext(ctx, "javac", "-d", classes, "-cp", cp, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac %s: %w\n%s", src, err, out)
	}
	args := append([]string{"java", "-Xmx512m"}, FlinkJVMOpens()...)
	return append(args, "-cp", classes+string(os.PathListSeparator)+cp, "FlinkTxnJob"), nil
}

var flinkTxn flinkBuild

func resolveFlink(ctx context.Context) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return resolveFlinkPom(ctx, filepath.Join(root, "internal", "gatewaytest", "flink", "pom.xml"), FlinkVersion, FlinkKafkaConnector)
}

// Flink2Version and Flink2KafkaConnector are what [Flink2TxnJob] runs: the
// first connector line for Flink 2 (4.0.x, which brings
// TransactionNamingStrategy.POOLING and its LISTING abort strategy) and
// the Flink it is built against.
const (
	Flink2Version        = "2.0.0"
	Flink2KafkaConnector = "4.0.1-2.0"
)

// Flink2LogOpts make slf4j-simple (flink2/pom.xml) print, on stdout, the
// Kafka sink's recovery lines ("Aborting lingering transactions ...",
// "Found N open transactions for subtask S: [...]") and errors only
// otherwise.
func Flink2LogOpts() []string {
	return []string{
		"-Dorg.slf4j.simpleLogger.logFile=System.out",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
		"-Dorg.slf4j.simpleLogger.log.org.apache.flink.connector.kafka.sink.ExactlyOnceKafkaWriter=info",
		"-Dorg.slf4j.simpleLogger.log.org.apache.flink.connector.kafka.sink.internal.TransactionAbortStrategyImpl=info",
	}
}

var flink2Txn flinkBuild

// Flink2TxnJob resolves Flink 2.0 and flink-connector-kafka 4.0.1-2.0
// (flink2/pom.xml) from Maven Central once into .cache/gatewaytest/flink-*,
// compiles flink2/Flink2TxnJob.java once per process and returns the
// command line that runs it; append <bootstrap> <topic> <transactional id
// prefix> <records> <parallelism> <checkpoint dir URI> [<checkpoint to
// restore>].
func Flink2TxnJob(ctx context.Context) ([]string, error) {
	b := &flink2Txn
	b.once.Do(func() { b.args, b.err = buildFlink2TxnJob(ctx) })
	return slices.Clone(b.args), b.err
}

func buildFlink2TxnJob(ctx context.Context) ([]string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "internal", "gatewaytest", "flink2")
	lib, err := resolveFlinkPom(ctx, filepath.Join(dir, "pom.xml"), Flink2Version, Flink2KafkaConnector)
	if err != nil {
		return nil, err
	}
	classes := filepath.Join(root, ".cache", "gatewaytest", fmt.Sprintf("flink2-job-%d", os.Getpid()))
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return nil, err
	}
	cp := filepath.Join(lib, "*")
	src := filepath.Join(dir, "Flink2TxnJob.java")
	if out, err := exec.CommandContext(ctx, "javac", "-d", classes, "-cp", cp, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac %s: %w\n%s", src, err, out)
	}
	args := append([]string{"java", "-Xmx768m"}, FlinkJVMOpens()...)
	args = append(args, Flink2LogOpts()...)
	return append(args, "-cp", classes+string(os.PathListSeparator)+cp, "Flink2TxnJob"), nil
}

// resolveFlinkPom resolves the runtime dependencies of pom, with -Dflink.version and -Dkafka.connector.version,
// copied once into .cache/gatewaytest/flink-<flink>_<connector>.
func resolveFlinkPom(ctx context.Context, pom, flinkVersion, connector string) (string, error) {
	for _, tool := range []string{"mvn", "javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s not installed: %w", tool, err)
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	lib := filepath.Join(root, ".cache", "gatewaytest", "flink-"+flinkVersion+"_"+connector)
	if jars, _ := filepath.Glob(filepath.Join(lib, "flink-connector-kafka-*.jar")); len(jars) > 0 {
		return lib, nil
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(lib), "flink.tmp.")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out, err := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", pom,
		"org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies", "-DincludeScope=runtime",
		"-Dflink.version="+flinkVersion, "-Dkafka.connector.version="+connector,
		"-DoutputDirectory="+filepath.Join(tmp, "jars")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("resolve Flink %s and flink-connector-kafka %s with maven: %w\n%s", flinkVersion, connector, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "jars"), lib); err != nil {
		if jars, _ := filepath.Glob(filepath.Join(lib, "flink-connector-kafka-*.jar")); len(jars) == 0 {
			return "", fmt.Errorf("publish %s: %w", lib, err)
		}
	}
	return lib, nil
}
