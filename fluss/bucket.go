package fluss

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
)

// Bucket assignment for tables with a bucket key, as the Java client computes
// it (fluss-common bucketing/FlussBucketingFunction, utils/MurmurHashUtils,
// utils/MathUtils, v0.9.1):
//
//	h = murmur32(key, seed 42), where full 4-byte words are read LE and each
//	    tail byte is mixed on its own, SIGN-extended (Java Unsafe.getByte);
//	m = MathUtils.murmurHash(h) (non-negative);  bucket = m % numBuckets.
//
// The Rust client zero-extends tail bytes and disagrees for tail bytes >=
// 0x80; this follows Java.

const flussHashSeed = 42

func murmurMixK1(k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	return k * 0x1b873593
}

func murmurMixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func murmurFmix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// flussHashBytes is MurmurHashUtils.hashUnsafeBytes(key, seed 42).
func flussHashBytes(key []byte) int32 {
	h := uint32(flussHashSeed)
	n := len(key) &^ 3
	for i := 0; i < n; i += 4 {
		h = murmurMixH1(h, murmurMixK1(binary.LittleEndian.Uint32(key[i:])))
	}
	for _, b := range key[n:] {
		h = murmurMixH1(h, murmurMixK1(uint32(int32(int8(b)))))
	}
	return int32(murmurFmix(h ^ uint32(len(key))))
}

// flussMurmurInt is MathUtils.murmurHash(code).
func flussMurmurInt(code int32) int32 {
	c := murmurMixK1(uint32(code))
	c = bits.RotateLeft32(c, 13)
	c = c*5 + 0xe6546b64
	c ^= 4
	v := int32(murmurFmix(c))
	switch {
	case v >= 0:
		return v
	case v != -1<<31:
		return -v
	default:
		return 0
	}
}

// BucketForKey returns the bucket of an encoded bucket key in a table with
// numBuckets buckets and no data-lake format (or Lance). It returns -1 for
// an empty key or numBuckets < 1, which Java rejects.
func BucketForKey(encodedBucketKey []byte, numBuckets int) int32 {
	if len(encodedBucketKey) == 0 || numBuckets < 1 {
		return -1
	}
	return flussMurmurInt(flussHashBytes(encodedBucketKey)) % int32(numBuckets)
}

// BucketForKeyLake is BucketForKey for a table with a data-lake format
// (BucketingFunction.of): "" and "lance" use the Fluss function, "paimon"
// abs(murmur32 seed 42 % n), "iceberg" Guava's standard murmur3_32 (seed 0)
// & MaxInt32 % n. Paimon and Iceberg tables also key rows their own way:
// NewKeyEncoder with the lake format, and NewTableKeying for which key uses
// which encoder.
func BucketForKeyLake(encodedBucketKey []byte, numBuckets int, lakeFormat string) (int32, error) {
	if len(encodedBucketKey) == 0 {
		return 0, fmt.Errorf("fluss: bucket key must not be empty")
	}
	if numBuckets < 1 {
		return 0, fmt.Errorf("fluss: invalid bucket count %d", numBuckets)
	}
	n := int32(numBuckets)
	switch strings.ToLower(lakeFormat) {
	case "", "lance":
		return BucketForKey(encodedBucketKey, numBuckets), nil
	case "paimon":
		b := flussHashBytes(encodedBucketKey) % n
		if b < 0 {
			b = -b
		}
		return b, nil
	case "iceberg":
		return int32(murmur3Standard(encodedBucketKey, 0)&0x7fffffff) % n, nil
	default:
		return 0, fmt.Errorf("fluss: bucketing for data-lake format %q is not implemented", lakeFormat)
	}
}

// murmur3Standard is the reference MurmurHash3 x86 32-bit (Guava
// murmur3_32_fixed): the tail is combined into one little-endian word of
// unsigned bytes.
func murmur3Standard(key []byte, seed uint32) uint32 {
	h := seed
	n := len(key) &^ 3
	for i := 0; i < n; i += 4 {
		h = murmurMixH1(h, murmurMixK1(binary.LittleEndian.Uint32(key[i:])))
	}
	var k uint32
	switch tail := key[n:]; len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		h ^= murmurMixK1(k)
	}
	return murmurFmix(h ^ uint32(len(key)))
}
