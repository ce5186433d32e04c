package accumulator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

var benchSchema = fluss.Schema{Columns: []fluss.Column{
	{Name: "id", Type: fluss.BigInt()},
	{Name: "payload", Type: fluss.String()},
}}

// benchAccumulator returns an accumulator with one table of the given
// format whose batches are completed as soon as they fill (a stand-in
// sender), so that the benchmark measures appends only.
func benchAccumulator(b testing.TB, format fluss.LogFormat) (*Accumulator, *Table) {
	a, err := newTestAccumulator(func(c *Config) {
		c.BatchSize = 1 << 20
		c.BufferMemory = 64 << 20
		c.Linger = time.Hour
	})
	require.NoError(b, err)
	spec := TableSpec{ID: 1, Path: fluss.TablePath{Database: "db", Table: "t"}, NumBuckets: 4}
	switch format {
	case fluss.LogFormatArrow:
		spec.NewLogBuilder = func() (LogBuilder, error) {
			return fluss.NewArrowLogBuilder(&benchSchema, 1, fluss.ArrowCompressionZstd, 3)
		}
	default:
		spec.NewLogBuilder = func() (LogBuilder, error) { return fluss.NewIndexedLogBuilder(&benchSchema, 1) }
	}
	tbl, err := a.AddTable(spec)
	require.NoError(b, err)
	return a, tbl
}

// drainFull completes every full batch (as the sender would).
func drainFull(a *Accumulator) {
	for _, q := range a.Queues() {
		for {
			bt, _, ready := q.Peek(false)
			if bt == nil || !ready.IsZero() || !q.Pop(bt) {
				break
			}
			bt.Complete(0, nil)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, format := range []fluss.LogFormat{fluss.LogFormatIndexed, fluss.LogFormatArrow} {
		b.Run(string(format), func(b *testing.B) {
			a, tbl := benchAccumulator(b, format)
			ctx := context.Background()
			row := fluss.Row{fluss.IntDatum(1), fluss.StringDatum("0123456789abcdef0123456789abcdef")}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				row[0].I = int64(i)
				if _, err := a.testAppend(ctx, tbl, NoPartition, int32(i&3), row); err != nil {
					b.Fatal(err)
				}
				i++
				if i%4096 == 0 {
					drainFull(a)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// Appending to an open batch allocates nothing.
func TestAppendToOpenBatchDoesNotAllocate(t *testing.T) {
	a, tbl := benchAccumulator(t, fluss.LogFormatIndexed)
	ctx := context.Background()
	row := fluss.Row{fluss.IntDatum(1), fluss.StringDatum("0123456789abcdef")}
	_, err := a.testAppend(ctx, tbl, NoPartition, 0, row) // opens the batch
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := a.testAppend(ctx, tbl, NoPartition, 0, row); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
