package fluss

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Log tables against the real cluster: every column type, 10 000 rows in
// several batches per format, read back through FetchLog and our decoders,
// and ListOffsets equal to the row count.

// produceBatch sends one batch to its bucket's leader and returns the
// per-bucket result.
func produceBatch(t *testing.T, c *Client, tableID int64, bucket int32, records []byte) BucketResult {
	t.Helper()
	ctx := testContext(t)
	leader, err := c.BucketLeader(ctx, tableID, NoPartition, bucket)
	require.NoError(t, err)
	res, err := c.ProduceLog(ctx, leader.ID, &ProduceLogRequest{TableID: tableID, Acks: -1, Timeout: 30 * time.Second,
		Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: bucket, Records: records}}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	return res[0]
}

// fetchAllRecords reads bucket from offset 0 up to its high watermark.
func fetchAllRecords(t *testing.T, c *Client, info *TableInfo, bucket int32, format LogFormat, want int64) []LogRecord {
	t.Helper()
	ctx := testContext(t)
	var out []LogRecord
	next := int64(0)
	for next < want {
		fetched, err := c.FetchLog(ctx, &FetchLogRequest{TableID: info.TableID,
			Buckets: []FetchBucket{{PartitionID: NoPartition, Bucket: bucket, Offset: next}}})
		require.NoError(t, err)
		require.NoError(t, fetched[0].Err)
		recs, err := DecodeLogBatchesFormat(fetched[0].Records, &info.Descriptor.Schema, format)
		require.NoError(t, err)
		require.NotEmpty(t, recs, "fetch at %d of bucket %d returned no records", next, bucket)
		for _, r := range recs {
			if r.Offset >= next { // a fetch may start inside a batch
				out = append(out, r)
			}
		}
		next = recs[len(recs)-1].Offset + 1
	}
	return out
}

func TestLogTableAllTypesRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
	}{
		{"arrow_zstd_default", nil},
		{"arrow_lz4", map[string]string{PropArrowCompression: string(ArrowCompressionLZ4)}},
		{"arrow_none", map[string]string{PropArrowCompression: string(ArrowCompressionNone)}},
		{"indexed", map[string]string{PropLogFormat: string(LogFormatIndexed)}},
		{"compacted", map[string]string{PropLogFormat: string(LogFormatCompacted)}},
	}
	c := newClusterClient(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const buckets, total = 3, 10_000
			sent := allTypesSchema()
			_, info := createTestTable(t, c, TableDescriptor{Schema: *sent, BucketCount: buckets, Properties: tc.props})
			s := &info.Descriptor.Schema
			require.Len(t, s.Columns, len(sent.Columns))
			for i := range s.Columns {
				require.Equal(t, sent.Columns[i].Type, s.Columns[i].Type, "column %s as stored by the server", sent.Columns[i].Name)
			}
			format := info.Descriptor.LogFormat()
			if tc.props == nil {
				require.Equal(t, LogFormatArrow, format)
				require.Equal(t, ArrowCompressionZstd, info.Descriptor.ArrowCompression())
			}
			newBuilder := func() batchBuilder {
				var b batchBuilder
				var err error
				switch format {
				case LogFormatArrow:
					b, err = NewArrowLogBuilder(s, info.SchemaID, info.Descriptor.ArrowCompression(), 3)
				case LogFormatIndexed:
					b, err = NewIndexedLogBuilder(s, info.SchemaID)
				default:
					b, err = NewCompactedLogBuilder(s, info.SchemaID)
				}
				require.NoError(t, err)
				return b
			}
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
			want := make([][]Row, buckets)
			b := newBuilder()
			for written := 0; written < total; {
				bucket := int32(r.IntN(buckets))
				n := min(total-written, 200+r.IntN(1800))
				b.Reset()
				for i := 0; i < n; i++ {
					row := randomRow(r, s, []int{0, 10, 100}[r.IntN(3)])
					require.NoError(t, b.Append(row))
					want[bucket] = append(want[bucket], row)
				}
				records, err := b.AppendTo(nil)
				require.NoError(t, err)
				res := produceBatch(t, c, info.TableID, bucket, records)
				require.NoError(t, res.Err)
				assert.Equal(t, int64(len(want[bucket])-n), res.Offset, "base offset of the batch")
				written += n
			}

			offs, err := c.ListOffsets(testContext(t), info.TableID, NoPartition, bucketIDs(buckets), LatestOffset)
			require.NoError(t, err)
			sum := int64(0)
			for bkt := range want {
				assert.Equal(t, int64(len(want[bkt])), offs[int32(bkt)], "bucket %d", bkt)
				sum += offs[int32(bkt)]
			}
			assert.Equal(t, int64(total), sum)

			for bkt := range want {
				recs := fetchAllRecords(t, c, info, int32(bkt), format, int64(len(want[bkt])))
				got := make([]Row, len(recs))
				for i, rec := range recs {
					require.Equal(t, int64(i), rec.Offset)
					require.Equal(t, ChangeAppendOnly, rec.ChangeType)
					require.Positive(t, rec.Timestamp, "commit timestamp assigned by the server")
					got[i] = rec.Row
				}
				requireRowsEqual(t, want[bkt], got)
			}
		})
	}
}

// A batch whose CRC does not match is refused with CORRUPT_RECORD (14), and
// the bucket keeps serving: a good batch afterwards is stored and read back
// alone.
func TestLogBatchWithBadCRCIsRefused(t *testing.T) {
	c := newClusterClient(t)
	_, info := createTestTable(t, c, TableDescriptor{Schema: *idNameSchema, BucketCount: 1})
	s := &info.Descriptor.Schema
	for _, format := range []LogFormat{LogFormatArrow, LogFormatIndexed} {
		var b batchBuilder
		var err error
		if format == LogFormatArrow {
			b, err = NewArrowLogBuilder(s, info.SchemaID, ArrowCompressionZstd, 3)
		} else {
			b, err = NewIndexedLogBuilder(s, info.SchemaID)
		}
		require.NoError(t, err)
		require.NoError(t, b.Append(Row{IntDatum(1), StringDatum("bad")}))
		bad, err := b.AppendTo(nil)
		require.NoError(t, err)
		bad[len(bad)-3] ^= 0x5a // corrupt a record byte, keep the stored CRC
		res := produceBatch(t, c, info.TableID, 0, bad)
		require.Error(t, res.Err, format)
		require.ErrorIs(t, res.Err, ErrCorruptRecord, "%s: %v", format, res.Err)
		var fe *Error
		require.ErrorAs(t, res.Err, &fe)
		assert.Equal(t, int32(14), fe.Code)
	}
	b, err := NewIndexedLogBuilder(s, info.SchemaID)
	require.NoError(t, err)
	require.NoError(t, b.Append(Row{IntDatum(2), StringDatum("good")}))
	good, err := b.AppendTo(nil)
	require.NoError(t, err)
	res := produceBatch(t, c, info.TableID, 0, good)
	require.NoError(t, res.Err)
	assert.Equal(t, int64(0), res.Offset, "the refused batches took no offsets")
	recs := fetchAllRecords(t, c, info, 0, LogFormatIndexed, 1)
	require.Len(t, recs, 1)
	requireRowEqual(t, Row{IntDatum(2), StringDatum("good")}, recs[0].Row)
}
