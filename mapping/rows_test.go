package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

// TestRowsReused: Rows given back are handed out again, warm, so that
// converting batch after batch allocates nothing; Rows still held are never
// handed out twice.
func TestRowsReused(t *testing.T) {
	r, values := benchRoute(t)
	conv := r.Converter()
	rec := &Record{Topic: "orders", Key: []byte("17"), Timestamp: 1_700_000_000_000}
	batch := func() {
		rows := conv.GetRows(len(values))
		for i, v := range values {
			rec.Value, rec.Index = v, int32(i)
			if err := conv.Convert(rec, &rows.Converted[i]); err != nil {
				t.Fatal(err)
			}
		}
		conv.PutRows(rows)
	}
	batch()
	assert.Zero(t, testing.AllocsPerRun(50, batch), "allocations per converted batch of %d records", len(values))

	a, b := conv.GetRows(3), conv.GetRows(5)
	require.Len(t, a.Converted, 3)
	require.Len(t, b.Converted, 5)
	assert.NotSame(t, a, b)
	conv.PutRows(a)
	c := conv.GetRows(10)
	assert.Same(t, a, c, "the Rows given back is reused")
	assert.Len(t, c.Converted, 10, "and grown to the batch")
	assert.NotSame(t, b, c)

	big := conv.GetRows(maxPooledRows + 1)
	conv.PutRows(big)
	assert.NotSame(t, big, conv.GetRows(1), "huge Rows are left to the GC")
}

// The converters of one Bind share their Rows, whatever their tables'
// columns: 500 routes keep what is in use, not a spare each. Converters of
// another Bind do not share them.
func TestRowsSharedByOneBind(t *testing.T) {
	narrow := tableInfo("db", "narrow", []fluss.Column{{Name: "v", Type: fluss.String()}}, nil)
	wide := tableInfo("db", "wide", []fluss.Column{{Name: "a", Type: fluss.String()}, {Name: "b", Type: fluss.String()},
		{Name: "c", Type: fluss.String()}}, nil)
	rs, err := NewRoutes([]RouteSpec{{Topic: "n", Table: narrow.Path}, {Topic: "w", Table: wide.Path}})
	require.NoError(t, err)
	infos := map[fluss.TablePath]*fluss.TableInfo{narrow.Path: narrow, wide.Path: wide}
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	n, ok := bound.Resolve("n")
	require.True(t, ok)
	w, ok := bound.Resolve("w")
	require.True(t, ok)

	rows := n.Converter().GetRows(2)
	rec := &Record{Topic: "n", Value: []byte(`{"v": "x"}`)}
	require.NoError(t, n.Converter().Convert(rec, &rows.Converted[0]))
	n.Converter().PutRows(rows)
	got := w.Converter().GetRows(2)
	assert.Same(t, rows, got, "the other route of the Bind reuses them")
	rec = &Record{Topic: "w", Value: []byte(`{"a": "1", "b": "2", "c": "3"}`)}
	require.NoError(t, w.Converter().Convert(rec, &got.Converted[0]))
	assert.Len(t, got.Converted[0].Row, 3, "sized for the wide table")
	w.Converter().PutRows(got)

	again, err := rs.Bind(infos)
	require.NoError(t, err)
	n2, _ := again.Resolve("n")
	assert.NotSame(t, rows, n2.Converter().GetRows(2), "another Bind has its own")
}
