package schemafollow

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// raceTables is a table whose AddColumns fails the first failures times,
// as Fluss 0.9.1 fails one of two concurrent adds; alsoAdded says whether
// the failing add's columns were added by the other writer anyway.
type raceTables struct {
	mu        sync.Mutex
	cols      []fluss.Column
	schemaID  int32
	failures  int
	alsoAdded bool
	adds      int
}

func (r *raceTables) AddColumns(_ context.Context, _ fluss.TablePath, cols []fluss.Column) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.adds++
	if r.failures > 0 {
		r.failures--
		if r.alsoAdded {
			r.cols, r.schemaID = append(r.cols, cols...), r.schemaID+1
		}
		return errors.New("fluss error -1 UNKNOWN_SERVER_ERROR: NodeExists for .../schemas/2")
	}
	r.cols, r.schemaID = append(r.cols, cols...), r.schemaID+1
	return nil
}

func (r *raceTables) CreateDatabase(context.Context, string, bool) error { return nil }

func (r *raceTables) CreateTable(context.Context, fluss.TablePath, *fluss.TableDescriptor, bool) error {
	return errors.New("not in this test")
}

func (r *raceTables) CreateTableReady(context.Context, fluss.TablePath, *fluss.TableDescriptor, int) error {
	return errors.New("not in this test")
}

func (r *raceTables) GetTableInfo(_ context.Context, path fluss.TablePath) (*fluss.TableInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &fluss.TableInfo{Path: path, SchemaID: r.schemaID, Descriptor: fluss.TableDescriptor{Schema: fluss.Schema{Columns: slices.Clone(r.cols)}}}, nil
}

func TestFollowerAddsThroughRaces(t *testing.T) {
	route := mapping.RouteSpec{Topic: "t", Table: fluss.TablePath{Database: "db", Table: "t"},
		Value: mapping.ValueSpec{Format: mapping.ValueAvro}, FollowSchema: mapping.FollowSchemaSpec{AddColumns: true}}
	sc := &schemaregistry.Schema{Type: "AVRO", ID: 2, Text: `{"type": "record", "name": "R", "fields": [
		{"name": "id", "type": "long"}, {"name": "extra", "type": ["null", "string"]}]}`}
	for _, tc := range []struct {
		name      string
		failures  int
		alsoAdded bool
		wantErr   bool
		wantAdds  int
	}{
		{"no race", 0, false, false, 1},
		{"the other writer added it", 1, true, false, 1},
		{"the other writer added something else", 1, false, false, 2},
		{"Fluss keeps failing", 5, false, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tables := &raceTables{cols: []fluss.Column{{Name: "id", Type: fluss.BigInt()}}, schemaID: 1, failures: tc.failures, alsoAdded: tc.alsoAdded}
			rebinds := 0
			f := &Follower{Tables: tables, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Rebind: func(context.Context) error { rebinds++; return nil }}
			info, err := tables.GetTableInfo(t.Context(), route.Table)
			require.NoError(t, err)
			bound := bindForFollow(t, route, info)
			err = f.add(t.Context(), bound, WriterSchema{Registry: sc}, []fluss.Column{{Name: "extra", Type: fluss.String()}})
			assert.Equal(t, tc.wantAdds, tables.adds, "add attempts")
			if tc.wantErr {
				require.Error(t, err)
				assert.Zero(t, rebinds, "nothing bound again after a failure")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1, rebinds)
			got, _ := tables.GetTableInfo(t.Context(), route.Table)
			assert.Equal(t, 1, slices.IndexFunc(got.Descriptor.Schema.Columns, func(c fluss.Column) bool { return c.Name == "extra" }), "extra, once, last")
			assert.Len(t, got.Descriptor.Schema.Columns, 2)
		})
	}
}

// bindForFollow binds one route to info.
func bindForFollow(t *testing.T, spec mapping.RouteSpec, info *fluss.TableInfo) *mapping.Route {
	t.Helper()
	rs, err := mapping.NewRoutes([]mapping.RouteSpec{spec})
	require.NoError(t, err)
	d := info.Descriptor
	d.BucketCount = 1
	bound, err := rs.Bind(map[fluss.TablePath]*fluss.TableInfo{spec.Table: {Path: spec.Table, SchemaID: info.SchemaID, Descriptor: d}})
	require.NoError(t, err)
	return bound.All()[0]
}

// A v2 writer schema adding a top-level field and a field inside a ROW
// column: the top-level field is added, the nested one is left out (no
// record is refused for it), logged once per writer schema and counted
// once per field; v1, and v2 again, then change nothing and log nothing.
func TestFollowNestedFieldIsNotRefused(t *testing.T) {
	spec := mapping.RouteSpec{Topic: "t", Table: fluss.TablePath{Database: "db", Table: "t"},
		Value: mapping.ValueSpec{Format: mapping.ValueAvro}, FollowSchema: mapping.FollowSchemaSpec{AddColumns: true}}
	v1 := WriterSchema{Registry: &schemaregistry.Schema{Type: "AVRO", ID: 1, Text: `{"type": "record", "name": "P", "fields": [{"name": "id", "type": "long"},
		{"name": "addr", "type": {"type": "record", "name": "A", "fields": [{"name": "city", "type": "string"}]}}]}`}}
	v2 := WriterSchema{Registry: &schemaregistry.Schema{Type: "AVRO", ID: 2, Text: `{"type": "record", "name": "P", "fields": [{"name": "id", "type": "long"},
		{"name": "addr", "type": {"type": "record", "name": "A", "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": null}]}},
		{"name": "channel", "type": ["null", "string"], "default": null}]}`}}
	tables := &raceTables{cols: []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "addr", Type: fluss.RowType(fluss.RowField("city", fluss.String()))}}, schemaID: 1}
	var logs strings.Builder
	notAdded := map[string]int{}
	var info *fluss.TableInfo
	var route *mapping.Route
	rebind := func(ctx context.Context) error {
		var err error
		if info, err = tables.GetTableInfo(ctx, spec.Table); err != nil {
			return err
		}
		route = bindForFollow(t, spec, info)
		return nil
	}
	f := &Follower{Tables: tables, Log: slog.New(slog.NewTextHandler(&logs, nil)), Rebind: rebind,
		NotAdded: func(route string, n int) { notAdded[route] += n }}
	require.NoError(t, rebind(t.Context()))

	added, err := f.followOne(t.Context(), route, info, v1)
	require.NoError(t, err)
	assert.False(t, added)
	assert.True(t, f.wasChecked(route, info.SchemaID, v1))
	assert.False(t, f.wasChecked(route, info.SchemaID, v2))
	added, err = f.followOne(t.Context(), route, info, v2)
	require.NoError(t, err)
	assert.True(t, added)
	assert.Equal(t, []string{"id", "addr", "channel"}, columnNames(info.Descriptor.Schema.Columns), "channel added, addr unchanged")
	assert.Equal(t, 1, tables.adds)
	assert.Equal(t, 1, strings.Count(logs.String(), "writer schema field not added to the table"), logs.String())
	assert.Contains(t, logs.String(), "addr.zip")
	assert.Contains(t, logs.String(), "value.unknown_fields: ignore")
	assert.Equal(t, map[string]int{"t": 1}, notAdded)

	// Against the widened table: nothing to add or log again.
	for _, w := range []WriterSchema{v1, v2} {
		added, err = f.followOne(t.Context(), route, info, w)
		require.NoError(t, err)
		assert.False(t, added)
		assert.True(t, f.wasChecked(route, info.SchemaID, w))
	}
	assert.Equal(t, 1, tables.adds)
	assert.Equal(t, 1, strings.Count(logs.String(), "writer schema field not added to the table"))
	assert.Equal(t, map[string]int{"t": 1}, notAdded)
}
