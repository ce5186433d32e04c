package sender

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// TestMain stops the cluster flusstest.Bootstrap may start for this binary.
func TestMain(m *testing.M) { flusstest.Main(m) }

// integrationRows is the row count of the write-path integration tests:
// env SENDER_IT_ROWS, default 1 000 000 (short mode or race detector:
// 100 000 / 200 000).
func integrationRows(t *testing.T) int {
	if v := os.Getenv("SENDER_IT_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	switch {
	case testing.Short():
		return 100_000
	case raceEnabled:
		return 200_000
	}
	return 1_000_000
}

func uniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

var itSchema = fluss.Schema{Columns: []fluss.Column{
	{Name: "id", Type: fluss.BigInt().NonNull()},
	{Name: "producer", Type: fluss.Int()},
	{Name: "payload", Type: fluss.String()},
}}

type itTable struct {
	info  *fluss.TableInfo
	table *Table
	spec  TableSpec // what table was registered with (for another writer)
}

// createLogTables creates a database with n log tables of `buckets` buckets
// and registers them with w.
// createKvTable creates a database (dropped after the test) holding table
// "kv" (id BIGINT primary key, v STRING) with the given bucket count, and
// returns the table's info and a TableSpec with its KV batch builder.
func createKvTable(t *testing.T, ctx context.Context, c *fluss.Client, prefix string, buckets int) (*fluss.TableInfo, TableSpec) {
	t.Helper()
	db := uniqueName(prefix)
	require.NoError(t, c.CreateDatabase(ctx, db, false))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.DropDatabase(ctx, db, true, true)
	})
	path := fluss.TablePath{Database: db, Table: "kv"}
	pkSchema := fluss.Schema{Columns: []fluss.Column{
		{Name: "id", Type: fluss.BigInt().NonNull()},
		{Name: "v", Type: fluss.String()},
	}, PrimaryKey: []string{"id"}}
	require.NoError(t, c.CreateTableReady(ctx, path, &fluss.TableDescriptor{Schema: pkSchema, BucketCount: buckets}, 0))
	info, err := c.TableInfo(ctx, path)
	require.NoError(t, err)
	schema := info.Descriptor.Schema
	format := info.Descriptor.KvFormat()
	return info, TableSpec{ID: info.TableID, Path: path, NumBuckets: buckets,
		NewKvBuilder: func() (KvBuilder, error) { return fluss.NewKvBatchBuilder(&schema, info.SchemaID, format) }}
}

// logTableSpec is the TableSpec of a log table, with a builder of its log
// format, as the gateway registers one.
func logTableSpec(t *testing.T, info *fluss.TableInfo) TableSpec {
	t.Helper()
	schema := info.Descriptor.Schema
	spec := TableSpec{ID: info.TableID, Path: info.Path, NumBuckets: info.Descriptor.BucketCount}
	switch info.Descriptor.LogFormat() {
	case fluss.LogFormatArrow:
		codec := info.Descriptor.ArrowCompression()
		spec.NewLogBuilder = func() (LogBuilder, error) {
			return fluss.NewArrowLogBuilder(&schema, info.SchemaID, codec, 3)
		}
	case fluss.LogFormatIndexed:
		spec.NewLogBuilder = func() (LogBuilder, error) {
			return fluss.NewIndexedLogBuilder(&schema, info.SchemaID)
		}
	default:
		t.Fatalf("log format %s", info.Descriptor.LogFormat())
	}
	return spec
}

func createLogTables(t *testing.T, ctx context.Context, c *fluss.Client, w *testWriter, n, buckets int, format fluss.LogFormat) []itTable {
	t.Helper()
	db := uniqueName("writer")
	require.NoError(t, c.CreateDatabase(ctx, db, false))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, db, true, true); err != nil {
			t.Logf("drop database %s: %v", db, err)
		}
	})
	var out []itTable
	for i := range n {
		path := fluss.TablePath{Database: db, Table: fmt.Sprintf("t%d", i)}
		d := &fluss.TableDescriptor{Schema: itSchema, BucketCount: buckets,
			Properties: map[string]string{fluss.PropLogFormat: string(format)}}
		require.NoError(t, c.CreateTableReady(ctx, path, d, 0))
		info, err := c.TableInfo(ctx, path)
		require.NoError(t, err)
		spec := logTableSpec(t, info)
		tbl, err := w.AddTable(spec)
		require.NoError(t, err)
		out = append(out, itTable{info: info, table: tbl, spec: spec})
	}
	return out
}

// writeRows appends rows from `producers` goroutines round-robin over the
// tables (sticky buckets) and returns, per table and bucket, the rows whose
// handles succeeded, and their total. With until set, each producer keeps
// appending past its share until until is closed (to write across a server
// restart); mid, if set, runs once producer 0 queued half its share.
func writeRows(t *testing.T, w *testWriter, tables []itTable, rows, producers int, mid func(), until <-chan struct{}) (map[[2]int64]int64, int) {
	t.Helper()
	counts := make(map[[2]int64]int64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var midOnce sync.Once
	payload := []byte(strings.Repeat("x", 40))
	perProducer := rows / producers
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() {
			local := make(map[[2]int64]int64)
			hs := make([]Handle, 0, perProducer)
			ctx := context.Background()
			row := make(fluss.Row, 3)
			// keepGoing: the producer's share of rows, then, when until is
			// set, more rows until it is closed, paced so that rows keep
			// flowing across an outage instead of all waiting in the buffer.
			keepGoing := func(i int) bool {
				if i < perProducer {
					return true
				}
				if until == nil {
					return false
				}
				select {
				case <-until:
					return false
				default:
				}
				if i%1000 == 0 {
					time.Sleep(time.Millisecond) // pacing of a load generator, not synchronisation
				}
				return true
			}
			for i := 0; keepGoing(i); i++ {
				if mid != nil && p == 0 && i == perProducer/2 {
					midOnce.Do(mid)
				}
				tb := tables[(i+p)%len(tables)]
				row[0] = fluss.IntDatum(int64(p)<<32 | int64(i))
				row[1] = fluss.IntDatum(int64(p))
				row[2] = fluss.BytesDatum(payload)
				h, err := w.Write(ctx, tb.table, NoPartition, StickyBucket, fluss.WriteAppend, nil, row)
				if err != nil {
					errs <- fmt.Errorf("producer %d row %d: %w", p, i, err)
					return
				}
				hs = append(hs, h)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			for _, h := range hs {
				if _, err := h.Wait(wctx); err != nil {
					errs <- fmt.Errorf("producer %d: %w", p, err)
					return
				}
				b := h.Batch()
				local[[2]int64{b.Table().ID(), int64(b.Bucket())}]++
			}
			mu.Lock()
			for k, v := range local {
				counts[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, v := range counts {
		total += int(v)
	}
	return counts, total
}

func checkOffsets(t *testing.T, ctx context.Context, c *fluss.Client, tables []itTable, counts map[[2]int64]int64, rows int) {
	t.Helper()
	var total int64
	var paths []fluss.TablePath
	for _, tb := range tables {
		paths = append(paths, tb.info.Path)
	}
	require.NoError(t, c.RefreshMetadata(ctx, paths...))
	for _, tb := range tables {
		n := tb.info.Descriptor.BucketCount
		buckets := make([]int32, n)
		for i := range buckets {
			buckets[i] = int32(i)
		}
		offs, err := c.ListOffsets(ctx, tb.info.TableID, fluss.NoPartition, buckets, fluss.LatestOffset)
		require.NoError(t, err)
		for _, b := range buckets {
			want := counts[[2]int64{tb.info.TableID, int64(b)}]
			assert.Equal(t, want, offs[b], "table %s bucket %d: log end offset vs rows acknowledged", tb.info.Path, b)
			total += offs[b]
		}
	}
	assert.Equal(t, int64(rows), total, "rows in Fluss")
}

func newIntegrationWriter(t *testing.T, c *fluss.Client, set func(*writerConfig)) (*testWriter, func()) {
	t.Helper()
	w, err := newTestWriter(testConfig(set), c)
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(context.Background()) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, w.Close(ctx))
		require.NoError(t, <-runErr)
		assert.Equal(t, int64(0), w.BufferedBytes())
		assert.Equal(t, 0, int(w.snd.inflightReqs.Load()))
	}
	return w, stop
}

func newClient(t *testing.T, addr string) *fluss.Client {
	t.Helper()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(addr, ",")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Integration: 4 tables × 4 buckets, rows through the writer from 4
// goroutines; every handle succeeds and each bucket's log end offset equals
// the rows acknowledged for it.
func TestIntegrationFourTables(t *testing.T) {
	for _, idem := range []bool{true, false} {
		t.Run(map[bool]string{true: "idempotent", false: "plain"}[idem], func(t *testing.T) {
			addr := flusstest.Bootstrap(t)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			c := newClient(t, addr)
			w, stop := newIntegrationWriter(t, c, func(c *writerConfig) {
				c.BatchSize, c.BufferMemory = 1<<20, 64<<20
				c.DisableIdempotence = !idem
			})
			tables := createLogTables(t, ctx, c, w, 4, 4, fluss.LogFormatArrow)
			rows := integrationRows(t)
			if !idem {
				rows /= 4
			}
			start := time.Now()
			counts, n := writeRows(t, w, tables, rows, 4, nil, nil)
			require.Equal(t, rows, n)
			elapsed := time.Since(start)
			t.Logf("%d rows in %v: %.0f rows/s", rows, elapsed, float64(rows)/elapsed.Seconds())
			stop()
			checkOffsets(t, ctx, c, tables, counts, rows)
		})
	}
}

// Integration: idempotent writes while tablet server 0 restarts mid-run; no
// loss and no duplicates. Uses a private cluster (it disturbs servers).
func TestIntegrationTabletRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private cluster")
	}
	cl := flusstest.StartCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	c := newClient(t, cl.Bootstrap())
	w, stop := newIntegrationWriter(t, c, func(c *writerConfig) {
		c.BatchSize, c.BufferMemory, c.BufferWaitTimeout = 256<<10, 32<<20, 4*time.Minute
		// The writer holds its batches across the restart: leaders stay
		// unknown for longer than the default LeaderWait.
		c.DeliveryTimeout, c.LeaderWait = 4*time.Minute, 4*time.Minute
	})
	tables := createLogTables(t, ctx, c, w, 4, 4, fluss.LogFormatArrow)
	rows := integrationRows(t) / 4
	restarted := make(chan struct{})
	var restartErr error
	start := time.Now()
	counts, n := writeRows(t, w, tables, rows, 4, func() {
		go func() {
			defer close(restarted)
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
			defer rcancel()
			restartErr = cl.RestartTabletServer(rctx, 0)
		}()
	}, restarted)
	require.NoError(t, restartErr)
	t.Logf("%d rows acknowledged in %v across a tablet server restart; %.0f retries",
		n, time.Since(start), w.snd.m.retriesTotal())
	assert.Greater(t, n, rows)
	stop()
	// A fresh client: the restarted server listens on a new port.
	checkOffsets(t, ctx, newClient(t, cl.Bootstrap()), tables, counts, n)
}

// Integration: upserts and deletes through the writer into a primary-key
// table, 4 buckets, bucket chosen from the key as the Java client does; the
// changelog end offsets count +I for each new key, and -U/+U for each update
// and -D for each delete.
func TestIntegrationPrimaryKeyTable(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newClient(t, addr)
	w, stop := newIntegrationWriter(t, c, func(c *writerConfig) { c.BatchSize = 256 << 10 })
	info, spec := createKvTable(t, ctx, c, "writer_kv", 4)
	schema := info.Descriptor.Schema
	tbl, err := w.AddTable(spec)
	require.NoError(t, err)
	pk, bk := fluss.KeyColumns(&info.Descriptor)
	keyEnc, err := fluss.NewKeyEncoder(&schema, pk, "")
	require.NoError(t, err)
	bucketEnc, err := fluss.NewKeyEncoder(&schema, bk, "")
	require.NoError(t, err)

	const keys = 20_000
	want := map[int32]int64{}
	var hs []Handle
	op := func(id int64, del bool, changes int64) {
		row := fluss.Row{fluss.IntDatum(id), fluss.StringDatum(fmt.Sprintf("v%d", id))}
		key, err := keyEnc.Encode(nil, row)
		require.NoError(t, err)
		bkey, err := bucketEnc.Encode(nil, row)
		require.NoError(t, err)
		bucket := fluss.BucketForKey(bkey, 4)
		wop := fluss.WriteUpsert
		if del {
			wop = fluss.WriteDelete
		}
		h, err := w.Write(ctx, tbl, NoPartition, bucket, wop, key, row)
		require.NoError(t, err)
		hs = append(hs, h)
		want[bucket] += changes
	}
	for id := range int64(keys) {
		op(id, false, 1) // +I
	}
	for id := int64(0); id < keys; id += 10 {
		op(id, false, 2) // -U +U
	}
	for id := int64(5); id < keys; id += 10 {
		op(id, true, 1) // -D
	}
	for _, h := range hs {
		_, err := h.Wait(ctx)
		require.NoError(t, err)
	}
	stop()
	offs, err := c.ListOffsets(ctx, info.TableID, fluss.NoPartition, []int32{0, 1, 2, 3}, fluss.LatestOffset)
	require.NoError(t, err)
	for b := range int32(4) {
		assert.Equal(t, want[b], offs[b], "bucket %d changelog end offset", b)
	}
}
