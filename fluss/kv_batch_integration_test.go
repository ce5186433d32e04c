package fluss

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Primary-key tables against the real cluster: a composite key of mixed
// types over 4 buckets; upsert 10 000 keys, update half, delete a quarter;
// then Lookup of every key (in the bucket BucketForKey chose) must match a
// Go map model, and each bucket's changelog end offset must count the
// changes. The server decodes our values to build its changelog, so the
// changelog read back (Arrow batches the Java server wrote, with change-type
// vectors) is checked too.

var pkSchema = &Schema{
	Columns: []Column{
		{Name: "region", Type: String().NonNull()},
		{Name: "id", Type: BigInt().NonNull()},
		{Name: "day", Type: Date().NonNull()},
		{Name: "code", Type: Char(3).NonNull()},
		{Name: "v_int", Type: Int()},
		{Name: "v_str", Type: String()},
		{Name: "v_dec", Type: Decimal(20, 4)},
		{Name: "v_ts", Type: TimestampLTZ(6)},
		{Name: "v_dbl", Type: Double()},
		{Name: "v_bytes", Type: Bytes()},
		{Name: "v_bin", Type: Binary(3)},
	},
	PrimaryKey: []string{"region", "id", "day", "code"},
}

type pkWriter struct {
	t      *testing.T
	c      *Client
	info   *TableInfo
	enc    *KeyEncoder
	format KvFormat
	// per bucket: pending batch and the expected changelog offset
	batches map[int32]*KvBatchBuilder
	logEnd  map[int32]int64
}

func (w *pkWriter) keyOf(row Row) ([]byte, int32) {
	key, err := w.enc.Encode(nil, row)
	require.NoError(w.t, err)
	b := BucketForKey(key, w.info.Descriptor.BucketCount)
	require.GreaterOrEqual(w.t, b, int32(0))
	return key, b
}

func (w *pkWriter) batch(bucket int32) *KvBatchBuilder {
	if w.batches[bucket] == nil {
		b, err := NewKvBatchBuilder(&w.info.Descriptor.Schema, w.info.SchemaID, w.format)
		require.NoError(w.t, err)
		w.batches[bucket] = b
	}
	return w.batches[bucket]
}

func (w *pkWriter) flush() {
	ctx := testContext(w.t)
	for bucket, b := range w.batches {
		if b.Len() == 0 {
			continue
		}
		records, err := b.AppendTo(nil)
		require.NoError(w.t, err)
		leader, err := w.c.BucketLeader(ctx, w.info.TableID, NoPartition, bucket)
		require.NoError(w.t, err)
		res, err := w.c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: w.info.TableID, Acks: -1, Timeout: 30 * time.Second,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: bucket, Records: records}}})
		require.NoError(w.t, err)
		require.NoError(w.t, res[0].Err)
		assert.Equal(w.t, w.logEnd[bucket], res[0].Offset, "changelog end offset of bucket %d", bucket)
		b.Reset()
	}
}

func randomPkValues(r *rand.Rand, row Row) {
	s := pkSchema
	for i := 4; i < len(s.Columns); i++ {
		if r.IntN(5) == 0 {
			row[i] = NullDatum()
		} else {
			row[i] = randomDatum(r, &s.Columns[i].Type)
		}
	}
}

func TestPkTableCompositeKeyUpsertUpdateDeleteLookup(t *testing.T) {
	c := newClusterClient(t)
	for _, format := range []KvFormat{KvFormatCompacted, KvFormatIndexed} {
		t.Run(string(format), func(t *testing.T) {
			const buckets, keys = 4, 10_000
			_, info := createTestTable(t, c, TableDescriptor{Schema: *pkSchema, BucketCount: buckets,
				Properties: map[string]string{PropKvFormat: string(format)}})
			require.Equal(t, format, info.Descriptor.KvFormat())
			enc, err := NewKeyEncoder(&info.Descriptor.Schema, info.Descriptor.Schema.PrimaryKey, info.Descriptor.Properties[PropDataLakeFormat])
			require.NoError(t, err)
			w := &pkWriter{t: t, c: c, info: info, enc: enc, format: format,
				batches: map[int32]*KvBatchBuilder{}, logEnd: map[int32]int64{}}
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))

			type entry struct {
				key    []byte
				bucket int32
				row    Row // nil once deleted
			}
			model := make([]entry, keys)
			regions := []string{"eu", "us-east", "ap-south-1", "é"}
			changes := map[ChangeType]int{}
			for i := range model {
				row := make(Row, len(pkSchema.Columns))
				row[0] = StringDatum(regions[i%len(regions)])
				row[1] = IntDatum(int64(i)*7919 - 5000)
				row[2] = IntDatum(int64(19000 + i%365))
				row[3] = StringDatum(fmt.Sprintf("%03d", i%1000))
				randomPkValues(r, row)
				key, bucket := w.keyOf(row)
				model[i] = entry{key: key, bucket: bucket, row: row}
				w.logEnd[bucket]++ // +I
				changes[ChangeInsert]++
				require.NoError(t, w.batch(bucket).Upsert(key, row))
				if w.batch(bucket).Len() == 1000 {
					w.flush()
				}
			}
			w.flush()
			for i := 0; i < keys; i += 2 { // update half
				row := append(Row(nil), model[i].row...)
				randomPkValues(r, row)
				model[i].row = row
				w.logEnd[model[i].bucket] += 2 // -U, +U
				changes[ChangeUpdateBefore]++
				changes[ChangeUpdateAfter]++
				require.NoError(t, w.batch(model[i].bucket).Upsert(model[i].key, row))
			}
			w.flush()
			for i := 1; i < keys; i += 4 { // delete a quarter
				model[i].row = nil
				w.logEnd[model[i].bucket]++ // -D
				changes[ChangeDelete]++
				require.NoError(t, w.batch(model[i].bucket).Delete(model[i].key))
			}
			w.flush()

			// Lookup every key in its bucket.
			byBucket := map[int32][]int{}
			for i, e := range model {
				byBucket[e.bucket] = append(byBucket[e.bucket], i)
			}
			require.Len(t, byBucket, buckets, "keys spread over every bucket")
			ctx := testContext(t)
			found := 0
			for bucket, idx := range byBucket {
				for start := 0; start < len(idx); start += 500 {
					chunk := idx[start:min(start+500, len(idx))]
					ks := make([][]byte, len(chunk))
					for j, i := range chunk {
						ks[j] = model[i].key
					}
					vals, err := c.Lookup(ctx, info.TableID, NoPartition, bucket, ks)
					require.NoError(t, err)
					require.Len(t, vals, len(chunk))
					for j, i := range chunk {
						if model[i].row == nil {
							require.Nil(t, vals[j], "key %d was deleted", i)
							continue
						}
						require.NotNil(t, vals[j], "key %d", i)
						schemaID, row, err := DecodeValueRow(vals[j], &info.Descriptor.Schema, format)
						require.NoError(t, err)
						require.Equal(t, int16(info.SchemaID), schemaID)
						requireRowEqual(t, model[i].row, row, fmt.Sprintf("key %d", i))
						found++
					}
				}
			}
			assert.Equal(t, keys-keys/4, found)

			// Changelog: per-bucket end offsets count the changes, and the
			// server-written changelog decodes with the right change types.
			offs, err := c.ListOffsets(ctx, info.TableID, NoPartition, bucketIDs(buckets), LatestOffset)
			require.NoError(t, err)
			got := map[ChangeType]int{}
			for bucket, end := range w.logEnd {
				require.Equal(t, end, offs[bucket], "bucket %d", bucket)
				for _, rec := range fetchAllRecords(t, c, info, bucket, info.Descriptor.LogFormat(), end) {
					got[rec.ChangeType]++
					require.Len(t, rec.Row, len(pkSchema.Columns))
				}
			}
			assert.Equal(t, changes, got)
		})
	}
}

// A KV batch re-sent with the same writer id and sequence is applied once:
// the duplicate is acknowledged, the changelog does not grow, and the value
// is the first send's.
func TestPutKvDuplicateBatchStoredOnce(t *testing.T) {
	c := newClusterClient(t)
	ctx := testContext(t)
	path, info := createTestTable(t, c, TableDescriptor{Schema: *pkSchema, BucketCount: 1})
	writerID, err := c.InitWriter(ctx, path)
	require.NoError(t, err)
	enc, err := NewKeyEncoder(&info.Descriptor.Schema, info.Descriptor.Schema.PrimaryKey, "")
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	b, err := NewKvBatchBuilder(&info.Descriptor.Schema, info.SchemaID, info.Descriptor.KvFormat())
	require.NoError(t, err)
	var keys [][]byte
	var rows []Row
	for i := 0; i < 3; i++ {
		row := Row{StringDatum("k"), IntDatum(int64(i)), IntDatum(1), StringDatum("abc")}
		row = append(row, make(Row, len(pkSchema.Columns)-4)...)
		randomPkValues(r, row)
		key, err := enc.Encode(nil, row)
		require.NoError(t, err)
		require.NoError(t, b.Upsert(key, row))
		keys, rows = append(keys, key), append(rows, row)
	}
	batch, err := b.AppendTo(nil)
	require.NoError(t, err)
	SetKvBatchWriter(batch, writerID, 0)
	leader, err := c.BucketLeader(ctx, info.TableID, NoPartition, 0)
	require.NoError(t, err)
	for attempt := 0; attempt < 2; attempt++ {
		res, err := c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: info.TableID, Acks: -1,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: batch}}})
		require.NoError(t, err)
		require.NoError(t, res[0].Err, "attempt %d", attempt)
	}
	offs, err := c.ListOffsets(ctx, info.TableID, NoPartition, []int32{0}, LatestOffset)
	require.NoError(t, err)
	assert.Equal(t, int64(3), offs[0], "three inserts, stored once")
	vals, err := c.Lookup(ctx, info.TableID, NoPartition, 0, keys)
	require.NoError(t, err)
	for i := range keys {
		_, row, err := DecodeValueRow(vals[i], &info.Descriptor.Schema, info.Descriptor.KvFormat())
		require.NoError(t, err)
		requireRowEqual(t, rows[i], row)
	}
	// the next sequence is accepted, a gap is refused
	SetKvBatchWriter(batch, writerID, 1)
	res, err := c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: info.TableID, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: batch}}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	SetKvBatchWriter(batch, writerID, 5)
	res, err = c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: info.TableID, Acks: -1,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: batch}}})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrOutOfOrderSequence)
}
