package sender

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
)

// wireHarness runs a Writer against flussfake through the real
// fluss.Client.
type wireHarness struct {
	fc     *flussfake.Cluster
	client *fluss.Client
	w      *testWriter
	tables []*Table
	ids    []int64
	runErr chan error
}

func newWireHarness(t *testing.T, tables int) *wireHarness {
	t.Helper()
	fc, err := flussfake.NewCluster()
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	c, err := fluss.NewClient(fluss.Config{Bootstrap: []string{fc.Bootstrap()}, RequestTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w, err := newTestWriter(testConfig(func(c *writerConfig) {
		c.Linger = time.Millisecond
		c.RetryBackoff = time.Millisecond
		c.RetryBackoffMax = 2 * time.Millisecond
	}), c)
	require.NoError(t, err)
	h := &wireHarness{fc: fc, client: c, w: w, runErr: make(chan error, 1)}
	schema := itSchema
	for i := range tables {
		path := fluss.TablePath{Database: "db", Table: uniqueName("t")}
		id, err := fc.AddTable(path, fluss.TableDescriptor{Schema: schema, BucketCount: 2,
			Properties: map[string]string{fluss.PropLogFormat: "INDEXED"}})
		require.NoError(t, err, "table %d", i)
		info, err := c.TableInfo(t.Context(), path)
		require.NoError(t, err)
		tbl, err := w.AddTable(TableSpec{ID: id, Path: path, NumBuckets: 2,
			NewLogBuilder: func() (LogBuilder, error) { return fluss.NewIndexedLogBuilder(&schema, info.SchemaID) }})
		require.NoError(t, err)
		h.tables = append(h.tables, tbl)
		h.ids = append(h.ids, id)
	}
	go func() { h.runErr <- w.Run(context.Background()) }()
	return h
}

func (h *wireHarness) append(t *testing.T, table int, bucket int32, v int64) Handle {
	t.Helper()
	hd, err := h.w.Write(context.Background(), h.tables[table], NoPartition, bucket, fluss.WriteAppend, nil,
		fluss.Row{fluss.IntDatum(v), fluss.IntDatum(0), fluss.StringDatum("x")})
	require.NoError(t, err)
	return hd
}

func (h *wireHarness) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, h.w.Close(ctx))
	require.NoError(t, <-h.runErr)
	assert.Equal(t, 0, h.w.Incomplete())
	assert.Equal(t, int64(0), h.w.BufferedBytes())
	assert.Equal(t, 0, int(h.w.snd.inflightReqs.Load()))
}

// Test 1 on the wire: two tables, one tablet server, one connection; table
// A's response is withheld while table B's requests complete.
func TestWireWithheldResponseOneConnection(t *testing.T) {
	t.Parallel()
	h := newWireHarness(t, 2)
	hold := h.fc.HoldTable(h.ids[0])
	var hA, hB []Handle
	for i := range 6 {
		hA = append(hA, h.append(t, 0, int32(i%2), int64(i)))
		hB = append(hB, h.append(t, 1, int32(i%2), int64(i)))
	}
	<-hold.Arrived()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, hd := range hB {
		_, err := hd.Wait(ctx)
		require.NoError(t, err)
	}
	for _, hd := range hA {
		assert.False(t, done(hd), "A's response is withheld")
	}
	assert.Positive(t, h.w.snd.inflightReqs.Load())
	assert.Equal(t, 1, h.fc.Connections(0), "one connection to the tablet server")
	hold.Release()
	for _, hd := range hA {
		_, err := hd.Wait(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(3), h.fc.LogEndOffset(h.ids[0], fluss.NoPartition, 0))
	assert.Equal(t, int64(3), h.fc.LogEndOffset(h.ids[1], fluss.NoPartition, 1))
	h.close(t)
}

// Test 2 on the wire: a terminal bucket error for table A fails only A; a
// retriable one for B is retried with the same sequence.
func TestWireErrorsScopedPerTable(t *testing.T) {
	t.Parallel()
	h := newWireHarness(t, 2)
	h.fc.FailBucket(h.ids[0], fluss.NoPartition, 0, 48)
	h.fc.FailBucket(h.ids[1], fluss.NoPartition, 0, 29, 12)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := h.append(t, 0, 0, 1)
	b := h.append(t, 1, 0, 2)
	_, err := a.Wait(ctx)
	require.ErrorIs(t, err, fluss.ErrAuthorization)
	off, err := b.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), off)
	assert.Equal(t, int64(1), h.fc.LogEndOffset(h.ids[1], fluss.NoPartition, 0))
	// A writes again (its failed sequence was given back).
	off, err = h.append(t, 0, 0, 3).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), off)
	h.close(t)
}
