package owntable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// Table is one of the gateway's own tables (producer states,
// transactions, staged batches): created with its database on first use
// when missing, checked against the table this code writes, and registered
// with the writer. The stores embed it; its methods are safe for
// concurrent use.
type Table struct {
	Source Source
	Acc    *accumulator.Accumulator
	Path   fluss.TablePath
	Kind   Kind

	mu     sync.Mutex // guards the fields below (set once ready)
	ready  bool
	Info   *fluss.TableInfo
	Writer *accumulator.Table
	// KeyEnc encodes the primary key (primary-key tables), bucketEnc the
	// bucket key (tables with one).
	KeyEnc    *fluss.KeyEncoder
	BucketEnc *fluss.KeyEncoder
}

// Kind is what one of the gateway's own tables is.
type Kind struct {
	What       string                        // names it in errors: "producer-state table"
	Descriptor func() *fluss.TableDescriptor // the table created, and the shape an existing one must have
	// Properties checks the Properties the code relies on (a merge engine,
	// a log format) and says why in its error.
	Properties func(d *fluss.TableDescriptor) error
	NoLinger   bool // a producer waits on each write
	// ReadOnly opens an existing table only, to read it: a missing one is
	// not created (the error matches fluss.ErrTableNotExist), and it is not
	// registered with the writer.
	ReadOnly bool
}

func New(src Source, acc *accumulator.Accumulator, path fluss.TablePath, kind Kind) Table {
	return Table{Source: src, Acc: acc, Path: path, Kind: kind}
}

// Open makes sure the table exists, is the one this code writes and is
// registered with the writer.
func (o *Table) Open(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready {
		return nil
	}
	want := o.Kind.Descriptor()
	info, err := o.find(ctx, want)
	if err != nil {
		return err
	}
	d := &info.Descriptor
	if err := o.checkShape(d, want); err != nil {
		return err
	}
	if err := o.Kind.Properties(d); err != nil {
		return fmt.Errorf("%s %s %w", o.Kind.What, o.Path, err)
	}
	var keyEnc, bucketEnc *fluss.KeyEncoder
	if d.HasPrimaryKey() {
		if keyEnc, err = fluss.NewKeyEncoder(&d.Schema, physicalKey(d), ""); err != nil {
			return fmt.Errorf("%s %s: %w", o.Kind.What, o.Path, err)
		}
	}
	if len(want.BucketKeys) > 0 {
		if bucketEnc, err = fluss.NewKeyEncoder(&d.Schema, d.BucketKeys, ""); err != nil {
			return fmt.Errorf("%s %s: %w", o.Kind.What, o.Path, err)
		}
	}
	if o.Kind.ReadOnly {
		o.Info, o.KeyEnc, o.BucketEnc, o.ready = info, keyEnc, bucketEnc, true
		return nil
	}
	spec, err := accumulator.TableSpecOf(info, nil)
	if err != nil {
		return err
	}
	spec.NoLinger = o.Kind.NoLinger
	tab, err := o.Acc.AddTable(spec)
	if err != nil {
		return fmt.Errorf("register %s: %w", o.Kind.What, err)
	}
	o.Info, o.Writer, o.KeyEnc, o.BucketEnc, o.ready = info, tab, keyEnc, bucketEnc, true
	return nil
}

// find returns the table's info, creating it, and its database, with want
// when it is missing and waiting for its buckets' leaders.
func (o *Table) find(ctx context.Context, want *fluss.TableDescriptor) (*fluss.TableInfo, error) {
	info, err := o.Source.TableInfo(ctx, o.Path)
	if o.Kind.ReadOnly && errors.Is(err, fluss.ErrDatabaseNotExist) {
		err = fmt.Errorf("%w: %w", fluss.ErrTableNotExist, err)
	}
	if !o.Kind.ReadOnly && (errors.Is(err, fluss.ErrTableNotExist) || errors.Is(err, fluss.ErrDatabaseNotExist)) {
		if err := o.Source.CreateDatabase(ctx, o.Path.Database, true); err != nil {
			return nil, fmt.Errorf("create database %s: %w", o.Path.Database, err)
		}
		if err := o.Source.CreateTable(ctx, o.Path, want, true); err != nil {
			return nil, fmt.Errorf("create %s %s: %w", o.Kind.What, o.Path, err)
		}
		// A partitioned table has no buckets until a partition is made.
		if !want.IsPartitioned() {
			if err := o.Source.WaitForTableLeaders(ctx, o.Path); err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.Kind.What, o.Path, err)
			}
		}
		info, err = o.Source.TableInfo(ctx, o.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.Kind.What, o.Path, err)
	}
	return info, nil
}

// checkShape refuses an existing table whose columns, keys or partitioning
// differ from want's: the code reads and writes rows by position. (A
// primary-key table without bucket keys gets its primary key as bucket
// key from Fluss.)
func (o *Table) checkShape(d, want *fluss.TableDescriptor) error {
	if !slices.Equal(d.Schema.PrimaryKey, want.Schema.PrimaryKey) || len(d.Schema.Columns) != len(want.Schema.Columns) ||
		(len(want.BucketKeys) > 0 && !slices.Equal(d.BucketKeys, want.BucketKeys)) || !slices.Equal(d.PartitionKeys, want.PartitionKeys) {
		return fmt.Errorf("%s %s does not have the expected schema (primary key %v, bucket key %v, %d columns, partition keys %v)",
			o.Kind.What, o.Path, want.Schema.PrimaryKey, want.BucketKeys, len(want.Schema.Columns), want.PartitionKeys)
	}
	for i, c := range want.Schema.Columns {
		if d.Schema.Columns[i].Name != c.Name || d.Schema.Columns[i].Type.Root != c.Type.Root {
			return fmt.Errorf("%s %s: column %d is %s, want %s", o.Kind.What, o.Path, i, d.Schema.Columns[i].Name, c.Name)
		}
	}
	return nil
}

// physicalKey is the primary key a row's key bytes encode: without the
// partition keys (Fluss's physical primary key), which name the partition.
func physicalKey(d *fluss.TableDescriptor) []string {
	return slices.DeleteFunc(slices.Clone(d.Schema.PrimaryKey), func(c string) bool { return slices.Contains(d.PartitionKeys, c) })
}

// Source is what the producer-state store needs from Fluss.
type Source interface {
	TableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	CreateDatabase(ctx context.Context, name string, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d *fluss.TableDescriptor, ignoreIfExists bool) error
	WaitForTableLeaders(ctx context.Context, path fluss.TablePath, partitionIDs ...int64) error
	Lookup(ctx context.Context, tableID, partitionID int64, bucket int32, keys [][]byte) ([][]byte, error)
}
