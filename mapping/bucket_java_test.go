package mapping

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// Fluss's Java client hashes the last len%4 bytes of an encoded key one by
// one, sign-extended (MurmurHashUtils reads them with Unsafe.getByte);
// pyfluss 1.0.0 (fluss-rust) zero-extends them, so a key whose tail holds a
// byte >= 0x80 can land in another bucket (docs/deployment.md, "Writing one
// primary-key table from the gateway and pyfluss"). The gateway follows
// Java. This test pins that where it matters to users: records converted
// for a primary-key table get exactly the key bytes and bucket that Fluss's
// own Java code computed.
//
// The expected values are the Java golden files of package fluss, not a
// copy: ../fluss/testdata/java_golden_int_key.txt and
// java_golden_string_key.txt, recorded from testdata/java/FlussGolden.java
// "encode" (CompactedKeyEncoder, MurmurHashUtils, BucketingFunction.of(null))
// run on fluss-server-0.9.1-incubating.jar. Each row's "key HEX" line is the
// encoded key and "bucket HASH MURMUR B1 B3 B4 B16 B128" its bucket for 1, 3,
// 4, 16 and 128 buckets. Regenerate them (JDK 17; scripts/fluss-local.sh
// fetches the jars from Maven Central with mvn) with
//
//	FLUSS_GOLDEN_UPDATE=1 go test -run TestJavaOracleRowsKeysBucketsAndBatches ./fluss/
//
// (fluss/record_java_integration_test.go, which also requires the
// fluss-client 1.0.0 jar to print the same), or by hand with the javac and
// java lines at the top of FlussGolden.java and its "encode" mode on the
// files' input sections.

// javaGoldenBucketCounts are FlussGolden's B1 B3 B4 B16 B128 columns.
var javaGoldenBucketCounts = []int{1, 3, 4, 16, 128}

// javaKeyCase is one row of a Java golden file: its input fields and what
// Java computed for its key.
type javaKeyCase struct {
	fields  []string
	key     []byte
	buckets []int32 // by javaGoldenBucketCounts
}

// readJavaKeyGolden reads a FlussGolden encode recording: the schema line,
// and each row with its "key" and "bucket" lines.
func readJavaKeyGolden(t *testing.T, path string) (schema string, cases []javaKeyCase) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var input, keys, buckets []string
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case line == "== input" || line == "== output":
			section = line
		case section == "== input":
			input = append(input, line)
		case strings.HasPrefix(line, "key "):
			keys = append(keys, strings.TrimPrefix(line, "key "))
		case strings.HasPrefix(line, "bucket "):
			buckets = append(buckets, strings.TrimPrefix(line, "bucket "))
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, input, "%s: no input", path)
	// Key columns are NOT NULL, so every row has one key and bucket line.
	require.Len(t, keys, len(input)-1, "%s: key lines", path)
	require.Len(t, buckets, len(input)-1, "%s: bucket lines", path)
	for i, row := range input[1:] {
		key, err := hex.DecodeString(keys[i])
		require.NoError(t, err)
		f := strings.Fields(buckets[i]) // HASH MURMUR B1 B3 B4 B16 B128
		require.Len(t, f, 2+len(javaGoldenBucketCounts), "%s: %q", path, buckets[i])
		c := javaKeyCase{fields: strings.Fields(row), key: key}
		for _, s := range f[2:] {
			b, err := strconv.ParseInt(s, 10, 32)
			require.NoError(t, err)
			c.buckets = append(c.buckets, int32(b))
		}
		cases = append(cases, c)
	}
	return input[0], cases
}

// zeroExtendedBucket is the bucket with the tail bytes zero-extended
// (pyfluss 1.0.0's reading, and the regression this test must catch):
// Fluss's hash and MathUtils.murmurHash otherwise unchanged.
func zeroExtendedBucket(key []byte, n int) int32 {
	mixK := func(k uint32) uint32 { return bits.RotateLeft32(k*0xcc9e2d51, 15) * 0x1b873593 }
	mixH := func(h, k uint32) uint32 { return bits.RotateLeft32(h^k, 13)*5 + 0xe6546b64 }
	fmix := func(h uint32) uint32 {
		h = (h ^ h>>16) * 0x85ebca6b
		h = (h ^ h>>13) * 0xc2b2ae35
		return h ^ h>>16
	}
	h := uint32(42)
	full := len(key) &^ 3
	for i := 0; i < full; i += 4 {
		h = mixH(h, mixK(binary.LittleEndian.Uint32(key[i:])))
	}
	for _, b := range key[full:] {
		h = mixH(h, mixK(uint32(b)))
	}
	c := mixK(fmix(h ^ uint32(len(key))))
	c = bits.RotateLeft32(c, 13)*5 + 0xe6546b64
	m := int32(fmix(c ^ 4))
	switch {
	case m == -1<<31:
		m = 0
	case m < 0:
		m = -m
	}
	return m % int32(n)
}

// tailHasHighByte: the key's last len%4 bytes hold a byte >= 0x80, the keys
// whose hash depends on how those bytes are widened.
func tailHasHighByte(key []byte) bool {
	for _, b := range key[len(key)&^3:] {
		if b >= 0x80 {
			return true
		}
	}
	return false
}

func TestConverterBucketsPrimaryKeysAsFlussJava(t *testing.T) {
	t.Parallel()
	goldens := []struct {
		file   string
		schema string // the golden file's schema line
		keys   []fluss.Column
		// jsonKey renders a row's fields as the Kafka record's JSON key;
		// false for a row a JSON key cannot carry.
		jsonKey func(fields []string) (string, bool)
	}{
		{
			file: "java_golden_int_key.txt", schema: "INTEGER!",
			keys:    []fluss.Column{col("k", fluss.Int().NonNull())},
			jsonKey: func(f []string) (string, bool) { return `{"k": ` + f[0] + `}`, true },
		},
		{
			file: "java_golden_string_key.txt", schema: "STRING! BIGINT!",
			keys: []fluss.Column{col("s", fluss.String().NonNull()), col("n", fluss.BigInt().NonNull())},
			jsonKey: func(f []string) (string, bool) {
				s, err := hex.DecodeString(f[0])
				if err != nil || !utf8.Valid(s) {
					return "", false // JSON text cannot hold invalid UTF-8
				}
				q, err := json.Marshal(string(s))
				if err != nil {
					return "", false
				}
				return `{"s": ` + string(q) + `, "n": ` + f[1] + `}`, true
			},
		},
	}
	var highTail, discriminating int
	for _, g := range goldens {
		t.Run(g.file, func(t *testing.T) {
			schema, cases := readJavaKeyGolden(t, filepath.Join("..", "fluss", "testdata", g.file))
			require.Equal(t, g.schema, schema, "the test's columns must be the golden file's")
			cols := append([]fluss.Column{}, g.keys...)
			cols = append(cols, col("v", fluss.String()))
			pk := make([]string, len(g.keys))
			for i, c := range g.keys {
				pk[i] = c.Name
			}
			for bi, n := range javaGoldenBucketCounts {
				info := tableInfo("db", "pk", cols, pk, buckets(n))
				r := bind(t, RouteSpec{Topic: "t", Key: KeySpec{Format: KeyJSON}}, info)
				for _, c := range cases {
					key, ok := g.jsonKey(c.fields)
					if !ok {
						continue
					}
					want := c.buckets[bi]
					up, err := convert(t, r, Record{Key: []byte(key), Value: []byte(`{"v": "x"}`), Partition: 2})
					require.NoError(t, err, key)
					require.Equal(t, c.key, up.Key, "%s: the key bytes Java encodes", key)
					assert.Equal(t, want, up.Bucket, "%s (key % x): Java's bucket of %d", key, c.key, n)
					// A tombstone must delete in the bucket the upsert went to.
					del, err := convert(t, r, Record{Key: []byte(key), Partition: 2})
					require.NoError(t, err, key)
					assert.Equal(t, fluss.WriteDelete, del.Op)
					assert.Equal(t, want, del.Bucket, "%s: tombstone's bucket of %d", key, n)

					if tailHasHighByte(c.key) {
						if bi == 0 {
							highTail++
						}
						if zeroExtendedBucket(c.key, n) != want {
							discriminating++
						}
					} else {
						// Sign-neutral tails hash the same either way: the
						// model differs from Java only where it should.
						assert.Equal(t, want, zeroExtendedBucket(c.key, n), "%s: sign-neutral tail", key)
					}
				}
			}
		})
	}
	t.Logf("%d keys with a tail byte >= 0x80; %d (key, bucket count) pairs where zero-extension moves the bucket", highTail, discriminating)
	// The data must include keys a zero-extending hash puts elsewhere, or a
	// zero-extension regression could pass.
	require.GreaterOrEqual(t, highTail, 5, "keys with a tail byte >= 0x80")
	require.GreaterOrEqual(t, discriminating, 10, "cases where zero-extended tail bytes change the bucket")
}
