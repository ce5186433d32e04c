package fluss

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Differential tests against Fluss's own Java classes: testdata/java/
// FlussGolden.java and FlussLakeGolden.java, compiled once per Fluss version
// against that version's jar with its FlussAdapter (the few calls whose
// signatures changed), and run in a subtest named by the version:
//
//   - 0.9.1: the fluss-server 0.9.1-incubating jar the clusters run (it
//     bundles fluss-common and the shaded Arrow Java 15); env
//     FLUSS_SERVER_JAR, else downloaded into .cache/fluss by the cluster
//     script. Always required.
//   - 1.0.0: the self-contained fluss-client 1.0.0 jar (the release has no
//     server jar on Maven Central); env FLUSS_CLIENT_JAR, else downloaded
//     into .cache/fluss/1.0.0/client by scripts/fluss-local.sh fetch-client.
//     When it cannot be had the subtest fails in CI (env CI set) and skips,
//     saying why, elsewhere.
//
// Both need a JDK 17 (javac), the same prerequisite as the real cluster.

// javaOracle is the oracles compiled against one Fluss jar.
type javaOracle struct {
	version  string // subtest name
	maven    string // the artifact's version on Maven Central, and the jar's Implementation-Version
	artifact string // flusstest.ServerArtifact or flusstest.ClientArtifact
	adapter  string // the FlussAdapter implementation compiled with it
	line     string // what that adapter reports as its Fluss line
	jarEnv   string // env variable naming a local copy of the jar
	required bool   // a missing jar fails outside CI too

	once    sync.Once
	jar     string
	classes string
	err     error  // the oracle cannot run: fail
	skip    string // the oracle cannot run here: skip, saying why
	readyIn time.Duration
}

// javaOracles: the baseline (whose runs FLUSS_GOLDEN_UPDATE records) first.
var javaOracles = []*javaOracle{
	{version: "0.9.1", maven: "0.9.1-incubating", artifact: flusstest.ServerArtifact, adapter: "FlussAdapter09",
		line: "0.9", jarEnv: "FLUSS_SERVER_JAR", required: true},
	{version: "1.0.0", maven: "1.0.0", artifact: flusstest.ClientArtifact, adapter: "FlussAdapter10",
		line: "1.0", jarEnv: "FLUSS_CLIENT_JAR"},
}

// javaOracleSources are compiled together: the oracles and the adapter
// interface, plus the version's adapter.
var javaOracleSources = []string{"FlussGolden.java", "FlussLakeGolden.java", "FlussAdapter.java"}

// forEachJavaOracle runs f in a subtest per Fluss version, with the oracle
// ready; a version whose jar cannot be had skips (outside CI) or fails.
func forEachJavaOracle(t *testing.T, f func(t *testing.T, o *javaOracle)) {
	t.Helper()
	for _, o := range javaOracles {
		t.Run(o.version, func(t *testing.T) {
			o.ready(t)
			f(t, o)
		})
	}
}

// ready compiles the oracle once per test binary, or ends t with the reason
// it cannot run.
func (o *javaOracle) ready(t *testing.T) {
	t.Helper()
	o.once.Do(o.prepare)
	if o.skip != "" {
		t.Skip(o.skip)
	}
	require.NoError(t, o.err)
	t.Logf("Fluss %s oracle on %s, ready after %v (jar, javac, version check)", o.version, o.jar, o.readyIn.Round(time.Millisecond))
}

func (o *javaOracle) prepare() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a first download
	defer cancel()
	t0 := time.Now()
	o.jar = os.Getenv(o.jarEnv)
	if o.jar == "" {
		var err error
		o.jar, err = flusstest.FetchJar(ctx, o.artifact, o.maven)
		if err != nil {
			if fail, why := javaOracleMissing(o, os.Getenv("CI") != "", err); fail {
				o.err = errors.New(why)
			} else {
				o.skip = why
			}
			return
		}
	}
	o.classes, o.err = compileJavaOracle(ctx, o.jar, o.adapter)
	if o.err != nil {
		return
	}
	// The subtest must run the version it is named after.
	out, err := o.runJava(ctx, "", "FlussGolden", "version")
	if err != nil {
		o.err = err
		return
	}
	if want := fmt.Sprintf("fluss %s adapter %s", o.maven, o.line); strings.TrimSpace(out) != want {
		o.err = fmt.Errorf("%s with %s says %q, want %q", o.jar, o.adapter, strings.TrimSpace(out), want)
	}
	o.readyIn = time.Since(t0)
}

// javaOracleMissing says whether a jar that could not be had fails the test
// (in CI, or for the required baseline) or skips it, and why.
func javaOracleMissing(o *javaOracle, ci bool, err error) (fail bool, why string) {
	if ci || o.required {
		return true, fmt.Sprintf("Fluss %s oracle: no %s %s jar: %v", o.version, o.artifact, o.maven, err)
	}
	return false, fmt.Sprintf("Fluss %s oracle skipped: no %s %s jar (set %s to one, or let mvn reach Maven Central; CI fails here): %v",
		o.version, o.artifact, o.maven, o.jarEnv, err)
}

// compileJavaOracle compiles the oracle sources with adapter against jar into
// .cache/fluss/flussgolden-classes, in a directory named by a hash of what
// went in: later test binaries reuse it, concurrent ones do not collide.
func compileJavaOracle(ctx context.Context, jar, adapter string) (string, error) {
	srcs := append(slices.Clone(javaOracleSources), adapter+".java")
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", adapter)
	fi, err := os.Stat(jar)
	if err != nil {
		return "", fmt.Errorf("jar %s: %w", jar, err)
	}
	abs, _ := filepath.Abs(jar)
	fmt.Fprintf(h, "%s %d %d\n", abs, fi.Size(), fi.ModTime().UnixNano())
	for i, src := range srcs {
		srcs[i] = filepath.Join("testdata", "java", src)
		b, err := os.ReadFile(srcs[i])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", src, len(b))
		h.Write(b)
	}
	root, err := filepath.Abs(filepath.Join("..", ".cache", "fluss", "flussgolden-classes"))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, fmt.Sprintf("%s-%x", adapter, h.Sum(nil)[:8]))
	if _, err := os.Stat(filepath.Join(dir, "FlussGolden.class")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"-nowarn", "-d", tmp, "-cp", jar}, srcs...)
	if out, err := exec.CommandContext(ctx, "javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac %s against %s (needs JDK 17): %v\n%s", strings.Join(srcs, " "), jar, err, out)
	}
	// The first complete copy wins a race; the loser's is removed.
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "FlussGolden.class")); statErr != nil {
			return "", err
		}
	}
	return dir, nil
}

func (o *javaOracle) runJava(ctx context.Context, stdin, main string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "java", append([]string{"--add-opens=java.base/java.nio=ALL-UNNAMED",
		"-Dflussgolden.adapter=" + o.adapter, "-cp", o.classes + string(os.PathListSeparator) + o.jar, main}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("java %s %v on Fluss %s: %v: %s", main, args, o.version, err, stderr.String())
	}
	return stdout.String(), nil
}

// golden runs FlussGolden with args and stdin.
func (o *javaOracle) golden(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := o.runJava(ctx, stdin, "FlussGolden", args...)
	require.NoError(t, err)
	return out
}

// lake runs FlussLakeGolden on stdin.
func (o *javaOracle) lake(t *testing.T, stdin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := o.runJava(ctx, stdin, "FlussLakeGolden")
	require.NoError(t, err)
	return out
}

// baseline says whether o is the version golden files are recorded from.
func (o *javaOracle) baseline() bool { return o == javaOracles[0] }

// requireSameAcrossVersions: where the formats did not change, every
// version's Java prints the same bytes for the same input. outs is by
// version; versions that skipped are absent.
func requireSameAcrossVersions(t *testing.T, outs map[string]string) {
	t.Helper()
	base, ok := outs[javaOracles[0].version]
	if !ok {
		return
	}
	for v, out := range outs {
		require.Equal(t, base, out, "Fluss %s and %s differ", javaOracles[0].version, v)
	}
}

func javaOracleRows(s *Schema, seed uint64) []Row {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var rows []Row
	for i := 0; i < 40; i++ {
		nullPct := 0
		if i >= 12 {
			nullPct = 30
		}
		rows = append(rows, randomRow(r, s, nullPct))
	}
	return rows
}

// TestJavaOracleRowsKeysBucketsAndBatches: CompactedRow, IndexedRow, the
// compacted key, the hash and bucket of that key, KvRecordBatches with
// upserts and deletes and an INDEXED log batch, byte for byte against Java,
// for random rows over every scalar type. With FLUSS_GOLDEN_UPDATE=1 the run
// is recorded into testdata/java_golden.txt for the JVM-free unit test.
func TestJavaOracleRowsKeysBucketsAndBatches(t *testing.T) {
	update := os.Getenv("FLUSS_GOLDEN_UPDATE") == "1"
	seed := uint64(time.Now().UnixNano())
	if update {
		seed = 1
	}
	t.Logf("random rows from seed %d", seed)
	cases := javaOracleCases(seed)
	outs := map[string]map[string]string{} // case, version: Java's output
	forEachJavaOracle(t, func(t *testing.T, o *javaOracle) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				input := []string{javaSchemaLine(c.schema)}
				for _, row := range c.rows {
					input = append(input, javaRowLine(c.schema, row))
				}
				stdin := strings.Join(input, "\n") + "\n"
				javaOut := o.golden(t, stdin, "encode")
				goOut := goOracleOutput(t, c.schema, c.rows)
				require.Equal(t, javaOut, goOut)
				if outs[c.name] == nil {
					outs[c.name] = map[string]string{}
				}
				outs[c.name][o.version] = javaOut
				if update && o.baseline() {
					var f strings.Builder
					f.WriteString("# Generated by TestJavaOracleRowsKeysBucketsAndBatches with FLUSS_GOLDEN_UPDATE=1:\n")
					f.WriteString("# testdata/java/FlussGolden.java encode, run on fluss-server-0.9.1-incubating.jar.\n")
					f.WriteString("== input\n" + stdin + "== output\n" + javaOut)
					require.NoError(t, os.WriteFile(c.file, []byte(f.String()), 0o644))
				}
			})
		}
	})
	for _, c := range cases {
		requireSameAcrossVersions(t, outs[c.name])
	}
}

type javaOracleCase struct {
	name, file string
	schema     *Schema
	rows       []Row
}

// javaOracleCases: every scalar type with random values and nulls, and the
// common key shapes (INT, BIGINT, STRING keys) whose bucket matters most,
// including tail bytes >= 0x80.
func javaOracleCases(seed uint64) []javaOracleCase {
	all := allTypesSchema()
	intKey := schemaOf(Int().NonNull())
	var intRows []Row
	for _, v := range []int64{0, 1, 127, 128, 200, 255, 256, 1000, 16383, 16384, -1, -128, 1 << 30, -1 << 31} {
		intRows = append(intRows, Row{IntDatum(v)})
	}
	strKey := schemaOf(String().NonNull(), BigInt().NonNull())
	var strRows []Row
	for i, v := range []string{"a", "hello", "key-42", "é", "ÿ", "2bb87d68-baf9-4e64-90f9-f80910419fa6", "\x80", "abc\xff"} {
		strRows = append(strRows, Row{StringDatum(v), IntDatum(int64(i) * 1_000_003)})
	}
	return []javaOracleCase{
		{"all_types", "testdata/java_golden.txt", all, javaOracleRows(all, seed)},
		{"int_key", "testdata/java_golden_int_key.txt", intKey, intRows},
		{"string_bigint_key", "testdata/java_golden_string_key.txt", strKey, strRows},
		// the (1, "a") row of the small vectors in log_batch_test.go and kv_batch_test.go
		{"id_name", "testdata/java_golden_id_name.txt", idNameSchema, []Row{{IntDatum(1), StringDatum("a")}}},
	}
}

// TestJavaOracleReadsGoLogBatches: Fluss's Java reader (LogRecordReadContext,
// shaded Arrow Java 15 with Fluss's compression codecs) decodes the ARROW
// batches we build with every codec, and the INDEXED and COMPACTED ones,
// into exactly the rows we appended.
func TestJavaOracleReadsGoLogBatches(t *testing.T) {
	s := allTypesSchema()
	seed := uint64(time.Now().UnixNano())
	t.Logf("random rows from seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	type build struct {
		format LogFormat
		newB   func() (batchBuilder, error)
	}
	var builds []build
	for _, codec := range arrowCodecs {
		builds = append(builds, build{LogFormatArrow, func() (batchBuilder, error) {
			return NewArrowLogBuilder(s, 3, codec, 3)
		}})
	}
	builds = append(builds,
		build{LogFormatIndexed, func() (batchBuilder, error) { return NewIndexedLogBuilder(s, 3) }},
		build{LogFormatCompacted, func() (batchBuilder, error) { return NewCompactedLogBuilder(s, 3) }})
	files := map[LogFormat][]byte{}
	rows := map[LogFormat][]Row{}
	for _, bd := range builds {
		b, err := bd.newB()
		require.NoError(t, err)
		for batch := 0; batch < 3; batch++ {
			b.Reset()
			n := 1 + r.IntN(150)
			if batch == 2 {
				n = 6000 // buffers over 64 KiB: several LZ4 blocks
			}
			for i := 0; i < n; i++ {
				nullPct := []int{0, 20, 100}[r.IntN(3)]
				row := randomRow(r, s, nullPct)
				require.NoError(t, b.Append(row))
				rows[bd.format] = append(rows[bd.format], row)
			}
			files[bd.format], err = b.AppendTo(files[bd.format])
			require.NoError(t, err)
		}
	}
	forEachJavaOracle(t, func(t *testing.T, o *javaOracle) {
		for _, format := range []LogFormat{LogFormatArrow, LogFormatIndexed, LogFormatCompacted} {
			t.Run(string(format), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "batches.bin")
				require.NoError(t, os.WriteFile(path, files[format], 0o644))
				out := o.golden(t, javaSchemaLine(s)+"\n", "read", string(format), path, "3")
				lines := strings.Split(strings.TrimSpace(out), "\n")
				require.Len(t, lines, len(rows[format]))
				offsets := map[string]int{}
				for i, row := range rows[format] {
					// offsets restart at 0 in every batch (the server assigns them)
					off, rest, _ := strings.Cut(lines[i], " ")
					offsets[off]++
					require.Equal(t, "+A "+javaRowLine(s, row), rest, "record %d", i)
				}
				require.Contains(t, offsets, "0")
			})
		}
	})
}

// TestJavaOracleColumnStatisticsBatch pins the log-format change of 1.0 that
// the oracles see: for a table with column statistics
// (table.statistics.columns) a 1.0 client writes magic-1 batches carrying a
// statistics block, which 0.9 has no notion of. Without statistics 1.0 writes
// the magic-0 batches of 0.9 byte for byte (the tests above), and that is
// all the gateway writes; our decoder refuses magic 1 by name instead of
// misreading it.
func TestJavaOracleColumnStatisticsBatch(t *testing.T) {
	s := allTypesSchema()
	seed := uint64(time.Now().UnixNano())
	t.Logf("random rows from seed %d", seed)
	stdin := javaInput(s, javaOracleRows(s, seed)[:8])
	forEachJavaOracle(t, func(t *testing.T, o *javaOracle) {
		out := strings.TrimSpace(o.golden(t, stdin, "encode-arrow-stats"))
		switch o.version {
		case "0.9.1":
			require.Equal(t, "log_arrow unsupported", out)
			return
		case "1.0.0":
		default:
			t.Fatalf("no expectation for Fluss %s: say what its statistics batches look like", o.version)
		}
		stats := javaArrowBatch(t, out)
		plain := javaArrowBatch(t, o.golden(t, stdin, "encode-arrow"))
		assert.Equal(t, byte(logMagicV0), plain[logMagicOffset])
		assert.Equal(t, byte(1), stats[logMagicOffset], "magic of a batch with statistics")
		assert.Greater(t, len(stats), len(plain), "the statistics take room")
		_, err := DecodeLogBatches(plain, s)
		require.NoError(t, err)
		_, err = DecodeLogBatches(stats, s)
		require.ErrorContains(t, err, "unsupported log batch magic 1")
	})
}

// javaArrowBatch decodes the hex of FlussGolden's "log_arrow HEX" line.
func javaArrowBatch(t *testing.T, out string) []byte {
	t.Helper()
	h, ok := strings.CutPrefix(strings.TrimSpace(out), "log_arrow ")
	require.True(t, ok, out)
	b, err := hex.DecodeString(h)
	require.NoError(t, err)
	return b
}

// TestJavaOracleMissingJar: an oracle whose jar cannot be had fails in CI and
// for the baseline, and skips, naming the way out, only for an optional
// version outside CI.
func TestJavaOracleMissingJar(t *testing.T) {
	base, optional := javaOracles[0], javaOracles[len(javaOracles)-1]
	require.True(t, base.required)
	require.False(t, optional.required)
	cause := errors.New("mvn: no network")
	for _, tt := range []struct {
		o        *javaOracle
		ci, fail bool
	}{{base, false, true}, {base, true, true}, {optional, true, true}, {optional, false, false}} {
		fail, why := javaOracleMissing(tt.o, tt.ci, cause)
		assert.Equal(t, tt.fail, fail, "Fluss %s, CI %v", tt.o.version, tt.ci)
		assert.Contains(t, why, "no network")
		if !fail {
			assert.Contains(t, why, tt.o.jarEnv)
		}
	}
}
