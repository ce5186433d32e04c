package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// tableSource is what route binding needs from Fluss.
type tableSource interface {
	TableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	// InvalidateTableInfo makes the next TableInfo ask the server.
	InvalidateTableInfo(path fluss.TablePath)
}

// routeState is one immutable generation of routes bound to their tables;
// the bridge reads it through an atomic pointer and a reload swaps it.
type routeState struct {
	routes *mapping.Routes
	tables map[fluss.TablePath]*accumulator.Table
	infos  map[fluss.TablePath]*fluss.TableInfo
	// creating are the routes (by exact topic) whose table does not exist
	// yet and is created from their first record (follow_schema.create).
	creating map[string]mapping.RouteSpec
}

// bindRoutes compiles the configured routes, fetches every table they name
// and checks each route against its table. Every problem is reported, each
// naming its route, table and column. fresh reads every table from Fluss
// rather than from the client's cache (a reload: a table may have been
// re-created or altered since).
func bindRoutes(ctx context.Context, src tableSource, routes []mapping.RouteSpec, fresh bool) (*mapping.Routes, map[fluss.TablePath]*fluss.TableInfo, map[string]mapping.RouteSpec, error) {
	compiled, err := mapping.NewRoutes(routes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("compile routes: %w", err)
	}
	infos := make(map[fluss.TablePath]*fluss.TableInfo)
	for _, path := range compiled.Tables() {
		if fresh {
			src.InvalidateTableInfo(path)
		}
		info, err := src.TableInfo(ctx, path)
		if err != nil {
			if ctx.Err() != nil || !(errors.Is(err, fluss.ErrTableNotExist) || errors.Is(err, fluss.ErrDatabaseNotExist)) {
				// Not a missing table: Fluss unreachable or failing
				// (load retries what is transient).
				return nil, nil, nil, fmt.Errorf("get table info %s: %w", path, err)
			}
			// Bind reports the missing table with the routes that need it.
			continue
		}
		infos[path] = info
	}
	// A route that creates its missing table waits for its first record,
	// outside the bound routes.
	var creating map[string]mapping.RouteSpec
	var rest []mapping.RouteSpec
	for _, spec := range routes {
		if _, ok := infos[spec.Table]; !ok && spec.FollowSchema.Create && spec.Topic != "" {
			if creating == nil {
				creating = map[string]mapping.RouteSpec{}
			}
			creating[spec.Topic] = spec.WithDefaults()
			continue
		}
		rest = append(rest, spec)
	}
	if creating != nil {
		if compiled, err = mapping.NewRoutes(rest); err != nil {
			return nil, nil, nil, fmt.Errorf("compile routes: %w", err)
		}
	}
	bound, err := compiled.Bind(infos)
	if err != nil {
		return nil, nil, nil, err
	}
	return bound, infos, creating, nil
}

// tableRegistry keeps one writer table per Fluss table id across
// reloads, so a reload never strands batches already queued.
type tableRegistry struct {
	acc   *accumulator.Accumulator
	parts *partitionCache // per-partition bucket counts for the writer
	// encoders are the Arrow compression encoders every log table shares,
	// so that memory does not grow with the tables written.
	encoders *fluss.ArrowEncoders

	mu   sync.Mutex // guards byID
	byID map[int64]*accumulator.Table
}

func newTableRegistry(acc *accumulator.Accumulator, parts *partitionCache) *tableRegistry {
	return &tableRegistry{acc: acc, parts: parts, encoders: fluss.NewArrowEncoders(), byID: make(map[int64]*accumulator.Table)}
}

// state registers the tables of bound routes and returns the new generation.
func (r *tableRegistry) state(routes *mapping.Routes, infos map[fluss.TablePath]*fluss.TableInfo, creating map[string]mapping.RouteSpec) (*routeState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &routeState{routes: routes, tables: make(map[fluss.TablePath]*accumulator.Table, len(infos)), infos: infos, creating: creating}
	for path, info := range infos {
		t := r.byID[info.TableID]
		if t == nil {
			spec, err := accumulator.TableSpecOf(info, r.encoders)
			if err != nil {
				return nil, err
			}
			if parts, id := r.parts, info.TableID; parts != nil && info.Descriptor.IsPartitioned() {
				// The count the bridge bucketed the partition's rows with.
				spec.PartitionBuckets = func(partitionID int64) int { return parts.bucketsOf(id, partitionID) }
			}
			if t, err = r.acc.AddTable(spec); err != nil {
				return nil, fmt.Errorf("register table %s: %w", path, err)
			}
			r.byID[info.TableID] = t
		} else if t.SchemaID() != info.SchemaID {
			// Columns were added (Fluss changes a schema no other way): new
			// batches are built for the new schema; rows converted for
			// the old one are padded with nulls.
			spec, err := accumulator.TableSpecOf(info, r.encoders)
			if err != nil {
				return nil, err
			}
			if err := t.Reschema(spec); err != nil {
				return nil, fmt.Errorf("table %s: schema %d: %w", path, info.SchemaID, err)
			}
		}
		st.tables[path] = t
	}
	return st, nil
}
