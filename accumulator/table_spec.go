package accumulator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fluss-kafka/gateway/fluss"
)

// TableSpecOf chooses the batch builder the table's formats ask for; an
// Arrow log table compresses with encoders, which only a primary-key table
// may leave nil.
func TableSpecOf(info *fluss.TableInfo, encoders *fluss.ArrowEncoders) (TableSpec, error) {
	d := &info.Descriptor
	schema := &d.Schema
	spec := TableSpec{ID: info.TableID, Path: info.Path, NumBuckets: d.BucketCount, SchemaID: info.SchemaID, Columns: len(schema.Columns)}
	if spec.NumBuckets <= 0 {
		return spec, fmt.Errorf("table %s: bucket count %d", info.Path, d.BucketCount)
	}
	if d.HasPrimaryKey() {
		format := d.KvFormat()
		spec.NewKvBuilder = func() (KvBuilder, error) {
			return fluss.NewKvBatchBuilder(schema, info.SchemaID, format)
		}
		return spec, nil
	}
	switch f := d.LogFormat(); f {
	case fluss.LogFormatArrow:
		codec := d.ArrowCompression()
		level := 3
		if v := d.Properties[fluss.PropArrowCompressionLevel]; v != "" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return spec, fmt.Errorf("table %s: %s %q: %w", info.Path, fluss.PropArrowCompressionLevel, v, err)
			}
			level = n
		}
		// One compressor per table: the compression-ratio estimate its
		// batches share; the encoders are every table's.
		if encoders == nil {
			return spec, fmt.Errorf("table %s: an Arrow log table needs the gateway's shared encoders", info.Path)
		}
		comp, err := encoders.Compressor(codec, level)
		if err != nil {
			return spec, fmt.Errorf("table %s: %w", info.Path, err)
		}
		spec.NewLogBuilder = func() (LogBuilder, error) {
			return fluss.NewArrowLogBuilder(schema, info.SchemaID, codec, level, fluss.WithArrowCompressor(comp))
		}
	case fluss.LogFormatIndexed:
		spec.NewLogBuilder = func() (LogBuilder, error) {
			return fluss.NewIndexedLogBuilder(schema, info.SchemaID)
		}
	case fluss.LogFormatCompacted:
		spec.NewLogBuilder = func() (LogBuilder, error) {
			return fluss.NewCompactedLogBuilder(schema, info.SchemaID)
		}
	default:
		return spec, fmt.Errorf("table %s: log format %q is not supported", info.Path, f)
	}
	// Fail at start-up, not on the first record, if the builder refuses the schema.
	if _, err := spec.NewLogBuilder(); err != nil {
		return spec, fmt.Errorf("table %s: %w", info.Path, err)
	}
	return spec, nil
}
