package fence

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flussdb"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// fenceEnv is a one-bucket ARROW log table on the real cluster, a writer
// id, and the "zombie": a second client appending data batches under that
// writer id, as an instance that is being taken over would.
type fenceEnv struct {
	db     *flussdb.DB
	fencer *fluss.Client
	zombie *fluss.Client
	info   *fluss.TableInfo
	bucket Bucket
	writer int64
	leader int32
}

func newFenceEnv(t *testing.T) (*fenceEnv, context.Context) {
	db := flussdb.New(t, "fence")
	ctx := flussdb.Context(t)
	zombie, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(db.Bootstrap, ","), RequestTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { zombie.Close() })
	e := &fenceEnv{db: db, fencer: db.Client, zombie: zombie}
	name := db.CreateTable(t, "data", &fluss.TableDescriptor{BucketCount: 1, Schema: fluss.Schema{Columns: []fluss.Column{
		{Name: "id", Type: fluss.BigInt()}, {Name: "v", Type: fluss.String()}}}})
	path := fluss.TablePath{Database: db.Name, Table: "data"}
	e.info, err = e.zombie.TableInfo(ctx, path)
	require.NoError(t, err)
	_, err = e.fencer.TableInfo(ctx, path)
	require.NoError(t, err)
	require.Equal(t, name, e.info.Path.String())
	e.bucket = Bucket{TableID: e.info.TableID, PartitionID: fluss.NoPartition, SchemaID: int16(e.info.SchemaID)}
	e.writer, err = e.zombie.InitWriter(ctx, path)
	require.NoError(t, err)
	leader, err := e.zombie.BucketLeader(ctx, e.info.TableID, fluss.NoPartition, 0)
	require.NoError(t, err)
	e.leader = leader.ID
	return e, ctx
}

// write appends the zombie's data batch seq (rows seq*10, seq*10+1) and
// returns its offset or its error.
func (e *fenceEnv) write(t *testing.T, ctx context.Context, seq int32) (int64, error) {
	t.Helper()
	b, err := fluss.NewArrowLogBuilder(&e.info.Descriptor.Schema, e.info.SchemaID, fluss.ArrowCompressionZstd, 0)
	require.NoError(t, err)
	for i := range int64(2) {
		require.NoError(t, b.Append(fluss.Row{fluss.IntDatum(int64(seq)*10 + i), fluss.StringDatum(fmt.Sprint("seq ", seq))}))
	}
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	fluss.SetLogBatchWriter(batch, e.writer, seq)
	res, err := e.zombie.ProduceLog(ctx, e.leader, &fluss.ProduceLogRequest{TableID: e.info.TableID, Acks: -1,
		Buckets: []fluss.BucketRecords{{PartitionID: fluss.NoPartition, Bucket: 0, Records: batch}}})
	require.NoError(t, err)
	return res[0].Offset, res[0].Err
}

func (e *fenceEnv) end(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	offs, err := e.fencer.ListOffsets(ctx, e.info.TableID, fluss.NoPartition, []int32{0}, fluss.LatestOffset)
	require.NoError(t, err)
	return offs[0]
}

// readBack is the ids of every row in the table, read by pyfluss (an
// independent client, which steps over the markers). pyfluss 1.0.0 reads
// a log "up to the latest offset" only to a row at its end, not to a batch
// of no rows there (its scan of a log ending in markers never completes),
// so a last row, id -1, is appended through pyfluss first.
func (e *fenceEnv) readBack(t *testing.T) []int64 {
	t.Helper()
	flusstest.PyFluss(t, e.db.Bootstrap, "append", "--table", e.info.Path.String(), "--rows-json", `[{"id": -1, "v": "last"}]`)
	rows := e.db.ScanLog(t, e.info.Path.String())
	ids := make([]int64, len(rows))
	for i, r := range rows {
		require.NoError(t, json.Unmarshal(r.Row["id"], &ids[i]))
	}
	return ids
}

// Integration, on a real Fluss 0.9.1: a fence after the writer's batches
// 0-2 decides "written iff sequence < 3" for good. The zombie's batches in
// flight (3, 4) and a retry of one it wrote (2) are refused, never
// answered as written; a second fence (another instance) reads the same
// answer from the log and appends nothing; and pyfluss reads the
// zombie's rows once, stepping over the markers.
func TestFenceOnRealCluster(t *testing.T) {
	e, ctx := newFenceEnv(t)
	for seq := range int32(3) {
		off, err := e.write(t, ctx, seq)
		require.NoError(t, err)
		assert.Equal(t, int64(seq)*2, off)
	}
	const inflight = 2
	f, err := Fence(ctx, e.fencer, e.bucket, e.writer, inflight, 0)
	require.NoError(t, err)
	assert.Equal(t, Fenced{Next: 3, At: 6, Appended: inflight + Window}, f)
	end := e.end(t, ctx)
	assert.Equal(t, int64(6+inflight+Window), end, "the markers take one offset each")

	for _, seq := range []int32{3, 4, 2} {
		_, err := e.write(t, ctx, seq)
		assert.ErrorIs(t, err, fluss.ErrOutOfOrderSequence, "the zombie's batch %d after the fence", seq)
	}
	assert.Equal(t, end, e.end(t, ctx), "nothing of the zombie's appended after the fence")

	again, err := Fence(ctx, e.fencer, e.bucket, e.writer, inflight, 4)
	require.NoError(t, err)
	assert.Equal(t, Fenced{Next: 3, At: 6}, again, "a second fence reads the first one's decision")
	assert.Equal(t, end, e.end(t, ctx))

	assert.Equal(t, []int64{0, 1, 10, 11, 20, 21, -1}, e.readBack(t))
}

// Integration: the zombie's batch lands between the fence's read and its
// append. Its markers' first sequence is then a copy of the zombie's
// batch, and Fluss answers the whole entry as that batch's duplicate: the
// fence must see data, not its markers, at the answered offset, read again
// and fence after the zombie's batch.
func TestFenceWhenTheWriterAppendsMeanwhile(t *testing.T) {
	e, ctx := newFenceEnv(t)
	for seq := range int32(2) {
		_, err := e.write(t, ctx, seq)
		require.NoError(t, err)
	}
	tl, err := readTail(ctx, e.fencer, e.bucket, e.writer, 0)
	require.NoError(t, err)
	require.Equal(t, int32(1), tl.last)

	_, err = e.write(t, ctx, 2) // lands after the read
	require.NoError(t, err)
	endBefore := e.end(t, ctx)
	_, err = mark(ctx, e.fencer, e.bucket, e.writer, tl.last+1, 1+Window)
	require.ErrorIs(t, err, errMoved, "answered as the duplicate of the zombie's batch 2")
	assert.Equal(t, endBefore, e.end(t, ctx), "no marker appended")

	// Far behind: the zombie's batches 3-8 land, so a fence from the stale
	// read starts below the writer's last five and is refused.
	for seq := int32(3); seq <= 8; seq++ {
		_, err := e.write(t, ctx, seq)
		require.NoError(t, err)
	}
	_, err = mark(ctx, e.fencer, e.bucket, e.writer, tl.last+1, 1+Window)
	require.ErrorIs(t, err, errMoved)
	require.ErrorIs(t, err, fluss.ErrOutOfOrderSequence)

	f, err := Fence(ctx, e.fencer, e.bucket, e.writer, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, int32(9), f.Next)
	_, err = e.write(t, ctx, 9)
	assert.ErrorIs(t, err, fluss.ErrOutOfOrderSequence, "the zombie's next batch")

	var want []int64
	for seq := range int64(9) {
		want = append(want, seq*10, seq*10+1)
	}
	assert.Equal(t, append(want, -1), e.readBack(t), "every batch below the fence once, nothing above it")
}

// Integration: a writer that never wrote to the bucket is fenced from
// sequence 0, and cannot start there afterwards.
func TestFenceOfAWriterThatNeverWrote(t *testing.T) {
	e, ctx := newFenceEnv(t)
	f, err := Fence(ctx, e.fencer, e.bucket, e.writer, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, Fenced{Next: 0, At: 0, Appended: 1 + Window}, f)
	_, err = e.write(t, ctx, 0)
	assert.ErrorIs(t, err, fluss.ErrOutOfOrderSequence)
	assert.Equal(t, []int64{-1}, e.readBack(t))
}
