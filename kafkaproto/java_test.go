package kafkaproto_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestJavaKafkaClients drives the Java client (kafka-clients from Maven
// Central, resolved by mvn) with its defaults: idempotent, acks=all, each
// codec. Skipped with -short or without mvn/javac/java (except in CI, where
// the missing tool is a failure).
func TestJavaKafkaClients(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: skipping the Java client")
	}
	for _, tool := range []string{"mvn", "javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed: CI must run the Java client", tool)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	src, err := filepath.Abs(filepath.Join("testdata", "java"))
	require.NoError(t, err)
	for _, version := range []string{"3.9.1", "4.1.0"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // JVM start-up and maven on a busy box
			defer cancel()
			dir := t.TempDir()
			cpFile := filepath.Join(dir, "classpath.txt")
			out, err := exec.CommandContext(ctx, "mvn", "-q", "-f", filepath.Join(src, "pom.xml"),
				"dependency:build-classpath", "-Dkafka.version="+version, "-Dmdep.outputFile="+cpFile).CombinedOutput()
			require.NoError(t, err, "resolve kafka-clients %s with maven: %s", version, out)
			cp, err := os.ReadFile(cpFile)
			require.NoError(t, err)
			classpath := strings.TrimSpace(string(cp))
			out, err = exec.CommandContext(ctx, "javac", "-d", dir, "-cp", classpath, filepath.Join(src, "ProduceMain.java")).CombinedOutput()
			require.NoError(t, err, "javac: %s", out)

			env := kafkatest.StartServer(t, kafkaproto.Config{})
			codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
			for _, c := range codecs {
				env.Topics.Set("java-"+c, 2)
			}
			const n = 20
			cmd := exec.CommandContext(ctx, "java", "-cp", dir+string(os.PathListSeparator)+classpath, "ProduceMain", env.Addr, strconv.Itoa(n))
			cmd.Args = append(cmd.Args, codecs...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			require.NoError(t, err, "java client: %s", stderr.String())

			acked := 0
			sc := bufio.NewScanner(bytes.NewReader(stdout))
			for sc.Scan() {
				f := strings.SplitN(sc.Text(), " ", 4)
				require.Len(t, f, 4, "line %q", sc.Text())
				partition, err := strconv.Atoi(f[1])
				require.NoError(t, err)
				offset, err := strconv.Atoi(f[2])
				require.NoError(t, err)
				log := env.Sink.Records(f[0], int32(partition))
				require.Less(t, offset, len(log), "%s/%d offset %d", f[0], partition, offset)
				assert.Equal(t, f[3], string(log[offset].Value))
				require.Len(t, log[offset].Headers, 1)
				acked++
			}
			assert.Equal(t, n*len(codecs), acked)
			assert.Equal(t, n*len(codecs), env.Sink.TotalRecords(), "each record written once")
			want := map[string]kafkaproto.Codec{"none": kafkaproto.CodecNone, "gzip": kafkaproto.CodecGzip,
				"snappy": kafkaproto.CodecSnappy, "lz4": kafkaproto.CodecLZ4, "zstd": kafkaproto.CodecZstd}
			for _, b := range env.Sink.Batches() {
				assert.Equal(t, want[strings.TrimPrefix(b.Produce.Topic, "java-")], b.Produce.Codec, "topic %s", b.Produce.Topic)
				assert.GreaterOrEqual(t, b.Produce.ProducerID, int64(1), "the Java client is idempotent by default")
			}
		})
	}
}
