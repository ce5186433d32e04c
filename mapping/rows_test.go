package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
