package mapping

import (
	"github.com/fluss-kafka/gateway/fluss"
)

// KeyEncoder encodes a row's key columns the way Fluss does; it is
// satisfied by *fluss.KeyEncoder.
type KeyEncoder interface {
	Encode(dst []byte, row fluss.Row) ([]byte, error)
}

// Keying holds the Fluss key-encoding and bucketing functions. The default
// is fluss.NewKeyEncoder and fluss.BucketForKey; tests may replace them.
type Keying struct {
	// NewKeyEncoder builds an encoder of keyColumns of schema for a table
	// with the given datalake format ("" for none).
	NewKeyEncoder func(schema *fluss.Schema, keyColumns []string, lakeFormat string) (KeyEncoder, error)
	// BucketForKey maps encoded bucket-key bytes to a bucket (tables
	// without a data-lake format).
	BucketForKey func(encodedBucketKey []byte, numBuckets int) int32
}

// Option configures Bind and NewConverter.
type Option func(*options)

type options struct {
	keying Keying
}

// WithKeying replaces the Fluss key-encoding and bucketing functions.
func WithKeying(k Keying) Option { return func(o *options) { o.keying = k } }

func newOptions(opts []Option) options {
	o := options{keying: defaultKeying()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// defaultKeying is Fluss's own key encoding and bucketing. Tables with a
// data-lake format bucket with that format's function (see newConverter).
func defaultKeying() Keying {
	return Keying{
		NewKeyEncoder: func(s *fluss.Schema, cols []string, lake string) (KeyEncoder, error) {
			return fluss.NewKeyEncoder(s, cols, lake)
		},
		BucketForKey: fluss.BucketForKey,
	}
}
