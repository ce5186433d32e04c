package produce

import (
	"fmt"
	"sync"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// Bound is one immutable generation of routes bound to their tables;
// the produce path reads it through an atomic pointer and a reload swaps it.
type Bound struct {
	Routes *mapping.Routes
	Tables map[fluss.TablePath]*accumulator.Table
	Infos  map[fluss.TablePath]*fluss.TableInfo
	// Creating are the routes (by exact topic) whose table does not exist
	// yet and is created from their first record (follow_schema.create).
	Creating map[string]mapping.RouteSpec

	// fingerprints caches routeFingerprint per route name: the spec and
	// tables a generation binds do not change, and formatting the spec
	// for every exactly-once batch was 2 % of the gateway's CPU.
	fingerprints sync.Map // string -> int64
}

// TableRegistry keeps one writer table per Fluss table id across
// reloads, so a reload never strands batches already queued.
type TableRegistry struct {
	acc   *accumulator.Accumulator
	parts *PartitionCache // per-partition bucket counts for the writer
	// encoders are the Arrow compression encoders every log table shares,
	// so that memory does not grow with the tables written.
	encoders *fluss.ArrowEncoders

	mu   sync.Mutex // guards byID
	byID map[int64]*accumulator.Table
}

func NewTableRegistry(acc *accumulator.Accumulator, parts *PartitionCache) *TableRegistry {
	return &TableRegistry{acc: acc, parts: parts, encoders: fluss.NewArrowEncoders(), byID: make(map[int64]*accumulator.Table)}
}

// Bind registers the tables of bound routes and returns the new generation.
func (r *TableRegistry) Bind(routes *mapping.Routes, infos map[fluss.TablePath]*fluss.TableInfo, creating map[string]mapping.RouteSpec) (*Bound, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &Bound{Routes: routes, Tables: make(map[fluss.TablePath]*accumulator.Table, len(infos)), Infos: infos, Creating: creating}
	for path, info := range infos {
		t := r.byID[info.TableID]
		if t == nil {
			spec, err := accumulator.TableSpecOf(info, r.encoders)
			if err != nil {
				return nil, err
			}
			if parts, id := r.parts, info.TableID; parts != nil && info.Descriptor.IsPartitioned() {
				// The count the produce path bucketed the partition's rows with.
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
		st.Tables[path] = t
	}
	return st, nil
}
