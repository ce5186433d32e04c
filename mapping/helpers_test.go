package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func col(name string, t fluss.DataType) fluss.Column { return fluss.Column{Name: name, Type: t} }

func tableInfo(db, table string, cols []fluss.Column, pk []string, opts ...func(*fluss.TableDescriptor)) *fluss.TableInfo {
	info := &fluss.TableInfo{
		Path:    fluss.TablePath{Database: db, Table: table},
		TableID: 7,
		Descriptor: fluss.TableDescriptor{
			Schema:      fluss.Schema{Columns: cols, PrimaryKey: pk},
			BucketCount: 4,
			Properties:  map[string]string{},
		},
	}
	for _, o := range opts {
		o(&info.Descriptor)
	}
	return info
}

func partitionedBy(keys ...string) func(*fluss.TableDescriptor) {
	return func(d *fluss.TableDescriptor) { d.PartitionKeys = keys }
}

func buckets(n int) func(*fluss.TableDescriptor) {
	return func(d *fluss.TableDescriptor) { d.BucketCount = n }
}

func bucketKeys(keys ...string) func(*fluss.TableDescriptor) {
	return func(d *fluss.TableDescriptor) { d.BucketKeys = keys }
}

// bind compiles one spec and binds it to info, failing the test on error.
func bind(t testing.TB, spec RouteSpec, info *fluss.TableInfo, more ...*fluss.TableInfo) *Route {
	t.Helper()
	if spec.Table == (fluss.TablePath{}) {
		spec.Table = info.Path
	}
	rs, err := NewRoutes([]RouteSpec{spec})
	require.NoError(t, err)
	infos := map[fluss.TablePath]*fluss.TableInfo{info.Path: info}
	for _, m := range more {
		infos[m.Path] = m
	}
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	return bound.All()[0]
}

// convert runs one record through the route's converter.
func convert(t testing.TB, r *Route, rec Record) (*Converted, error) {
	t.Helper()
	if rec.Topic == "" {
		rec.Topic = "t"
	}
	out := &Converted{}
	err := r.Converter().Convert(&rec, out)
	return out, err
}
