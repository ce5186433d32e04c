package schemafollow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Columns that follow writer schemas (follow_schema.add_columns): before a
// batch of a registry format (or of Connect envelopes) is converted, each
// writer schema it names that the route has not checked against its table
// yet is compared with the table; top-level fields the table lacks are
// added as nullable columns (the only change Fluss makes to a schema) and
// the routes are bound again, so that this batch and every later one fill
// them. Instances adding the same columns at once all succeed: the first
// adds them, the others find them added. A field Fluss cannot add (new
// inside a ROW column, or of a type no column holds) is like any field the
// table lacks: the converter leaves it out (unknown_fields: ignore) or
// refuses its records (reject), and it is logged once per writer schema
// and counted. A field whose type changed is the converter's too: it
// refuses the records, naming field, column and types.

// Follower adds the columns and creates the tables; one gateway has one.
// Its methods are safe for concurrent use.
type Follower struct {
	Tables Alterer
	// Registry resolves the writer schema a table is created from (nil:
	// only Connect envelopes create tables).
	Registry *schemaregistry.Client
	// Rebind binds every route again with fresh table infos (the
	// gateway's reload of the routes in force).
	Rebind func(ctx context.Context) error
	Log    *slog.Logger
	// Added counts the columns this instance added, per route (nil: none).
	Added func(route string, n int)
	// NotAdded counts the fields no column was made for, per route (nil:
	// none counted).
	NotAdded func(route string, n int)

	mu      sync.Mutex // one change at a time
	checked sync.Map   // followKey -> struct{}: the table holds the schema's fields
	// warned holds the writer schemas whose fields not added were logged
	// (followKey without the table schema): once per route and schema.
	warned sync.Map
}

// Alterer is what following writer schemas needs from Fluss.
type Alterer interface {
	AddColumns(ctx context.Context, path fluss.TablePath, cols []fluss.Column) error
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	CreateDatabase(ctx context.Context, name string, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d *fluss.TableDescriptor, ignoreIfExists bool) error
	CreateTableReady(ctx context.Context, path fluss.TablePath, d *fluss.TableDescriptor, attempts int) error
}

// followKey is a writer schema checked against one schema of a route's
// table (a new table schema is checked again).
type followKey struct {
	route       string
	tableSchema int32
	writer      *schemaregistry.Schema // registry formats: cached, one pointer per schema
	message     string                 // Protobuf: the records' message
	envelope    uint64                 // connect_json: the digest of the envelope's schema
}

func (w WriterSchema) key(route string, tableSchema int32) followKey {
	return followKey{route: route, tableSchema: tableSchema, writer: w.Registry, message: w.Message, envelope: w.Digest}
}

// follows reports whether the route adds columns for its writer schemas.
func follows(route *mapping.Route) bool {
	spec := route.Spec()
	return spec.FollowSchema.AddColumns && (mapping.IsRegistryFormat(string(spec.Value.Format)) || spec.Value.Format == mapping.ValueConnectJSON)
}

// Needed reports, without blocking, whether a writer schema of the batch
// has not been checked against the route's table (as info describes it)
// yet: FollowBatch must run before the batch converts.
func (f *Follower) Needed(route *mapping.Route, info *fluss.TableInfo, b Batch) bool {
	if f == nil || !follows(route) {
		return false
	}
	for _, w := range b.writerSchemas(route.Spec().Value.Format) {
		if !f.wasChecked(route, info.SchemaID, w) {
			return true
		}
	}
	return false
}

// ErrRouteGone: the routes bound again after columns were added no longer
// route the batch's topic (a reload removed it meanwhile).
var ErrRouteGone = errors.New("the topic's route is gone")

// FollowBatch adds the columns the batch's writer schemas need to the
// route's table (info) and returns the route to convert the batch with.
// When columns were added the routes are bound again and rebound returns
// the new generation's route and table info (ok false: the topic is no
// longer routed, ErrRouteGone). A failure is retriable for the producer:
// nothing of the batch is written.
func (f *Follower) FollowBatch(ctx context.Context, route *mapping.Route, info *fluss.TableInfo, b Batch,
	rebound func() (*mapping.Route, *fluss.TableInfo, bool)) (*mapping.Route, error) {
	if f == nil || !follows(route) {
		return route, nil
	}
	for _, w := range b.writerSchemas(route.Spec().Value.Format) {
		// Twice at most: a second look after adding finds the table
		// holding w and marks it checked for the new table schema.
		for range 2 {
			if f.wasChecked(route, info.SchemaID, w) {
				break
			}
			added, err := f.followOne(ctx, route, info, w)
			if err != nil {
				return route, err
			}
			if !added {
				break
			}
			var ok bool
			if route, info, ok = rebound(); !ok {
				return route, ErrRouteGone
			}
		}
	}
	return route, nil
}

// wasChecked reports, without blocking, whether w was checked against the
// table schema of the route's table.
func (f *Follower) wasChecked(route *mapping.Route, tableSchema int32, w WriterSchema) bool {
	_, ok := f.checked.Load(w.key(route.Name(), tableSchema))
	return ok
}

// followOne checks w against the route's table as info describes it and
// adds the top-level columns the table lacks (unless another batch or
// instance did meanwhile), then binds the routes again. added says it
// did: the caller continues with the new routes (and may check w again,
// which then finds the table holding it). A failure leaves the table as it was, or
// with the columns another writer added.
func (f *Follower) followOne(ctx context.Context, route *mapping.Route, info *fluss.TableInfo, w WriterSchema) (added bool, err error) {
	key := w.key(route.Name(), info.SchemaID)
	cols, notAdded, err := w.Columns(string(route.Spec().Value.Format))
	if err != nil {
		// No columns to add; the converter says what is wrong with the
		// schema's records.
		f.Log.Warn("writer schema not followed: no columns derived from it", slog.String("route", route.Name()),
			slog.String("table", route.Table().String()), w.ID(), slog.Any("err", err))
		f.checked.Store(key, struct{}{})
		return false, nil
	}
	missing, nested := mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, cols)
	f.warnNotAdded(route, w, append(notAdded, nested...))
	if len(missing) == 0 {
		f.checked.Store(key, struct{}{})
		return false, nil
	}
	if err := f.add(ctx, route, w, missing); err != nil {
		return false, fmt.Errorf("add columns %v to %s: %w", columnNames(missing), route.Table(), err)
	}
	return true, nil
}

// warnNotAdded logs, once per route and writer schema, the fields no
// column is made for, and counts them.
func (f *Follower) warnNotAdded(route *mapping.Route, w WriterSchema, notAdded []mapping.FieldNotAdded) {
	if len(notAdded) == 0 {
		return
	}
	if _, loaded := f.warned.LoadOrStore(w.key(route.Name(), 0), struct{}{}); loaded {
		return
	}
	fields := make([]string, len(notAdded))
	for i, n := range notAdded {
		fields[i] = n.String()
	}
	effect := "its values are left out of the rows (value.unknown_fields: ignore)"
	if route.Spec().Value.UnknownFields == mapping.FieldReject {
		effect = "records that carry it are refused (value.unknown_fields: reject)"
		if route.DLQ() != nil {
			effect = "records that carry it go to the dead-letter table (value.unknown_fields: reject, errors.mode: dlq)"
		}
	}
	f.Log.Warn("writer schema field not added to the table: Fluss cannot add it; "+effect, slog.String("route", route.Name()),
		slog.String("table", route.Table().String()), w.ID(), slog.String("fields", strings.Join(fields, "; ")))
	if f.NotAdded != nil {
		f.NotAdded(route.Name(), len(notAdded))
	}
}

// add appends missing to the route's table (unless another batch or
// instance did meanwhile) and binds the routes again.
func (f *Follower) add(ctx context.Context, route *mapping.Route, w WriterSchema, missing []fluss.Column) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := f.Tables.GetTableInfo(ctx, route.Table())
	if err != nil {
		return err
	}
	if missing, _ = mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, missing); len(missing) > 0 {
		if err := f.addRacing(ctx, route, w, missing); err != nil {
			return err
		}
	}
	return f.Rebind(ctx)
}

// addRacing adds missing, tolerating other writers adding columns at the
// same moment: Fluss 0.9.1's coordinator does not serialize schema changes,
// so of two concurrent adds one may fail (INVALID_ALTER_TABLE_EXCEPTION, or
// an internal "NodeExists .../schemas/N"). After a failure the table is
// read again: columns now there were added by the other writer; the rest
// are added again, a few times.
func (f *Follower) addRacing(ctx context.Context, route *mapping.Route, w WriterSchema, missing []fluss.Column) error {
	const attempts = 3
	var err error
	for range attempts {
		if err = f.Tables.AddColumns(ctx, route.Table(), missing); err == nil {
			if f.Added != nil {
				f.Added(route.Name(), len(missing))
			}
			f.Log.Info("columns added to follow a writer schema", slog.String("route", route.Name()), slog.String("table", route.Table().String()),
				w.ID(), slog.Any("columns", columnNames(missing)))
			return nil
		}
		info, ierr := f.Tables.GetTableInfo(ctx, route.Table())
		if ierr != nil {
			return errors.Join(err, ierr)
		}
		still, _ := mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, missing)
		if len(still) == 0 {
			f.Log.Info("columns a writer schema needs were added by another writer", slog.String("route", route.Name()),
				slog.String("table", route.Table().String()), w.ID(), slog.Any("columns", columnNames(missing)))
			return nil
		}
		missing = still
	}
	return err
}
