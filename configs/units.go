package configs

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ByteSize is a size in bytes. In YAML it is an integer or a string with a
// unit: B, KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024), e.g.
// "64MiB".
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first, so "MiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// ParseByteSize parses "1048576", "512KiB", "64MiB", "1GB".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (want bytes, or a number with B, KB, MB, GB, KiB, MiB, GiB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML accepts an integer or a string with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: size must be a scalar", n.Line)
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// Acks is the acknowledgement level requested from Fluss: AcksAll (-1,
// every in-sync replica) or 1 (the leader). 0 (none) decodes, so that
// Validate can refuse it under its key: the writer does not support it.
type Acks int

// AcksAll waits for every in-sync replica.
const AcksAll Acks = -1

// UnmarshalYAML accepts all, -1, 1 and 0.
func (a *Acks) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: acks must be a scalar", n.Line)
	}
	switch strings.ToLower(n.Value) {
	case "all", "-1":
		*a = AcksAll
	case "1":
		*a = 1
	case "0":
		*a = 0
	default:
		return fmt.Errorf("line %d: acks %q is not one of all, -1, 1, 0", n.Line, n.Value)
	}
	return nil
}

// String renders the value as written in the file.
func (a Acks) String() string {
	if a == AcksAll {
		return "all"
	}
	return strconv.Itoa(int(a))
}
