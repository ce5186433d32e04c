package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// ownTable is one of the gateway's own tables (producer states,
// transactions, staged batches): created with its database on first use
// when missing, checked against the table this code writes, and registered
// with the writer. The stores embed it; its methods are safe for
// concurrent use.
type ownTable struct {
	src  stateSource
	acc  *accumulator.Accumulator
	path fluss.TablePath
	kind ownTableKind

	mu    sync.Mutex // guards the fields below (set once ready)
	ready bool
	info  *fluss.TableInfo
	table *accumulator.Table
	// keyEnc encodes the primary key (primary-key tables), bucketEnc the
	// bucket key (tables with one).
	keyEnc    *fluss.KeyEncoder
	bucketEnc *fluss.KeyEncoder
}

// ownTableKind is what one of the gateway's own tables is.
type ownTableKind struct {
	what       string                        // names it in errors: "producer-state table"
	descriptor func() *fluss.TableDescriptor // the table created, and the shape an existing one must have
	// properties checks the properties the code relies on (a merge engine,
	// a log format) and says why in its error.
	properties func(d *fluss.TableDescriptor) error
	noLinger   bool // a producer waits on each write
}

func newOwnTable(src stateSource, acc *accumulator.Accumulator, path fluss.TablePath, kind ownTableKind) ownTable {
	return ownTable{src: src, acc: acc, path: path, kind: kind}
}

// open makes sure the table exists, is the one this code writes and is
// registered with the writer.
func (o *ownTable) open(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready {
		return nil
	}
	want := o.kind.descriptor()
	info, err := o.find(ctx, want)
	if err != nil {
		return err
	}
	d := &info.Descriptor
	if err := o.checkShape(d, want); err != nil {
		return err
	}
	if err := o.kind.properties(d); err != nil {
		return fmt.Errorf("%s %s %w", o.kind.what, o.path, err)
	}
	var keyEnc, bucketEnc *fluss.KeyEncoder
	if d.HasPrimaryKey() {
		if keyEnc, err = fluss.NewKeyEncoder(&d.Schema, d.Schema.PrimaryKey, ""); err != nil {
			return fmt.Errorf("%s %s: %w", o.kind.what, o.path, err)
		}
	}
	if len(want.BucketKeys) > 0 {
		if bucketEnc, err = fluss.NewKeyEncoder(&d.Schema, d.BucketKeys, ""); err != nil {
			return fmt.Errorf("%s %s: %w", o.kind.what, o.path, err)
		}
	}
	spec, err := tableSpec(info, nil)
	if err != nil {
		return err
	}
	spec.NoLinger = o.kind.noLinger
	tab, err := o.acc.AddTable(spec)
	if err != nil {
		return fmt.Errorf("register %s: %w", o.kind.what, err)
	}
	o.info, o.table, o.keyEnc, o.bucketEnc, o.ready = info, tab, keyEnc, bucketEnc, true
	return nil
}

// find returns the table's info, creating it, and its database, with want
// when it is missing and waiting for its buckets' leaders.
func (o *ownTable) find(ctx context.Context, want *fluss.TableDescriptor) (*fluss.TableInfo, error) {
	info, err := o.src.TableInfo(ctx, o.path)
	if errors.Is(err, fluss.ErrTableNotExist) || errors.Is(err, fluss.ErrDatabaseNotExist) {
		if err := o.src.CreateDatabase(ctx, o.path.Database, true); err != nil {
			return nil, fmt.Errorf("create database %s: %w", o.path.Database, err)
		}
		if err := o.src.CreateTable(ctx, o.path, want, true); err != nil {
			return nil, fmt.Errorf("create %s %s: %w", o.kind.what, o.path, err)
		}
		if err := o.src.WaitForTableLeaders(ctx, o.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.kind.what, o.path, err)
		}
		info, err = o.src.TableInfo(ctx, o.path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.kind.what, o.path, err)
	}
	return info, nil
}

// checkShape refuses an existing table whose columns, keys or partitioning
// differ from want's: the code reads and writes rows by position. (A
// primary-key table without bucket keys gets its primary key as bucket
// key from Fluss.)
func (o *ownTable) checkShape(d, want *fluss.TableDescriptor) error {
	if !slices.Equal(d.Schema.PrimaryKey, want.Schema.PrimaryKey) || len(d.Schema.Columns) != len(want.Schema.Columns) ||
		(len(want.BucketKeys) > 0 && !slices.Equal(d.BucketKeys, want.BucketKeys)) || d.IsPartitioned() {
		return fmt.Errorf("%s %s does not have the expected schema (primary key %v, bucket key %v, %d columns, not partitioned)",
			o.kind.what, o.path, want.Schema.PrimaryKey, want.BucketKeys, len(want.Schema.Columns))
	}
	for i, c := range want.Schema.Columns {
		if d.Schema.Columns[i].Name != c.Name || d.Schema.Columns[i].Type.Root != c.Type.Root {
			return fmt.Errorf("%s %s: column %d is %s, want %s", o.kind.what, o.path, i, d.Schema.Columns[i].Name, c.Name)
		}
	}
	return nil
}
