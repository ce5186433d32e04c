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
// added. A field Fluss cannot add (new inside a ROW column, or of a type
// no column holds) is like any field the table lacks: the converter leaves
// it out (unknown_fields: ignore) or refuses its records (reject), and it
// is logged once per writer schema and counted. A field whose type changed
// is the converter's too: it refuses the records, naming field, column
// and types.

// schemaFollower adds the columns; one bridge has one.
type schemaFollower struct {
	tables tableAlterer
	// rebind binds every route again with fresh table infos (the
	// gateway's reload of the routes in force).
	rebind func(ctx context.Context) error
	log    *slog.Logger
	// added counts the columns this instance added, per route (nil: none).
	added func(route string, n int)
	// notAdded counts the fields no column was made for, per route (nil:
	// none counted).
	notAdded func(route string, n int)

	mu      sync.Mutex // one change at a time
	checked sync.Map   // followKey -> struct{}: the table holds the schema's fields
	// warned holds the writer schemas whose fields not added were logged
	// (followKey without the table schema): once per route and schema.
	warned sync.Map
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
	message     string                 // Protobuf: the records' message
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
	// message is the Protobuf message the records are (a .proto file may
	// declare several; the framing says which).
	message  string
	envelope []byte // a Connect envelope's schema
	digest   uint64
}

// envelopeWriterSchema is a Connect envelope's schema, keyed by its digest.
func envelopeWriterSchema(sch []byte) writerSchema {
	h := fnv.New64a()
	h.Write(sch)
	return writerSchema{envelope: sch, digest: h.Sum64()}
}

// registryWriterSchema is the writer schema of a registry-framed value or
// key: for Protobuf, with the message its framing names.
func registryWriterSchema(format string, v *mapping.Serialized) (writerSchema, error) {
	w := writerSchema{registry: v.Schema}
	if format == string(mapping.ValueProtobuf) {
		m, err := mapping.ProtobufMessage(v.Schema, v.Ref)
		if err != nil {
			return w, err
		}
		w.message = m
	}
	return w, nil
}

func (w writerSchema) key(route string, tableSchema int32) followKey {
	return followKey{route: route, tableSchema: tableSchema, writer: w.registry, message: w.message, envelope: w.digest}
}

// id names the schema in logs: the registry id (and message), or the
// envelope digest.
func (w writerSchema) id() slog.Attr {
	switch {
	case w.registry != nil && w.message != "":
		return slog.Group("writer_schema", slog.Int64("id", w.registry.ID), slog.String("message", w.message))
	case w.registry != nil:
		return slog.Int64("schema_id", w.registry.ID)
	}
	return slog.String("envelope_schema", fmt.Sprintf("%016x", w.digest))
}

// columns are the columns the schema's top-level fields fill, and the
// fields no column type holds.
func (w writerSchema) columns(format string) ([]fluss.Column, []mapping.FieldNotAdded, error) {
	if w.registry != nil {
		return mapping.WriterColumns(format, w.registry, w.message)
	}
	return mapping.ConnectSchemaColumns(w.envelope)
}

// writerSchemas returns the distinct writer schemas of the batch: the
// registry schemas its values name, or the schemas of its Connect
// envelopes. Consecutive records nearly always share one.
func writerSchemas(route *mapping.Route, req *kafkaproto.PartitionProduce, cb *convBatch) []writerSchema {
	var out []writerSchema
	format := route.Spec().Value.Format
	if format == mapping.ValueConnectJSON {
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
	var last *mapping.Serialized
	for i := range cb.framing.values {
		v := &cb.framing.values[i]
		if v.Schema == nil || v.Err != nil || (last != nil && sameWriter(last, v)) {
			continue
		}
		last = v
		w, err := registryWriterSchema(string(format), v)
		if err != nil {
			continue // the converter refuses the record, with the reason
		}
		if !slices.ContainsFunc(out, func(o writerSchema) bool { return o.registry == w.registry && o.message == w.message }) {
			out = append(out, w)
		}
	}
	return out
}

// sameWriter reports whether two framed values name the same schema and
// message.
func sameWriter(a, b *mapping.Serialized) bool {
	return a.Schema == b.Schema && a.Ref.MessageName == b.Ref.MessageName && slices.Equal(a.Ref.MessageIndexes, b.Ref.MessageIndexes)
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
		cols, notAdded, err := w.columns(string(route.Spec().Value.Format))
		if err != nil {
			// No columns to add; the converter says what is wrong with
			// the schema's records.
			f.log.Warn("writer schema not followed: no columns derived from it", slog.String("route", route.Name()),
				slog.String("table", route.Table().String()), w.id(), slog.Any("err", err))
			f.checked.Store(key, struct{}{})
			continue
		}
		missing, nested := mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, cols)
		f.warnNotAdded(route, w, append(notAdded, nested...))
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
		if info := st.infos[route.Table()]; info != nil {
			if rest, _ := mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, cols); len(rest) == 0 {
				f.checked.Store(w.key(route.Name(), info.SchemaID), struct{}{})
			}
		}
	}
	return st, route, nil
}

// warnNotAdded logs, once per route and writer schema, the fields no
// column is made for, and counts them.
func (f *schemaFollower) warnNotAdded(route *mapping.Route, w writerSchema, notAdded []mapping.FieldNotAdded) {
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
	policy := route.Spec().Value.UnknownFields
	effect := "its values are left out of the rows (value.unknown_fields: ignore)"
	if policy == mapping.FieldReject {
		effect = "records that carry it are refused (value.unknown_fields: reject)"
		if route.DLQ() != nil {
			effect = "records that carry it go to the dead-letter table (value.unknown_fields: reject, errors.mode: dlq)"
		}
	}
	f.log.Warn("writer schema field not added to the table: Fluss cannot add it; "+effect, slog.String("route", route.Name()),
		slog.String("table", route.Table().String()), w.id(), slog.String("fields", strings.Join(fields, "; ")))
	if f.notAdded != nil {
		f.notAdded(route.Name(), len(notAdded))
	}
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
	if missing, _ = mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, missing); len(missing) > 0 {
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
		still, _ := mapping.ColumnsToAdd(info.Descriptor.Schema.Columns, missing)
		if len(still) == 0 {
			f.log.Info("columns a writer schema needs were added by another writer", slog.String("route", route.Name()),
				slog.String("table", route.Table().String()), w.id(), slog.Any("columns", columnNames(missing)))
			return nil
		}
		missing = still
	}
	return err
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
// records (and, with follow_schema.primary_key_from_key, its primary key
// from the first key's), as `gateway tables apply` would, unless another
// batch or instance did first, and binds the routes again.
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
	w, err := s.firstWriterSchema(ctx, spec, req, false)
	if err != nil {
		return err
	}
	cols, notAdded, err := w.columns(string(spec.Value.Format))
	if err != nil {
		return fmt.Errorf("%w: no table can be made from the writer schema: %w", kafkaproto.ErrInvalidRecord, err)
	}
	var keyCols []fluss.Column
	if spec.FollowSchema.PrimaryKeyFromKey {
		kw, err := s.firstWriterSchema(ctx, spec, req, true)
		if err != nil {
			return err
		}
		if keyCols, err = keyColumns(string(spec.Key.Format), kw); err != nil {
			return fmt.Errorf("%w: no primary key can be made from the key's writer schema: %w", kafkaproto.ErrInvalidRecord, err)
		}
	}
	d, problems := createDescriptor(spec, cols, keyCols)
	if len(problems) == 0 {
		if err := checkBinds(ctx, spec, d, f.tables); err != nil {
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
		w.id(), slog.Any("columns", columnNames(d.Schema.Columns)), slog.Any("primary_key", d.Schema.PrimaryKey))
	if err := f.rebind(ctx); err != nil {
		return fmt.Errorf("%w: bind route %s to the created table: %w", kafkaproto.ErrRequestTimedOut, spec.Name, err)
	}
	if r, ok := s.state.Load().routes.Resolve(req.Topic); ok {
		f.warnNotAdded(r, w, notAdded)
	}
	return nil
}

// keyColumns are the primary-key columns a key's writer schema makes:
// every top-level field, each with a column type.
func keyColumns(format string, w writerSchema) ([]fluss.Column, error) {
	cols, notAdded, err := w.columns(format)
	if err != nil {
		return nil, err
	}
	if len(notAdded) > 0 {
		return nil, fmt.Errorf("a primary key holds every field of the key, and %s", notAdded[0])
	}
	return cols, nil
}

// firstWriterSchema is the writer schema of req's first record that has
// one: of its value, or (key) of its key.
func (s *bridge) firstWriterSchema(ctx context.Context, spec mapping.RouteSpec, req *kafkaproto.PartitionProduce, key bool) (writerSchema, error) {
	what, format := "value", string(spec.Value.Format)
	if key {
		what, format = "key", string(spec.Key.Format)
	}
	if !key && spec.Value.Format == mapping.ValueConnectJSON {
		for i := range req.Records {
			if sch := mapping.ConnectEnvelopeSchema(req.Records[i].Value); sch != nil {
				return envelopeWriterSchema(sch), nil
			}
		}
		return writerSchema{}, fmt.Errorf("%w: no record of the batch is a Kafka Connect envelope with a schema", kafkaproto.ErrInvalidRecord)
	}
	opts, ok := mapping.SpecFramingOptions(spec, key)
	if !ok || s.reg == nil {
		return writerSchema{}, fmt.Errorf("%w: %s.format %s has no writer schema here", kafkaproto.ErrInvalidRecord, what, format)
	}
	for i := range req.Records {
		kr := &req.Records[i]
		data := kr.Value
		if key {
			data = kr.Key
		}
		if data == nil {
			continue
		}
		ref, _, err := schemaregistry.ParseFraming(data, headerLookup(kr.Headers), opts)
		if err != nil {
			continue
		}
		sc, err := s.reg.Resolve(ctx, ref)
		switch {
		case err == nil:
			w, err := registryWriterSchema(format, &mapping.Serialized{Ref: ref, Schema: sc})
			if err != nil {
				return writerSchema{}, fmt.Errorf("%w: the %s's writer schema (id %d): %w", kafkaproto.ErrInvalidRecord, what, sc.ID, err)
			}
			return w, nil
		case errors.Is(err, schemaregistry.ErrUnknownSchema):
			continue
		default:
			return writerSchema{}, fmt.Errorf("%w: %w: look up %v: %w", kafkaproto.ErrRequestTimedOut, errRegistryUnavailable, ref, err)
		}
	}
	return writerSchema{}, fmt.Errorf("%w: no record of the batch names a %s writer schema the registry knows", kafkaproto.ErrInvalidRecord, what)
}
