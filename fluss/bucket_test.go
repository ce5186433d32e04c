package fluss

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Golden vectors from apache/fluss v0.9.1-incubating
// fluss-common/src/test/java/org/apache/fluss/bucketing/BucketingFunctionTest.java.
var bucketingFunctionTestKeys = []struct {
	key     []byte
	buckets int
}{
	{[]byte{0, 10}, 7},
	{[]byte{0, 10, 10, 10}, 12},
	{[]byte("2bb87d68-baf9-4e64-90f9-f80910419fa6"), 16},
	{[]byte("The quick brown fox jumps over the lazy dog"), 8},
}

func TestBucketForKeyJavaGoldenVectors(t *testing.T) {
	cases := []struct {
		lake string
		want []int32
	}{
		{"", []int32{1, 0, 6, 6}},         // testDefaultBucketing
		{"lance", []int32{1, 0, 6, 6}},    // testLanceBucketing
		{"paimon", []int32{1, 11, 12, 0}}, // testPaimonBucketing
		{"iceberg", []int32{3, 4, 12, 3}}, // testIcebergBucketing
	}
	for _, c := range cases {
		t.Run("lake="+c.lake, func(t *testing.T) {
			for i, k := range bucketingFunctionTestKeys {
				got, err := BucketForKeyLake(k.key, k.buckets, c.lake)
				require.NoError(t, err)
				assert.Equal(t, c.want[i], got, "key %q", k.key)
				if c.lake == "" {
					assert.Equal(t, c.want[i], BucketForKey(k.key, k.buckets))
				}
			}
		})
	}
}

func TestBucketForKeyRejectsBadInput(t *testing.T) {
	assert.Equal(t, int32(-1), BucketForKey(nil, 3))
	assert.Equal(t, int32(-1), BucketForKey([]byte{1}, 0))
	_, err := BucketForKeyLake(nil, 3, "")
	require.Error(t, err)
	_, err = BucketForKeyLake([]byte{1}, 3, "hudi")
	require.Error(t, err)
}

// Java widens each tail byte as a signed byte (Unsafe.getByte); standard
// murmur and the Rust client use it unsigned. The expected hashes come from
// Fluss's own MurmurHashUtils/MathUtils run on the JVM (testdata/java,
// see java_golden_test.go); here we only pin the property that the two
// readings differ, so a zero-extension regression cannot pass.
func TestFlussHashSignExtendsTailBytes(t *testing.T) {
	for _, key := range [][]byte{{0xff}, {0xc3, 0xa9}, {0x80, 0x01}, {1, 2, 3, 4, 0x90}} {
		n := len(key) &^ 3
		h := uint32(flussHashSeed)
		for i := 0; i < n; i += 4 {
			h = murmurMixH1(h, murmurMixK1(uint32(key[i])|uint32(key[i+1])<<8|uint32(key[i+2])<<16|uint32(key[i+3])<<24))
		}
		for _, b := range key[n:] {
			h = murmurMixH1(h, murmurMixK1(uint32(b))) // zero-extended
		}
		zeroExt := int32(murmurFmix(h ^ uint32(len(key))))
		assert.NotEqual(t, zeroExt, flussHashBytes(key), "key % x", key)
	}
	// A tail byte below 0x80 reads the same both ways.
	assert.Equal(t, flussHashBytes([]byte{0x7f}), flussHashBytes([]byte{0x7f}))
}

func TestBucketForKeyRangeAndDeterminism(t *testing.T) {
	for n := 1; n <= 64; n++ {
		for k := 0; k < 200; k++ {
			key := []byte(fmt.Sprintf("key-%d", k))
			b := BucketForKey(key, n)
			require.True(t, b >= 0 && b < int32(n), "bucket %d of %d", b, n)
			require.Equal(t, b, BucketForKey(key, n))
		}
	}
}
