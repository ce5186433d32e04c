package gateway

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Columns that follow writer schemas (routes[].follow_schema.add_columns;
// docs/configuration.md, "Tables from writer schemas"): before a batch of
// a registry format is converted, each writer schema it names that the
// route has not checked against its table yet is compared with the table;
// top-level fields the table lacks are added as nullable columns (the only
// change Fluss makes to a schema) and the routes are bound again, so that
// this batch and every later one fill them. Instances adding the same
// columns at once all succeed: the first adds them, the others find them
// added. A field of a type Fluss cannot hold, or whose type changed, is
// left to the converter, which refuses the schema's records with a reason
// naming field, column and types (or ignores an unknown field).

// schemaFollower adds the columns; one bridge has one.
type schemaFollower struct {
	tables tableAlterer
	// rebind binds every route again with fresh table infos (the
	// gateway's reload of the routes in force).
	rebind func(ctx context.Context) error
	log    *slog.Logger
	// added counts the columns this instance added, per route (nil: none).
	added func(route string, n int)

	mu      sync.Mutex // one change at a time
	checked sync.Map   // followKey -> struct{}: the table holds the schema's fields
	// refused are the writer schemas whose records are refused: a change
	// Fluss cannot make (followKey -> error); nrefused says whether any is.
	refused  sync.Map
	nrefused atomic.Int32
	// refusedSchema counts the schemas refused, per route (nil: none).
	refusedSchema func(route string)
}

// tableAlterer is what adding columns needs from Fluss.
type tableAlterer interface {
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
	envelope    uint64                 // connect_json: the digest of the envelope's schema
}

// follows reports whether the route adds columns for its writer schemas.
func follows(route *mapping.Route) bool {
	spec := route.Spec()
	return spec.FollowSchema.AddColumns && (mapping.IsRegistryFormat(string(spec.Value.Format)) || spec.Value.Format == mapping.ValueConnectJSON)
}

// writerSchema is one writer schema a batch names.
type writerSchema struct {
	registry *schemaregistry.Schema
	envelope []byte // a Connect envelope's schema
	digest   uint64
}

// envelopeWriterSchema is a Connect envelope's schema, keyed by its digest.
func envelopeWriterSchema(sch []byte) writerSchema {
	h := fnv.New64a()
	h.Write(sch)
	return writerSchema{envelope: sch, digest: h.Sum64()}
}

func (w writerSchema) key(route string, tableSchema int32) followKey {
	return followKey{route: route, tableSchema: tableSchema, writer: w.registry, envelope: w.digest}
}

// id names the schema in logs: the registry id, or the envelope digest.
func (w writerSchema) id() slog.Attr {
	if w.registry != nil {
		return slog.Int64("schema_id", w.registry.ID)
	}
	return slog.String("envelope_schema", fmt.Sprintf("%016x", w.digest))
}

func (w writerSchema) columns(format mapping.ValueFormat) ([]fluss.Column, error) {
	if w.registry != nil {
		return mapping.WriterColumns(string(format), w.registry)
	}
	return mapping.ConnectSchemaColumns(w.envelope)
}

// writerSchemas returns the distinct writer schemas of the batch: the
// registry schemas its values name, or the schemas of its Connect
// envelopes. Consecutive records nearly always share one.
func writerSchemas(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) []writerSchema {
	var out []writerSchema
	if route.Spec().Value.Format == mapping.ValueConnectJSON {
		var last uint64
		for i := range req.Records {
			sch := mapping.ConnectEnvelopeSchema(req.Records[i].Value)
			if sch == nil {
				continue
			}
			if w := envelopeWriterSchema(sch); w.digest != last && !slices.ContainsFunc(out, func(o writerSchema) bool { return o.digest == w.digest }) {
				last = w.digest
				out = append(out, w)
			}
		}
		return out
	}
	var last *schemaregistry.Schema
	for i := range cb.framing.values {
		sc := cb.framing.values[i].Schema
		if sc != nil && sc != last && !slices.ContainsFunc(out, func(w writerSchema) bool { return w.registry == sc }) {
			last = sc
			out = append(out, writerSchema{registry: sc})
		}
	}
	return out
}

// needed reports, without blocking, whether a writer schema of the batch
// has not been checked against the route's table yet.
func (f *schemaFollower) needed(st *routeState, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) bool {
	if f == nil || !follows(route) {
		return false
	}
	info := st.infos[route.Table()]
	for _, w := range writerSchemas(route, req, cb) {
		if _, ok := f.checked.Load(w.key(route.Name(), info.SchemaID)); !ok {
			return true
		}
	}
	return false
}

// follow adds the columns the batch's writer schemas need and returns the
// routes to convert it with (a new generation when columns were added).
// A failure is retriable for the producer: nothing of the batch is written.
func (s *bridge) follow(ctx context.Context, st *routeState, route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) (*routeState, *mapping.Route, error) {
	f := s.follower
	if f == nil || !follows(route) {
		return st, route, nil
	}
	for _, w := range writerSchemas(route, req, cb) {
		info := st.infos[route.Table()]
		key := w.key(route.Name(), info.SchemaID)
		if _, ok := f.checked.Load(key); ok {
			continue
		}
		cols, err := w.columns(route.Spec().Value.Format)
		if err != nil {
			// No columns to add; the converter says what is wrong with
			// the schema's records.
			f.log.Warn("writer schema not followed: no columns derived from it", slog.String("route", route.Name()),
				slog.String("table", route.Table().String()), w.id(), slog.Any("err", err))
			f.checked.Store(key, struct{}{})
			continue
		}
		if problem := nestedAdditions(info, cols); problem != "" {
			err := fmt.Errorf("writer schema %s: %s of table %s: Fluss cannot add a field inside a ROW column (add_columns adds top-level fields only)",
				w.id().Value, problem, route.Table())
			if _, loaded := f.refused.LoadOrStore(key, err); !loaded {
				f.nrefused.Add(1)
				f.log.Warn("writer schema refused: a change Fluss cannot make", slog.String("route", route.Name()),
					slog.String("table", route.Table().String()), w.id(), slog.Any("err", err))
				if f.refusedSchema != nil {
					f.refusedSchema(route.Name())
				}
			}
			f.checked.Store(key, struct{}{})
			continue
		}
		missing := missingColumns(info, cols)
		if len(missing) == 0 {
			f.checked.Store(key, struct{}{})
			continue
		}
		if err := f.add(ctx, route, w, missing); err != nil {
			return st, route, fmt.Errorf("%w: add columns %v to %s: %w", kafkaproto.ErrRequestTimedOut, columnNames(missing), route.Table(), err)
		}
		st = s.state.Load()
		r, ok := st.routes.Resolve(req.Topic)
		if !ok {
			return st, route, kafkaproto.ErrUnknownTopicOrPartition
		}
		route = r
	}
	return st, route, nil
}

// add appends missing to the route's table (unless another batch or
// instance did meanwhile) and binds the routes again.
func (f *schemaFollower) add(ctx context.Context, route *mapping.Route, w writerSchema, missing []fluss.Column) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := f.tables.GetTableInfo(ctx, route.Table())
	if err != nil {
		return err
	}
	if missing = missingColumns(info, missing); len(missing) > 0 {
		if err := f.addRacing(ctx, route, w, missing); err != nil {
			return err
		}
	}
	return f.rebind(ctx)
}

// addRacing adds missing, tolerating other writers adding columns at the
// same moment: Fluss 0.9.1's coordinator does not serialize schema changes,
// so of two concurrent adds one may fail (INVALID_ALTER_TABLE_EXCEPTION, or
// an internal "NodeExists .../schemas/N"). After a failure the table is
// read again: columns now there were added by the other writer; the rest
// are added again, a few times.
func (f *schemaFollower) addRacing(ctx context.Context, route *mapping.Route, w writerSchema, missing []fluss.Column) error {
	const attempts = 3
	var err error
	for range attempts {
		if err = f.tables.AddColumns(ctx, route.Table(), missing); err == nil {
			if f.added != nil {
				f.added(route.Name(), len(missing))
			}
			f.log.Info("columns added to follow a writer schema", slog.String("route", route.Name()), slog.String("table", route.Table().String()),
				w.id(), slog.Any("columns", columnNames(missing)))
			return nil
		}
		info, ierr := f.tables.GetTableInfo(ctx, route.Table())
		if ierr != nil {
			return errors.Join(err, ierr)
		}
		still := missingColumns(info, missing)
		if len(still) == 0 {
			f.log.Info("columns a writer schema needs were added by another writer", slog.String("route", route.Name()),
				slog.String("table", route.Table().String()), w.id(), slog.Any("columns", columnNames(missing)))
			return nil
		}
		missing = still
	}
	return err
}

// markRefused makes the records of refused writer schemas bad records
// (INVALID_RECORD or the dead-letter table), with the reason. Registry
// formats only: a Connect envelope's nested additions are not refused.
func (f *schemaFollower) markRefused(st *routeState, route *mapping.Route, cb *convBatch) {
	if f == nil || f.nrefused.Load() == 0 || !follows(route) {
		return
	}
	info := st.infos[route.Table()]
	for i := range cb.framing.values {
		v := &cb.framing.values[i]
		if v.Schema == nil || v.Err != nil {
			continue
		}
		if err, ok := f.refused.Load(followKey{route: route.Name(), tableSchema: info.SchemaID, writer: v.Schema}); ok {
			v.Err = err.(error)
		}
	}
}

// nestedAdditions names the first field a writer schema adds inside a ROW
// column the table has ("field a.b is new inside ROW column a"), or "".
func nestedAdditions(info *fluss.TableInfo, cols []fluss.Column) string {
	for _, c := range cols {
		i := slices.IndexFunc(info.Descriptor.Schema.Columns, func(h fluss.Column) bool { return h.Name == c.Name })
		if i < 0 {
			continue
		}
		if p := newRowFields(c.Name, &info.Descriptor.Schema.Columns[i].Type, &c.Type); p != "" {
			return fmt.Sprintf("field %s is new inside ROW column %s", p, c.Name)
		}
	}
	return ""
}

func newRowFields(path string, have, want *fluss.DataType) string {
	if have.Root != fluss.TypeRow || want.Root != fluss.TypeRow {
		return ""
	}
	for _, wf := range want.Fields {
		j := slices.IndexFunc(have.Fields, func(h fluss.Field) bool { return h.Name == wf.Name })
		if j < 0 {
			return path + "." + wf.Name
		}
		if p := newRowFields(path+"."+wf.Name, &have.Fields[j].Type, &wf.Type); p != "" {
			return p
		}
	}
	return ""
}

// missingColumns are the columns of cols that info's table lacks, by name.
func missingColumns(info *fluss.TableInfo, cols []fluss.Column) []fluss.Column {
	var out []fluss.Column
	for _, c := range cols {
		if !slices.ContainsFunc(info.Descriptor.Schema.Columns, func(h fluss.Column) bool { return h.Name == c.Name }) {
			out = append(out, c)
		}
	}
	return out
}

func columnNames(cols []fluss.Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// produceCreating holds a batch of a route whose table does not exist yet
// (follow_schema.create): the table is created from the batch's first
// writer schema, the routes are bound again, and the batch is produced as
// any other. Queued per Kafka partition, so later batches wait for it.
func (s *bridge) produceCreating(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultResolveTimeout)
	}
	c := kafkaproto.NewCompletion()
	s.pending.enqueue(mergedQueue(topicPartition{req.Topic, req.Partition}), func() {
		jctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		stop := context.AfterFunc(s.stopped, cancel)
		defer stop()
		if err := s.createTable(jctx, spec, req); err != nil {
			s.log.Warn("produce: the route's table could not be created from the writer schema", slog.String("route", spec.Name),
				slog.String("table", spec.Table.String()), slog.String("topic", req.Topic), slog.Any("err", err))
			req.Release()
			c.Complete(failedResult(err))
			return
		}
		w, err := s.Produce(jctx, req) // routed now; Produce owns req
		if err != nil {
			c.Complete(failedResult(err))
			return
		}
		go func() {
			<-w.Done()
			c.Complete(w.Result())
		}()
	})
	return c, nil
}

// createTable creates spec's table from the first writer schema of req's
// records, as `gateway tables apply` would, unless another batch or
// instance did first, and binds the routes again.
func (s *bridge) createTable(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce) error {
	f := s.follower
	if f == nil {
		return fmt.Errorf("%w: tables are not created here", kafkaproto.ErrUnknownTopicOrPartition)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := s.state.Load().routes.Resolve(req.Topic); ok {
		return nil // created meanwhile
	}
	if _, err := f.tables.GetTableInfo(ctx, spec.Table); err == nil {
		return f.rebind(ctx) // another instance created it
	}
	w, err := s.firstWriterSchema(ctx, spec, req)
	if err != nil {
		return err
	}
	cols, err := w.columns(spec.Value.Format)
	if err != nil {
		return fmt.Errorf("%w: no table can be made from the writer schema: %w", kafkaproto.ErrInvalidRecord, err)
	}
	d, problems := createDescriptor(spec, cols)
	if len(problems) == 0 {
		if err := checkBinds(spec, d); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: table %s not created: %s", kafkaproto.ErrInvalidRecord, spec.Table, strings.Join(problems, "; "))
	}
	if err := f.tables.CreateDatabase(ctx, spec.Table.Database, true); err != nil {
		return fmt.Errorf("%w: create database %s: %w", kafkaproto.ErrRequestTimedOut, spec.Table.Database, err)
	}
	// Fluss 0.9.1 may leave a new table's bucket without a leader for
	// good; CreateTableReady re-creates it then (nobody writes it yet: the
	// route binds after this). Another instance may create it first.
	create := func() error { return f.tables.CreateTableReady(ctx, spec.Table, d, 0) }
	if d.IsPartitioned() {
		create = func() error { return f.tables.CreateTable(ctx, spec.Table, d, true) }
	}
	if err := create(); err != nil && !errors.Is(err, fluss.ErrTableAlreadyExist) {
		return fmt.Errorf("%w: create table %s: %w", kafkaproto.ErrRequestTimedOut, spec.Table, err)
	}
	f.log.Info("table created from a writer schema", slog.String("route", spec.Name), slog.String("table", spec.Table.String()),
		w.id(), slog.Any("columns", columnNames(d.Schema.Columns)))
	if err := f.rebind(ctx); err != nil {
		return fmt.Errorf("%w: bind route %s to the created table: %w", kafkaproto.ErrRequestTimedOut, spec.Name, err)
	}
	return nil
}

// firstWriterSchema is the writer schema of req's first record that has
// one.
func (s *bridge) firstWriterSchema(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce) (writerSchema, error) {
	if spec.Value.Format == mapping.ValueConnectJSON {
		for i := range req.Records {
			if sch := mapping.ConnectEnvelopeSchema(req.Records[i].Value); sch != nil {
				return envelopeWriterSchema(sch), nil
			}
		}
		return writerSchema{}, fmt.Errorf("%w: no record of the batch is a Kafka Connect envelope with a schema", kafkaproto.ErrInvalidRecord)
	}
	opts, ok := mapping.SpecFramingOptions(spec)
	if !ok || s.reg == nil {
		return writerSchema{}, fmt.Errorf("%w: value.format %s has no writer schema here", kafkaproto.ErrInvalidRecord, spec.Value.Format)
	}
	for i := range req.Records {
		kr := &req.Records[i]
		if kr.Value == nil {
			continue
		}
		ref, _, err := schemaregistry.ParseFraming(kr.Value, headerLookup(kr.Headers), opts)
		if err != nil {
			continue
		}
		sc, err := s.reg.Resolve(ctx, ref)
		switch {
		case err == nil:
			return writerSchema{registry: sc}, nil
		case errors.Is(err, schemaregistry.ErrUnknownSchema):
			continue
		default:
			return writerSchema{}, fmt.Errorf("%w: %w: look up %v: %w", kafkaproto.ErrRequestTimedOut, errRegistryUnavailable, ref, err)
		}
	}
	return writerSchema{}, fmt.Errorf("%w: no record of the batch names a writer schema the registry knows", kafkaproto.ErrInvalidRecord)
}
