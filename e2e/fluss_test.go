package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flussdb"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// env is one test's database on the cluster (internal/flussdb).
type env struct{ *flussdb.DB }

func newEnv(t *testing.T) *env { return &env{flussdb.New(t, "e2e")} }

// table is a table description for createTable.
type table struct {
	name       string
	columns    []fluss.Column
	primaryKey []string
	partition  []string
	buckets    int
	properties map[string]string
}

// createTable creates the table in the env's database and waits until every
// bucket has a leader. It returns "db.table".
func (e *env) createTable(t *testing.T, tb table) string {
	t.Helper()
	return e.CreateTable(t, tb.name, &fluss.TableDescriptor{
		Schema:        fluss.Schema{Columns: tb.columns, PrimaryKey: tb.primaryKey},
		PartitionKeys: tb.partition,
		BucketCount:   tb.buckets,
		Properties:    tb.properties,
	})
}

func col(name string, typ fluss.DataType) fluss.Column { return fluss.Column{Name: name, Type: typ} }

// scannedRow is one row of flusspy scan-log.
type scannedRow = flussdb.ScannedRow

// scanLog reads every row of the table out of Fluss with pyfluss.
func (e *env) scanLog(t *testing.T, table string) []scannedRow { return e.ScanLog(t, table) }

// lookup reads the rows of the given keys with pyfluss (nil for a key without a row).
func (e *env) lookup(t *testing.T, table string, keys []map[string]any) []map[string]json.RawMessage {
	t.Helper()
	kj, err := json.Marshal(keys)
	require.NoError(t, err)
	var out struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	flusstest.PyFlussJSON(t, &out, e.Bootstrap, "lookup", "--table", table, "--keys-json", string(kj))
	require.Len(t, out.Rows, len(keys))
	return out.Rows
}

// str decodes a JSON string field of a scanned row.
func str(t *testing.T, row map[string]json.RawMessage, col string) string {
	t.Helper()
	raw, ok := row[col]
	require.True(t, ok, "column %s missing in %v", col, row)
	var s string
	require.NoError(t, json.Unmarshal(raw, &s), "column %s = %s", col, raw)
	return s
}

// num decodes a JSON integer field of a scanned row.
func num(t *testing.T, row map[string]json.RawMessage, col string) int64 {
	t.Helper()
	raw, ok := row[col]
	require.True(t, ok, "column %s missing in %v", col, row)
	var n int64
	require.NoError(t, json.Unmarshal(raw, &n), "column %s = %s", col, raw)
	return n
}

// isNull reports whether a field of a scanned row is JSON null.
func isNull(row map[string]json.RawMessage, col string) bool {
	raw, ok := row[col]
	return ok && string(raw) == "null"
}

// newProducer returns a franz-go producer of the gateway with its defaults
// (idempotent, acks=all, no delivery timeout: kgo would measure it from a
// record's own Timestamp, which tests set in the past) plus opts, closed at
// cleanup.
func newProducer(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ProducerLinger(5 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produceAll produces the records and requires every one to be acknowledged.
func produceAll(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

func testContext(t *testing.T) context.Context { return flussdb.Context(t) }

// uniqueName returns a Fluss-valid name unique to this run.
func uniqueName(prefix string) string { return flussdb.UniqueName(prefix) }

// fetchedRow is one row read with the Go client's FetchLog.
type fetchedRow struct {
	bucket int32
	offset int64
	row    fluss.Row
}

// fetchLog reads every row of a non-partitioned log table with the Go
// client's FetchLog and DecodeLogBatches, up to each bucket's high watermark:
// a second reader next to pyfluss.
func (e *env) fetchLog(t *testing.T, table string) ([]fetchedRow, *fluss.Schema) {
	t.Helper()
	ctx := testContext(t)
	db, name, _ := strings.Cut(table, ".")
	info, err := e.Client.TableInfo(ctx, fluss.TablePath{Database: db, Table: name})
	require.NoError(t, err)
	schema := &info.Descriptor.Schema
	var out []fetchedRow
	for b := range int32(info.Descriptor.BucketCount) {
		next := int64(0)
		for {
			got, err := e.Client.FetchLog(ctx, &fluss.FetchLogRequest{TableID: info.TableID,
				Buckets: []fluss.FetchBucket{{PartitionID: fluss.NoPartition, Bucket: b, Offset: next}}})
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.NoError(t, got[0].Err, "fetch bucket %d", b)
			recs, err := fluss.DecodeLogBatches(got[0].Records, schema)
			require.NoError(t, err, "decode bucket %d", b)
			for _, r := range recs {
				if r.Offset >= next {
					out = append(out, fetchedRow{bucket: b, offset: r.Offset, row: r.Row})
					next = r.Offset + 1
				}
			}
			if next >= got[0].HighWatermark {
				break
			}
			require.NotEmpty(t, recs, "bucket %d: no records below the high watermark %d at offset %d", b, got[0].HighWatermark, next)
		}
	}
	return out, schema
}
