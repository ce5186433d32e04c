package takeover

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/intentlog"
	"github.com/fluss-kafka/gateway/internal/flussdb"
)

const dataBuckets = 3

// dataTable is a log table of the real cluster that instances write
// merged batches into.
type dataTable struct {
	c    *fluss.Client
	info *fluss.TableInfo
}

func (d *dataTable) bucket(b int32) fence.Bucket {
	return fence.Bucket{TableID: d.info.TableID, PartitionID: fluss.NoPartition, Bucket: b, SchemaID: int16(d.info.SchemaID)}
}

// send appends one batch of rows (id, "row <id>") to bucket b under writer
// and seq (fluss.NoWriterID: no writer) and returns Fluss's answer.
func (d *dataTable) send(t *testing.T, ctx context.Context, b int32, writer int64, seq int32, ids []int64) error {
	t.Helper()
	builder, err := fluss.NewArrowLogBuilder(&d.info.Descriptor.Schema, d.info.SchemaID, fluss.ArrowCompressionZstd, 0)
	require.NoError(t, err)
	for _, id := range ids {
		require.NoError(t, builder.Append(fluss.Row{fluss.IntDatum(id), fluss.StringDatum(fmt.Sprint("row ", id))}))
	}
	batch, err := builder.AppendTo(nil)
	require.NoError(t, err)
	if writer != fluss.NoWriterID {
		fluss.SetLogBatchWriter(batch, writer, seq)
	}
	leader, err := d.c.BucketLeader(ctx, d.info.TableID, fluss.NoPartition, b)
	require.NoError(t, err)
	res, err := d.c.ProduceLog(ctx, leader.ID, &fluss.ProduceLogRequest{TableID: d.info.TableID, Acks: -1,
		Buckets: []fluss.BucketRecords{{PartitionID: fluss.NoPartition, Bucket: b, Records: batch}}})
	require.NoError(t, err)
	return res[0].Err
}

// kafkaRecords is a Kafka batch as both instances convert it: its
// records' row ids (producer id × 1000 + the record's sequence), each row
// routed to bucket id % 3.
type kafkaRecords struct {
	intentlog.Batch
	ids []int64
}

func newKafkaRecords(pp intentlog.ProducerPartition, base, last int32) kafkaRecords {
	k := kafkaRecords{Batch: batch(pp, base, last)}
	for s := base; s <= last; s++ {
		k.ids = append(k.ids, pp.ProducerID*1000+int64(s))
	}
	return k
}

// Integration, on a real Fluss 0.9.1, design (D)'s take-over end to end:
// instance I merges the rows of two producers' Kafka batches into shared
// batches of 3 rows per bucket, records its intents in one intent-log
// entry, and crashes with bucket 0's batches landed, one of bucket 1's and
// none of bucket 2's, holding one batch in flight on each of buckets 1 and
// 2. Instance J takes both producer-partitions over (fences I's intent
// log, reads it, fences I's data writer on each bucket, decides) and
// writes the missing rows under its own writer; I's held batches and next
// intent entry are then refused. pyfluss reads every record's row back
// exactly once, in its bucket.
func TestTakeOverOnRealCluster(t *testing.T) {
	db := flussdb.New(t, "takeover")
	ctx := flussdb.Context(t)
	db.CreateTable(t, "data", &fluss.TableDescriptor{BucketCount: dataBuckets, Schema: fluss.Schema{Columns: []fluss.Column{
		{Name: "id", Type: fluss.BigInt()}, {Name: "v", Type: fluss.String()}}}})
	intentSchema := intentlog.Schema()
	db.CreateTable(t, "intents", intentlog.Descriptor(1))
	dataPath := fluss.TablePath{Database: db.Name, Table: "data"}
	intentPath := fluss.TablePath{Database: db.Name, Table: "intents"}
	info, err := db.Client.TableInfo(ctx, dataPath)
	require.NoError(t, err)
	data := &dataTable{c: db.Client, info: info}
	intentInfo, err := db.Client.TableInfo(ctx, intentPath)
	require.NoError(t, err)
	intentBucket := fence.Bucket{TableID: intentInfo.TableID, PartitionID: fluss.NoPartition, SchemaID: int16(intentInfo.SchemaID)}
	newWriter := func(p fluss.TablePath) int64 {
		w, err := db.Client.InitWriter(ctx, p)
		require.NoError(t, err)
		return w
	}
	dataI, logI, dataJ := newWriter(dataPath), newWriter(intentPath), newWriter(dataPath)

	pa := producer(1001, "orders", 0)
	pb := producer(1002, "orders", 1)
	batches := []kafkaRecords{
		newKafkaRecords(pa, 0, 3), newKafkaRecords(pb, 0, 2), newKafkaRecords(pa, 4, 8), newKafkaRecords(pb, 3, 6),
	}

	// I fills each bucket's batches of 3 rows in arrival order and stamps
	// them all in one drain pass, one intent each.
	type flussBatch struct {
		ids   []int64
		parts []intentlog.Part
	}
	var stamped [dataBuckets][]flussBatch
	for _, k := range batches {
		for i, id := range k.ids {
			i, b := int32(i), id%dataBuckets
			n := len(stamped[b])
			if n == 0 || len(stamped[b][n-1].ids) == 3 {
				stamped[b] = append(stamped[b], flussBatch{})
				n++
			}
			fb := &stamped[b][n-1]
			fb.parts = intentlog.AppendRecord(fb.parts, k.Batch, i)
			fb.ids = append(fb.ids, id)
		}
	}
	var intents []intentlog.Intent
	for b := range int32(dataBuckets) {
		for seq, fb := range stamped[b] {
			intents = append(intents, intentlog.Intent{Target: target(dataI, data.bucket(b)), Sequence: int32(seq), Parts: fb.parts})
		}
	}
	iLog := intentlog.NewWriter(db.Client, intentBucket, &intentSchema, "instance-i", logI)
	_, err = iLog.Append(ctx, intents)
	require.NoError(t, err)

	// I's batches land: all of bucket 0, the first of bucket 1, none of
	// bucket 2; the next one of buckets 1 and 2 is in flight when I dies.
	landed := [dataBuckets]int{len(stamped[0]), 1, 0}
	for b := range dataBuckets {
		if b > 0 {
			require.Greater(t, len(stamped[b]), landed[b], "bucket %d needs a batch to hold in flight", b)
		}
		for seq := range landed[b] {
			require.NoError(t, data.send(t, ctx, int32(b), dataI, int32(seq), stamped[b][seq].ids))
		}
	}

	// J takes each producer-partition over and writes what is missing.
	const inflight = 2
	log := Log{Bucket: intentBucket, Schema: &intentSchema, Writer: logI}
	nextJ := [dataBuckets]int32{}
	partial := 0
	for _, pp := range []intentlog.ProducerPartition{pa, pb} {
		outcomes, err := TakeOver(ctx, db.Client, log, inflight, pp)
		require.NoError(t, err)
		for _, k := range batches {
			if k.ProducerPartition != pp {
				continue
			}
			o := outcomes[k.Batch]
			total := int32(len(k.ids))
			require.NoError(t, o.Check(total))
			missing := o.Missing(total)
			if len(o.Written) > 0 && len(missing) > 0 {
				partial++
			}
			var rows [dataBuckets][]int64
			for _, r := range missing {
				for _, id := range k.ids[r.First:r.End()] {
					rows[id%dataBuckets] = append(rows[id%dataBuckets], id)
				}
			}
			for b := range int32(dataBuckets) {
				if len(rows[b]) > 0 {
					require.NoError(t, data.send(t, ctx, b, dataJ, nextJ[b], rows[b]))
					nextJ[b]++
				}
			}
		}
	}
	assert.Positive(t, partial, "some Kafka batch was partly written by I: the case a take-over must complete")

	// The zombie I: its batches in flight and its next intent entry.
	for _, b := range []int{1, 2} {
		err := data.send(t, ctx, int32(b), dataI, int32(landed[b]), stamped[b][landed[b]].ids)
		assert.ErrorIs(t, err, fluss.ErrOutOfOrderSequence, "I's batch in flight on bucket %d after the take-over", b)
	}
	_, err = iLog.Append(ctx, intents[:1])
	assert.ErrorIs(t, err, intentlog.ErrFenced)

	// pyfluss 1.0.0 reads a bucket up to its end only to a row (not to a
	// fence's markers): a closing row, id -(bucket+1), ends each bucket.
	for b := range int32(dataBuckets) {
		require.NoError(t, data.send(t, ctx, b, fluss.NoWriterID, 0, []int64{-int64(b) - 1}))
	}
	count := map[int64]int{}
	for _, r := range db.ScanLog(t, info.Path.String()) {
		var id int64
		require.NoError(t, json.Unmarshal(r.Row["id"], &id))
		count[id]++
		want := int32(id % dataBuckets)
		if id < 0 {
			want = int32(-id - 1)
		}
		assert.Equal(t, want, r.Bucket, "row %d's bucket", id)
	}
	for _, k := range batches {
		for _, id := range k.ids {
			assert.Equal(t, 1, count[id], "row %d read back", id)
			delete(count, id)
		}
	}
	for b := range int64(dataBuckets) {
		assert.Equal(t, 1, count[-b-1])
		delete(count, -b-1)
	}
	assert.Empty(t, count, "rows of no Kafka batch")
}
