package fluss

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// The server reads our Arrow metadata when a fetch asks for projection
// pushdown: FileLogProjection parses the flatbuffer, walks the field nodes
// and buffers of every column, and rebuilds a RecordBatch message of the
// projected columns (with the table's codec). Reading that message back
// proves the tablet server itself understands our ARROW batches, for every
// codec and for columns with and without nulls.
func TestServerProjectsOurArrowBatches(t *testing.T) {
	c := newClusterClient(t)
	for _, codec := range arrowCodecs {
		t.Run(string(codec), func(t *testing.T) {
			s := allTypesSchema()
			_, info := createTestTable(t, c, TableDescriptor{Schema: *s, BucketCount: 1,
				Properties: map[string]string{PropArrowCompression: string(codec)}})
			ts := &info.Descriptor.Schema
			b, err := NewArrowLogBuilder(ts, info.SchemaID, codec, 3)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
			var rows []Row
			for batch, nullPct := range []int{0, 30, 100} {
				b.Reset()
				for i := 0; i < 50+batch; i++ {
					row := randomRow(r, ts, nullPct)
					require.NoError(t, b.Append(row))
					rows = append(rows, row)
				}
				records, err := b.AppendTo(nil)
				require.NoError(t, err)
				require.NoError(t, produceBatch(t, c, info.TableID, 0, records).Err)
			}

			projected := []int32{1, 4, 9, 10, 11, 12, 13, 17, 24, len32(ts.Columns) - 1}
			sub := &Schema{}
			for _, f := range projected {
				sub.Columns = append(sub.Columns, ts.Columns[f])
			}
			recs := fetchProjected(t, c, info, projected, sub)
			require.Len(t, recs, len(rows))
			for i, rec := range recs {
				want := make(Row, len(projected))
				for j, f := range projected {
					want[j] = rows[i][f]
				}
				requireRowEqual(t, want, rec.Row, fmt.Sprintf("record %d", i))
			}
		})
	}
}

func len32[T any](s []T) int32 { return int32(len(s)) }

func fetchProjected(t *testing.T, c *Client, info *TableInfo, fields []int32, sub *Schema) []LogRecord {
	t.Helper()
	ctx := testContext(t)
	leader, err := c.BucketLeader(ctx, info.TableID, NoPartition, 0)
	require.NoError(t, err)
	req := &pb.FetchLogRequest{
		FollowerServerId: proto.Int32(-1),
		MaxBytes:         proto.Int32(16 << 20),
		TablesReq: []*pb.PbFetchLogReqForTable{{
			TableId:                   proto.Int64(info.TableID),
			ProjectionPushdownEnabled: proto.Bool(true),
			ProjectedFields:           fields,
			BucketsReq: []*pb.PbFetchLogReqForBucket{{
				BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(16 << 20),
			}},
		}},
	}
	payload, err := proto.Marshal(req)
	require.NoError(t, err)
	addr := net.JoinHostPort(leader.Host, strconv.Itoa(leader.Port))
	raw, err := c.RawRequest(ctx, addr, apiFetchLog, 0, payload, 30*time.Second)
	require.NoError(t, err)
	require.NoError(t, raw.Err())
	var resp pb.FetchLogResponse
	require.NoError(t, proto.Unmarshal(raw.Payload, &resp))
	require.Len(t, resp.GetTablesResp(), 1)
	require.Len(t, resp.GetTablesResp()[0].GetBucketsResp(), 1)
	br := resp.GetTablesResp()[0].GetBucketsResp()[0]
	require.Zero(t, br.GetErrorCode(), br.GetErrorMessage())
	recs, err := DecodeProjectedLogBatches(br.GetRecords(), sub)
	require.NoError(t, err)
	return recs
}
