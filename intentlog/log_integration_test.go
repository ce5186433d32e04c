package intentlog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flussdb"
)

// entry is a small entry of intents for instance writer w, numbered n.
func entry(w int64, n int32) []Intent {
	pp := ProducerPartition{ProducerID: 7000 + int64(n), Topic: "orders", Partition: n % 3}
	return []Intent{{
		Target:   Target{Writer: w, Bucket: fence.Bucket{TableID: 42, PartitionID: fluss.NoPartition, Bucket: n % 4}},
		Sequence: n,
		From:     int64(n) * 100,
		Parts:    []Part{{Batch: Batch{ProducerPartition: pp, BaseSequence: n * 5, LastSequence: n*5 + 4}, Records: Range{First: 0, Count: 5}}},
	}}
}

// Integration, on a real Fluss 0.9.1: two instances, I and K, append
// entries to one bucket of the intent log under writer ids of their own.
// J fences I's writer there and reads I's entries up to the fence: every
// entry I had acknowledged, in order, none of K's; I's next append is
// refused as fenced, and K, whose writer no fence touched, goes on.
func TestIntentLogOnRealCluster(t *testing.T) {
	db := flussdb.New(t, "intentlog")
	ctx := flussdb.Context(t)
	schema := Schema()
	db.CreateTable(t, "intents", Descriptor(2))
	path := fluss.TablePath{Database: db.Name, Table: "intents"}
	info, err := db.Client.TableInfo(ctx, path)
	require.NoError(t, err)
	bucket := fence.Bucket{TableID: info.TableID, PartitionID: fluss.NoPartition, Bucket: 1, SchemaID: int16(info.SchemaID)}

	writerI, err := db.Client.InitWriter(ctx, path)
	require.NoError(t, err)
	writerK, err := db.Client.InitWriter(ctx, path)
	require.NoError(t, err)
	i := NewWriter(db.Client, bucket, &schema, "instance-i", writerI)
	k := NewWriter(db.Client, bucket, &schema, "instance-k", writerK)

	var wantI, wantK []Intent
	appendTo := func(w *Writer, id int64, n int32, want *[]Intent) int64 {
		in := entry(id, n)
		at, err := w.Append(ctx, in)
		require.NoError(t, err)
		*want = append(*want, in...)
		return at
	}
	first := appendTo(i, writerI, 0, &wantI)
	appendTo(k, writerK, 0, &wantK)
	appendTo(i, writerI, 1, &wantI)
	appendTo(i, writerI, 2, &wantI)
	appendTo(k, writerK, 1, &wantK)

	const inflight = 1 // one entry in flight per instance
	f, err := fence.Fence(ctx, db.Client, bucket, writerI, inflight, first)
	require.NoError(t, err)
	assert.Equal(t, int32(3), f.Next, "I appended entries 0-2")

	got, err := Read(ctx, db.Client, bucket, &schema, writerI, first, f.At)
	require.NoError(t, err)
	assert.Equal(t, wantI, got, "I's intents, in order, read back through Fluss")

	_, err = i.Append(ctx, entry(writerI, 3))
	require.ErrorIs(t, err, ErrFenced, "I's next entry after the fence")
	again, err := Read(ctx, db.Client, bucket, &schema, writerI, first, f.At+int64(inflight+fence.Window))
	require.NoError(t, err)
	assert.Equal(t, wantI, again, "nothing of I's after the fence, and the markers are passed over")

	end := appendTo(k, writerK, 2, &wantK)
	assert.Greater(t, end, f.At, "K appends after I's fence")
	gotK, err := Read(ctx, db.Client, bucket, &schema, writerK, 0, end+1)
	require.NoError(t, err)
	assert.Equal(t, wantK, gotK, "K's intents, none of I's")
}

// Integration: a read up to an offset the log has not reached waits for
// nothing and fails; a fence's At is always below the log's end.
func TestIntentLogReadPastTheEndFails(t *testing.T) {
	db := flussdb.New(t, "intentlog")
	ctx, cancel := context.WithTimeout(flussdb.Context(t), 2*time.Minute)
	defer cancel()
	schema := Schema()
	db.CreateTable(t, "intents", Descriptor(1))
	path := fluss.TablePath{Database: db.Name, Table: "intents"}
	info, err := db.Client.TableInfo(ctx, path)
	require.NoError(t, err)
	bucket := fence.Bucket{TableID: info.TableID, PartitionID: fluss.NoPartition, SchemaID: int16(info.SchemaID)}
	w, err := db.Client.InitWriter(ctx, path)
	require.NoError(t, err)
	_, err = NewWriter(db.Client, bucket, &schema, "i", w).Append(ctx, entry(w, 0))
	require.NoError(t, err)
	_, err = Read(ctx, db.Client, bucket, &schema, w, 0, 5)
	assert.ErrorContains(t, err, "no batch at offset 1 below 5")
}
