package schemafollow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// ErrCannotCreate marks a table that cannot be made from a writer schema
// (none of its fields has a column type, or the route would not bind to
// it): the records are at fault, not Fluss.
var ErrCannotCreate = errors.New("no table can be made from the writer schema")

// CreateFrom creates spec's table from the batch's first writer schema
// (and, with follow_schema.primary_key_from_key, its primary key from the
// first key's), unless bound reports the topic routed by now, and binds
// the routes again. The error wraps ErrNoWriterSchema or ErrCannotCreate
// when the batch is at fault, schemaregistry.ErrUnavailable when the
// registry is.
func (f *Follower) CreateFrom(ctx context.Context, spec mapping.RouteSpec, b Batch, bound func() (*mapping.Route, bool)) error {
	exists := func() bool {
		_, ok := bound()
		return ok
	}
	if exists() {
		return nil
	}
	w, err := b.first(ctx, f.Registry, spec, false)
	if err != nil {
		return err
	}
	var key *WriterSchema
	if spec.FollowSchema.PrimaryKeyFromKey {
		kw, err := b.first(ctx, f.Registry, spec, true)
		if err != nil {
			return err
		}
		key = &kw
	}
	notAdded, err := f.createTable(ctx, spec, w, key, exists)
	if err != nil {
		return err
	}
	if r, ok := bound(); ok {
		f.warnNotAdded(r, w, notAdded)
	}
	return nil
}

// createTable creates spec's table from w, the first record's writer
// schema (and, with follow_schema.primary_key_from_key, its primary key
// from key, the first key's), as `gateway tables apply` would, unless
// exists reports the route bound meanwhile or another instance created it
// first, and binds the routes again. notAdded are w's fields that no
// column was made for (warnNotAdded logs them, with the bound route).
//
// The table is planned from the writer schemas before Fluss is asked
// anything: a schema that makes no table fails without a call.
func (f *Follower) createTable(ctx context.Context, spec mapping.RouteSpec, w WriterSchema, key *WriterSchema, exists func() bool) (notAdded []mapping.FieldNotAdded, err error) {
	d, notAdded, err := planCreate(spec, w, key)
	if err != nil {
		return nil, err
	}
	created := []any{slog.String("route", spec.Name), slog.String("table", spec.Table.String()),
		w.ID(), slog.Any("columns", columnNames(d.Schema.Columns)), slog.Any("primary_key", d.Schema.PrimaryKey)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if exists() {
		return nil, nil // created meanwhile
	}
	if _, err := f.Tables.GetTableInfo(ctx, spec.Table); err == nil {
		return nil, f.Rebind(ctx) // another instance created it
	}
	if err := checkBinds(ctx, spec, d, f.Tables); err != nil {
		return nil, fmt.Errorf("%w: table %s not created: %w", ErrCannotCreate, spec.Table, err)
	}
	if err := f.Tables.CreateDatabase(ctx, spec.Table.Database, true); err != nil {
		return nil, fmt.Errorf("create database %s: %w", spec.Table.Database, err)
	}
	// Fluss 0.9.1 may leave a new table's bucket without a leader for
	// good; CreateTableReady re-creates it then (nobody writes it yet: the
	// route binds after this). Another instance may create it first.
	create := func() error { return f.Tables.CreateTableReady(ctx, spec.Table, d, 0) }
	if d.IsPartitioned() {
		create = func() error { return f.Tables.CreateTable(ctx, spec.Table, d, true) }
	}
	if err := create(); err != nil && !errors.Is(err, fluss.ErrTableAlreadyExist) {
		return nil, fmt.Errorf("create table %s: %w", spec.Table, err)
	}
	f.Log.Info("table created from a writer schema", created...)
	if err := f.Rebind(ctx); err != nil {
		return nil, fmt.Errorf("bind route %s to the created table: %w", spec.Name, err)
	}
	return notAdded, nil
}

// planCreate is the table spec's route gets from w (and key, see
// createTable), with w's fields that no column was made for. The error
// wraps ErrCannotCreate.
func planCreate(spec mapping.RouteSpec, w WriterSchema, key *WriterSchema) (*fluss.TableDescriptor, []mapping.FieldNotAdded, error) {
	cols, notAdded, err := w.Columns(string(spec.Value.Format))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCannotCreate, err)
	}
	var keyCols []fluss.Column
	if key != nil {
		if keyCols, err = keyColumns(string(spec.Key.Format), *key); err != nil {
			return nil, nil, fmt.Errorf("%w: no primary key can be made from the key's writer schema: %w", ErrCannotCreate, err)
		}
	}
	d, problems := createDescriptor(spec, cols, keyCols)
	if len(problems) > 0 {
		return nil, nil, fmt.Errorf("%w: table %s not created: %s", ErrCannotCreate, spec.Table, strings.Join(problems, "; "))
	}
	return d, notAdded, nil
}

// createDescriptor is the table a route's writer columns make, with its
// metadata and time-partition columns and follow_schema's shape. keyCols,
// when follow_schema.primary_key_from_key, are the key writer schema's
// columns: the primary key, in front of the value's columns.
func createDescriptor(spec mapping.RouteSpec, cols, keyCols []fluss.Column) (*fluss.TableDescriptor, []string) {
	var problems []string
	fs := spec.FollowSchema
	pk := slices.Clone(fs.PrimaryKey)
	all := slices.Clone(keyCols)
	for _, c := range cols {
		i := slices.IndexFunc(all, func(k fluss.Column) bool { return k.Name == c.Name })
		switch {
		case i < 0:
			all = append(all, c)
		case all[i].Type.NonNull().String() != c.Type.NonNull().String():
			problems = append(problems, fmt.Sprintf("field %s is %s in the key's writer schema but %s in the value's: one column cannot hold both", c.Name, all[i].Type, c.Type))
		}
	}
	for _, k := range keyCols {
		pk = append(pk, k.Name)
	}
	add := func(name string, t fluss.DataType) {
		if name == "" || slices.ContainsFunc(all, func(c fluss.Column) bool { return c.Name == name }) {
			return
		}
		all = append(all, fluss.Column{Name: name, Type: t})
	}
	m := spec.Metadata
	add(m.Key, fluss.Bytes())
	if m.Headers != "" && m.HeadersFormat != mapping.HeadersJSON {
		problems = append(problems, fmt.Sprintf("metadata.headers_format %s: create column %s yourself", m.HeadersFormat, m.Headers))
	}
	add(m.Headers, fluss.String())
	add(m.Timestamp, fluss.TimestampLTZ(3))
	add(m.Partition, fluss.Int())
	add(m.Offset, fluss.BigInt())
	add(m.Topic, fluss.String())
	for _, ps := range spec.Partition {
		if ps.From == mapping.PartitionFromTimestamp {
			add(ps.Column, fluss.String())
		}
	}
	for _, k := range append(slices.Clone(pk), fs.PartitionKeys...) {
		i := slices.IndexFunc(all, func(c fluss.Column) bool { return c.Name == k })
		if i < 0 {
			problems = append(problems, fmt.Sprintf("follow_schema names column %s, which neither the writer schema nor the route fills", k))
			continue
		}
		if slices.Contains(pk, k) {
			all[i].Type = all[i].Type.NonNull()
		}
	}
	d := &fluss.TableDescriptor{Schema: fluss.Schema{Columns: all, PrimaryKey: pk},
		PartitionKeys: slices.Clone(fs.PartitionKeys), BucketCount: fs.Buckets, Properties: fs.Properties}
	return d, problems
}

// TableInfoReader reads a table's info from Fluss.
type TableInfoReader interface {
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
}

// checkBinds binds the route to the planned table, so that a plan never
// creates a table its own route refuses. The route's other table (its
// dead-letter table) is read with info, as binding it would.
func checkBinds(ctx context.Context, spec mapping.RouteSpec, d *fluss.TableDescriptor, info TableInfoReader) error {
	rs, err := mapping.NewRoutes([]mapping.RouteSpec{spec})
	if err != nil {
		return err
	}
	bd := *d
	if bd.BucketCount == 0 {
		bd.BucketCount = 1 // the server's default, unknown here, changes nothing bound
	}
	infos := map[fluss.TablePath]*fluss.TableInfo{spec.Table: {Path: spec.Table, Descriptor: bd}}
	if dlq := spec.Errors.DLQTable; spec.Errors.Mode == mapping.ErrorsDLQ && dlq != spec.Table {
		di, err := info.GetTableInfo(ctx, dlq)
		if err != nil {
			return fmt.Errorf("dead-letter table %s: %w", dlq, err)
		}
		infos[dlq] = di
	}
	if _, err = rs.Bind(infos); err != nil {
		return fmt.Errorf("the route would not bind to the planned table: %w", err)
	}
	return nil
}
