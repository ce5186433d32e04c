package schemafollow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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

// LatestSchemas is what a plan needs from the registry.
type LatestSchemas interface {
	LatestSchema(ctx context.Context, subject string) (*schemaregistry.Schema, error)
}

// DDL is what applying a plan needs from Fluss.
type DDL interface {
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	InvalidateTableInfo(path fluss.TablePath)
	CreateDatabase(ctx context.Context, name string, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d *fluss.TableDescriptor, ignoreIfExists bool) error
	AddColumns(ctx context.Context, path fluss.TablePath, cols []fluss.Column) error
}

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
		for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
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

// Plan computes what spec's table needs so that its value subject's
// latest writer schema fills it (spec names a value subject).
func Plan(ctx context.Context, client TableInfoReader, reg LatestSchemas, spec mapping.RouteSpec) (*TablePlan, error) {
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
			if keyCols, err = keyColumns(string(spec.Key.Format), WriterSchema{Registry: ks, Message: spec.Key.Message}); err != nil {
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

// Apply issues plans: each database and table created, each column
// added. A plan with problems is not applied; the problems are returned.
// A column another writer added meanwhile is no error.
func Apply(ctx context.Context, client DDL, plans []*TablePlan) error {
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
func addedMeanwhile(ctx context.Context, client DDL, p *TablePlan, err error) bool {
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
