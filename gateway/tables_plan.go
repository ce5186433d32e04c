package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// `gateway tables plan|apply` (docs/configuration.md, "Tables from writer
// schemas"): what each route's table needs so that its value subject's
// latest writer schema fills it: the table, when it does not exist
// (columns from the schema's top-level fields, plus the route's metadata
// and partition columns, shaped by follow_schema), or the nullable columns
// it lacks, appended as Fluss allows. Changes Fluss cannot make (a column's
// type) are reported, never attempted.

// TablePlan is what one route's table needs.
type TablePlan struct {
	Route    string
	Table    fluss.TablePath
	Subject  string
	SchemaID int64
	// Create is the table to create; nil when it exists.
	Create *fluss.TableDescriptor
	// Add are the columns the existing table lacks.
	Add []fluss.Column
	// NotAdded are the writer fields no column is made for (new inside a
	// ROW column, or of a type no column holds): records are written
	// without them, as with any field the table lacks.
	NotAdded []mapping.FieldNotAdded
	// Problems are what the writer schema needs and Fluss cannot do.
	Problems []string
}

// Empty reports whether the table already fits.
func (p *TablePlan) Empty() bool { return p.Create == nil && len(p.Add) == 0 && len(p.Problems) == 0 }

// String renders the plan as SQL-like statements, one per line, and the
// problems as comments.
func (p *TablePlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- route %s: subject %q, schema id %d\n", p.Route, p.Subject, p.SchemaID)
	if d := p.Create; d != nil {
		fmt.Fprintf(&b, "CREATE TABLE %s (\n", p.Table)
		for i, c := range d.Schema.Columns {
			fmt.Fprintf(&b, "  %s %s", c.Name, c.Type) // the type says NOT NULL
			if i < len(d.Schema.Columns)-1 || len(d.Schema.PrimaryKey) > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		if len(d.Schema.PrimaryKey) > 0 {
			fmt.Fprintf(&b, "  PRIMARY KEY (%s) NOT ENFORCED\n", strings.Join(d.Schema.PrimaryKey, ", "))
		}
		b.WriteString(")")
		if len(d.PartitionKeys) > 0 {
			fmt.Fprintf(&b, " PARTITIONED BY (%s)", strings.Join(d.PartitionKeys, ", "))
		}
		var with []string
		if d.BucketCount > 0 {
			with = append(with, fmt.Sprintf("'bucket.num' = '%d'", d.BucketCount))
		}
		for _, k := range sortedKeys(d.Properties) {
			with = append(with, fmt.Sprintf("'%s' = '%s'", k, d.Properties[k]))
		}
		if len(with) > 0 {
			fmt.Fprintf(&b, " WITH (%s)", strings.Join(with, ", "))
		}
		b.WriteString(";\n")
	}
	for _, c := range p.Add {
		fmt.Fprintf(&b, "ALTER TABLE %s ADD COLUMN %s %s;\n", p.Table, c.Name, c.Type)
	}
	for _, n := range p.NotAdded {
		fmt.Fprintf(&b, "-- not added (records are written without it, or refused under unknown_fields: reject): %s\n", n)
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(&b, "-- cannot: %s\n", pr)
	}
	switch {
	case p.Empty() && len(p.NotAdded) == 0:
		b.WriteString("-- nothing to do: the table holds every field\n")
	case p.Empty():
		b.WriteString("-- nothing to apply: the table holds every field Fluss can add\n")
	}
	return b.String()
}

// PlanTables computes the plans of cfg's routes that name a value subject
// (only the route named route, if not empty).
func PlanTables(ctx context.Context, cfg *configs.Config, route string) ([]*TablePlan, error) {
	set, err := settingsFrom(cfg)
	if err != nil {
		return nil, err
	}
	if set.registry == nil {
		return nil, errors.New("tables plan needs schema_registry: the tables follow registry writer schemas")
	}
	client, err := fluss.NewClient(set.fluss)
	if err != nil {
		return nil, fmt.Errorf("fluss client: %w", err)
	}
	defer client.Close()
	reg, err := schemaregistry.New(*set.registry)
	if err != nil {
		return nil, fmt.Errorf("schema_registry: %w", err)
	}
	defer reg.Close()
	var plans []*TablePlan
	found := false
	for _, spec := range set.routes {
		spec = spec.WithDefaults()
		if route != "" && spec.Name != route {
			continue
		}
		found = true
		if spec.Value.Subject == "" {
			if route != "" {
				return nil, fmt.Errorf("route %q names no value.subject: there is no writer schema to plan from", route)
			}
			continue
		}
		p, err := planTable(ctx, client, reg, spec)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", spec.Name, err)
		}
		plans = append(plans, p)
	}
	if route != "" && !found {
		return nil, fmt.Errorf("no route named %q", route)
	}
	return plans, nil
}

func planTable(ctx context.Context, client *fluss.Client, reg *schemaregistry.Client, spec mapping.RouteSpec) (*TablePlan, error) {
	schema, err := reg.LatestSchema(ctx, spec.Value.Subject)
	if err != nil {
		return nil, fmt.Errorf("value.subject %q: %w", spec.Value.Subject, err)
	}
	p := &TablePlan{Route: spec.Name, Table: spec.Table, Subject: spec.Value.Subject, SchemaID: schema.ID}
	cols, notAdded, err := mapping.WriterColumns(string(spec.Value.Format), schema, spec.Value.Message)
	if err != nil {
		return nil, fmt.Errorf("latest schema of %q (id %d): %w", spec.Value.Subject, schema.ID, err)
	}
	p.NotAdded = notAdded
	// value.columns paths name other fields: the writer field of that name
	// fills the column of the path's target instead; keep it simple and
	// refuse to guess.
	if len(spec.Value.Paths) > 0 {
		return nil, errors.New("value.columns is set: derive the table by hand (the plan fills columns by field name only)")
	}
	info, err := client.GetTableInfo(ctx, spec.Table)
	switch {
	case errors.Is(err, fluss.ErrTableNotExist), errors.Is(err, fluss.ErrDatabaseNotExist):
		var keyCols []fluss.Column
		if spec.FollowSchema.PrimaryKeyFromKey {
			if spec.Key.Subject == "" {
				return nil, errors.New("follow_schema.primary_key_from_key: name the key's subject (key.subject) for a plan to take the primary key from")
			}
			ks, err := reg.LatestSchema(ctx, spec.Key.Subject)
			if err != nil {
				return nil, fmt.Errorf("key.subject %q: %w", spec.Key.Subject, err)
			}
			if keyCols, err = keyColumns(string(spec.Key.Format), writerSchema{registry: ks, message: spec.Key.Message}); err != nil {
				return nil, fmt.Errorf("latest schema of %q (id %d): %w", spec.Key.Subject, ks.ID, err)
			}
		}
		d, problems := createDescriptor(spec, cols, keyCols)
		p.Problems = problems
		if len(problems) == 0 {
			p.Create = d
			if err := checkBinds(ctx, spec, d, client); err != nil {
				p.Create, p.Problems = nil, []string{err.Error()}
			}
		}
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("table %s: %w", spec.Table, err)
	}
	have := info.Descriptor.Schema.Columns
	var nested []mapping.FieldNotAdded
	p.Add, nested = mapping.ColumnsToAdd(have, cols)
	p.NotAdded = append(p.NotAdded, nested...)
	for _, c := range cols {
		i := slices.IndexFunc(have, func(h fluss.Column) bool { return h.Name == c.Name })
		if i < 0 {
			continue
		}
		if h := have[i].Type; h.Root != c.Type.Root {
			p.Problems = append(p.Problems, fmt.Sprintf("field %s is %s in the writer schema, but column %s of %s is %s: Fluss cannot change a column's type",
				c.Name, c.Type, c.Name, spec.Table, h))
		}
	}
	return p, nil
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

// checkBinds binds the route to the planned table, so that a plan never
// creates a table its own route refuses. The route's other table (its
// dead-letter table) is read with info, as binding it would.
func checkBinds(ctx context.Context, spec mapping.RouteSpec, d *fluss.TableDescriptor, info tableInfoReader) error {
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

// tableInfoReader reads a table's info from Fluss.
type tableInfoReader interface {
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
}

// ApplyTables issues plans: each database and table created, each column
// added. A plan with problems is not applied; the problems are returned.
// A column another writer added meanwhile is no error.
func ApplyTables(ctx context.Context, cfg *configs.Config, plans []*TablePlan) error {
	set, err := settingsFrom(cfg)
	if err != nil {
		return err
	}
	client, err := fluss.NewClient(set.fluss)
	if err != nil {
		return fmt.Errorf("fluss client: %w", err)
	}
	defer client.Close()
	var errs []error
	for _, p := range plans {
		if len(p.Problems) > 0 {
			errs = append(errs, fmt.Errorf("route %q, table %s: not applied: %s", p.Route, p.Table, strings.Join(p.Problems, "; ")))
			continue
		}
		if p.Create != nil {
			if err := client.CreateDatabase(ctx, p.Table.Database, true); err != nil {
				errs = append(errs, fmt.Errorf("route %q: create database %s: %w", p.Route, p.Table.Database, err))
				continue
			}
			if err := client.CreateTable(ctx, p.Table, p.Create, true); err != nil {
				errs = append(errs, fmt.Errorf("route %q: create table %s: %w", p.Route, p.Table, err))
			}
		}
		if len(p.Add) > 0 {
			if err := client.AddColumns(ctx, p.Table, p.Add); err != nil && !addedMeanwhile(ctx, client, p, err) {
				errs = append(errs, fmt.Errorf("route %q: add columns to %s: %w", p.Route, p.Table, err))
			}
		}
	}
	return errors.Join(errs...)
}

// addedMeanwhile reports whether an AddColumns refused as "exists" lost a
// race to another writer that added the same columns.
func addedMeanwhile(ctx context.Context, client *fluss.Client, p *TablePlan, err error) bool {
	if !errors.Is(err, fluss.ErrInvalidAlterTable) {
		return false
	}
	client.InvalidateTableInfo(p.Table)
	info, ierr := client.GetTableInfo(ctx, p.Table)
	if ierr != nil {
		return false
	}
	for _, c := range p.Add {
		if !slices.ContainsFunc(info.Descriptor.Schema.Columns, func(h fluss.Column) bool { return h.Name == c.Name }) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
