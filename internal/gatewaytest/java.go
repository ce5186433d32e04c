package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// JavaVersion is the kafka-clients version [JavaLoad] compiles against.
const JavaVersion = "4.1.0"

// JavaTools are the programs [JavaLoad] needs.
var JavaTools = []string{"mvn", "javac", "java"}

type javaBuild struct {
	once sync.Once
	args []string
	err  error
}

var javaLoad javaBuild

// JavaLoad compiles the Java programs of this package (java/*.java,
// kafka-clients [JavaVersion] resolved by mvn into ~/.m2) once per process
// into .cache/gatewaytest/java and returns the command line that runs the
// load producer (java/LoadMain.java); append <bootstrap> <topic> <producer
// name> <records per second>.
func JavaLoad(ctx context.Context) ([]string, error) { return JavaMain(ctx, "LoadMain") }

// JavaMain is [JavaLoad] for any program of java/: the command line that
// runs class main.
func JavaMain(ctx context.Context, main string) ([]string, error) {
	javaLoad.once.Do(func() { javaLoad.args, javaLoad.err = buildJavaLoad(ctx) })
	if javaLoad.err != nil {
		return nil, javaLoad.err
	}
	return append(append([]string(nil), javaLoad.args...), main), nil
}

func buildJavaLoad(ctx context.Context) ([]string, error) {
	for _, tool := range JavaTools {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not installed: %w", tool, err)
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(root, "internal", "gatewaytest", "java")
	// Per process: concurrent test binaries never share a half-written class.
	dir := filepath.Join(root, ".cache", "gatewaytest", fmt.Sprintf("java-%s-%d", JavaVersion, os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cpFile := filepath.Join(dir, "classpath.txt")
	out, err := exec.CommandContext(ctx, "mvn", "-q", "-f", filepath.Join(src, "pom.xml"), "dependency:build-classpath",
		"-Dkafka.version="+JavaVersion, "-Dmdep.outputFile="+cpFile).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("resolve kafka-clients %s with maven: %w\n%s", JavaVersion, err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, err
	}
	classpath := strings.TrimSpace(string(cp))
	sources, err := filepath.Glob(filepath.Join(src, "*.java"))
	if err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, "javac", append([]string{"-d", dir, "-cp", classpath}, sources...)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac %v: %w\n%s", sources, err, out)
	}
	return []string{"java", "-Xmx256m", "-cp", dir + string(os.PathListSeparator) + classpath}, nil
}
