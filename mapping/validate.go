package mapping

import (
	"errors"
	"slices"
	"strings"

	"github.com/fluss-kafka/gateway/fluss"
)

// Checking a route against its table. The checks are made while the
// conversion plan is built (plan.go); newConverter adds the key encoders.

// Column sources. A column is filled from exactly one place, except that a
// JSON key may fill columns the JSON value also fills (the key wins).
type colSource uint8

const (
	srcNone colSource = iota
	srcValue
	srcKey
	srcMetaKey
	srcMetaHeaders
	srcMetaTimestamp
	srcMetaPartition
	srcMetaOffset
	srcMetaTopic
	srcTimePartition
)

func (s colSource) String() string {
	return [...]string{"nothing", "the value", "the key", "metadata.key", "metadata.headers",
		"metadata.timestamp", "metadata.partition", "metadata.offset", "metadata.topic",
		"the record timestamp (partition)"}[s]
}

// Validate checks a compiled route against its table as GetTableInfo
// returned it: every referenced column exists and has a type the source
// can fill, a primary-key table's key is filled from the Kafka record's key
// or metadata (so tombstones can delete), a log table takes no deletes, and
// partition columns are filled. It returns every problem found, joined;
// each is a *RouteError naming the route, the column and the problem. It
// is pure: no I/O.
func Validate(r *Route, info *fluss.TableInfo) error {
	_, errs := buildPlan(r, info)
	return errors.Join(errs...)
}

// NewConverter validates the route against the table and returns its
// converter. Routes.Bind calls it for every route.
func NewConverter(r *Route, info *fluss.TableInfo, opts ...Option) (*Converter, error) {
	return newConverter(r, info, newOptions(opts))
}

func newConverter(r *Route, info *fluss.TableInfo, o options) (*Converter, error) {
	c, errs := buildPlan(r, info)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	problem := func(what string, err error) error {
		return &RouteError{Route: r.spec.Name, Table: info.Path, Problem: what, Err: err}
	}
	// A data-lake table encodes and buckets its keys the lake's way; which
	// encoding its primary key takes also depends on the kv format version
	// (fluss.NewTableKeying holds the rule, as the Java client applies it).
	lake := strings.ToLower(info.Descriptor.Properties[fluss.PropDataLakeFormat])
	pkLake, bucketFn := lake, o.keying.BucketForKey
	if lake != "" {
		tk, err := fluss.NewTableKeying(&info.Descriptor)
		if err != nil {
			return nil, problem("key encoding of data-lake format "+lake, err)
		}
		if tk.PrimaryKey != nil {
			pkLake = tk.PrimaryKey.LakeFormat()
		}
		bucketFn = func(key []byte, n int) int32 {
			b, err := tk.Bucket(key, n)
			if err != nil {
				return -1 // an empty key: the accumulator refuses bucket -1
			}
			return b
		}
	}
	if c.pk {
		enc, err := o.keying.NewKeyEncoder(c.schema, c.physicalPK, pkLake)
		if err != nil {
			return nil, problem("primary key encoder", err)
		}
		c.pkEnc = enc
	}
	if len(c.bucketKeys) > 0 {
		c.bucketFn = bucketFn
		if c.pk && slices.Equal(c.bucketKeys, c.physicalPK) {
			c.bucketIsPK = true
		} else {
			enc, err := o.keying.NewKeyEncoder(c.schema, c.bucketKeys, lake)
			if err != nil {
				return nil, problem("bucket key encoder", err)
			}
			c.bucketEnc = enc
		}
	}
	return c, nil
}
