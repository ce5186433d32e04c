package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// javaWriter writes a run's rows through Fluss's own Java client
// (java/FlussAppendBench.java against the self-contained fluss-client jar):
// what a user would otherwise run to put these rows into Fluss, doing the
// same Arrow and ZSTD work as the gateway's writer.
type javaWriter struct {
	java     string
	jar      string
	src      string
	payloads string // the generator's payloads, one per line
}

// javaClientVersion is the fluss-client the comparison runs: the version of
// the local cluster.
const javaClientVersion = "0.9.1-incubating"

// fetchClientJar is the path of the self-contained fluss-client jar
// (scripts/fluss-local.sh fetch-client downloads it once into .cache).
func fetchClientJar(ctx context.Context, root string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(root, "scripts", "fluss-local.sh"), "fetch-client", "-v", javaClientVersion).Output()
	if err != nil {
		return "", fmt.Errorf("fetch fluss-client %s: %w", javaClientVersion, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// newJavaWriter fetches the client jar (scripts/fluss-local.sh fetch-client,
// cached under .cache) and writes gen's payloads into dir.
func newJavaWriter(ctx context.Context, o *options, root, dir string, gen *generator) (*javaWriter, error) {
	jar, err := fetchClientJar(ctx, root)
	if err != nil {
		return nil, err
	}
	jw := &javaWriter{
		java:     o.java,
		jar:      jar,
		src:      filepath.Join(root, "tools", "gateway-bench", "java", "FlussAppendBench.java"),
		payloads: filepath.Join(dir, "payloads.txt"),
	}
	var b bytes.Buffer
	for _, p := range gen.payloads {
		b.Write(p)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(jw.payloads, b.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("write payloads: %w", err)
	}
	return jw, nil
}

// javaResult is what the Java writer reported, and the Fluss servers' CPU
// while it ran.
type javaResult struct {
	rows     int
	secs     float64
	cpu      time.Duration // the JVM, writing and flushing only
	flussCPU time.Duration // the -fluss-pids from the JVM's start to its exit
}

func (j *javaResult) rate() float64 { return float64(j.rows) / j.secs }

// write writes rows 0..n-1 round-robin into tables (db.table names).
func (jw *javaWriter) write(ctx context.Context, o *options, tables []string, n int) (*javaResult, error) {
	// Arrow's memory access needs java.nio open (the Fluss servers run so too).
	cmd := exec.CommandContext(ctx, jw.java, "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
		"-cp", jw.jar, jw.src, o.bootstrap, strings.Join(tables, ","), fmt.Sprint(n), jw.payloads)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	flussBefore := sumCPU(o.flussPIDs)
	out, err := cmd.Output()
	flussAfter := sumCPU(o.flussPIDs)
	if err != nil {
		return nil, fmt.Errorf("java writer: %w\n%s", err, tail(stderr.String(), 2000))
	}
	r := &javaResult{flussCPU: flussAfter - flussBefore}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var cpu float64
		if _, err := fmt.Sscanf(sc.Text(), "rows=%d secs=%f cpu_secs=%f", &r.rows, &r.secs, &cpu); err == nil {
			r.cpu = time.Duration(cpu * float64(time.Second))
			return r, nil
		}
	}
	return nil, fmt.Errorf("java writer printed no result line:\n%s", tail(string(out)+stderr.String(), 2000))
}
