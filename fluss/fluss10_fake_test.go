package fluss_test

// Fluss 1.0 wire behaviour against flussfake, which speaks 0.9.1-incubating
// by default and 1.0.0 with WithVersion10: version negotiation, routing
// bucket counts, per-partition bucket counts, INVALID_BUCKET_ROUTING (74),
// KV back-pressure, metadata from tablet servers and InitWriter routing.

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/flussfake"
)

var (
	logSchema = fluss.Schema{Columns: []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "day", Type: fluss.String()}}}
	kvSchema  = fluss.Schema{Columns: []fluss.Column{{Name: "k", Type: fluss.Int()}, {Name: "day", Type: fluss.String()}},
		PrimaryKey: []string{"k", "day"}}
	indexed = map[string]string{fluss.PropLogFormat: "INDEXED"}
)

// fakeEnv is a fake cluster, a client of it and a counter of the
// GET_METADATA requests it received.
type fakeEnv struct {
	fc       *flussfake.Cluster
	c        *fluss.Client
	metadata atomic.Int32
}

func newFakeEnv(t *testing.T, cfg fluss.Config, opts ...flussfake.Opt) *fakeEnv {
	t.Helper()
	return newFakeEnvWith(t, cfg, nil, opts...)
}

func newFakeEnvWith(t *testing.T, cfg fluss.Config, clientOpts []fluss.Option, opts ...flussfake.Opt) *fakeEnv {
	t.Helper()
	fc, err := flussfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	e := &fakeEnv{fc: fc}
	fc.Control(func(req *flussfake.Request) (flussfake.Response, bool) {
		if req.APIKey == flussfake.GetMetadata {
			e.metadata.Add(1)
		}
		return flussfake.Response{}, false
	})
	if len(cfg.Bootstrap) == 0 {
		cfg.Bootstrap = []string{fc.Bootstrap()}
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	e.c, err = fluss.NewClient(cfg, clientOpts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.c.Close() })
	return e
}

func (e *fakeEnv) table(t *testing.T, name string, d fluss.TableDescriptor) *fluss.TableInfo {
	t.Helper()
	path := fluss.TablePath{Database: "db", Table: name}
	_, err := e.fc.AddTable(path, d)
	require.NoError(t, err)
	info, err := e.c.TableInfo(t.Context(), path)
	require.NoError(t, err)
	return info
}

func logRecords(t *testing.T) []byte {
	t.Helper()
	b, err := fluss.NewIndexedLogBuilder(&logSchema, 1)
	require.NoError(t, err)
	require.NoError(t, b.Append(fluss.Row{fluss.IntDatum(1), fluss.StringDatum("d")}))
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	return out
}

func kvRecords(t *testing.T) []byte {
	t.Helper()
	b, err := fluss.NewKvBatchBuilder(&kvSchema, 1, fluss.KvFormatCompacted)
	require.NoError(t, err)
	require.NoError(t, b.Upsert([]byte{1}, fluss.Row{fluss.IntDatum(1), fluss.StringDatum("d")}))
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	return out
}

// produce writes one batch to one bucket through its leader.
func produce(t *testing.T, c *fluss.Client, tableID, pid int64, b fluss.BucketRecords) fluss.BucketResult {
	t.Helper()
	leader, err := c.BucketLeader(t.Context(), tableID, pid, b.Bucket)
	require.NoError(t, err)
	b.PartitionID = pid
	if b.Records == nil {
		b.Records = logRecords(t)
	}
	res, err := c.ProduceLog(t.Context(), leader.ID, &fluss.ProduceLogRequest{TableID: tableID, Acks: -1, Buckets: []fluss.BucketRecords{b}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	return res[0]
}

func putKv(t *testing.T, c *fluss.Client, tableID, pid int64, b fluss.BucketRecords) fluss.BucketResult {
	t.Helper()
	leader, err := c.BucketLeader(t.Context(), tableID, pid, b.Bucket)
	require.NoError(t, err)
	b.PartitionID = pid
	b.Records = kvRecords(t)
	res, err := c.PutKv(t.Context(), leader.ID, &fluss.PutKvRequest{TableID: tableID, Acks: -1, Buckets: []fluss.BucketRecords{b}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	return res[0]
}

func lastWrite(t *testing.T, fc *flussfake.Cluster) flussfake.Write {
	t.Helper()
	ws := fc.Writes()
	require.NotEmpty(t, ws)
	return ws[len(ws)-1]
}

// TestWriteVersionNegotiation pins Fluss 1.0 wire version negotiation:
// PRODUCE_LOG v1 and PUT_KV v3 with routing_bucket_count and
// original_partition_name against a 1.0 server, v0 and v1 without them
// against a 0.9.1 server; lookups carry the count to 1.0 servers only.
func TestWriteVersionNegotiation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		opts                 []flussfake.Opt
		produceV, putV       int16
		routing              bool
		wantCount            int32
		wantName, wantLookup string
	}{
		{name: "0.9.1", produceV: 0, putV: 1},
		{name: "1.0", opts: []flussfake.Opt{flussfake.WithVersion10()}, produceV: 1, putV: 3, routing: true, wantCount: 2, wantName: "d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newFakeEnv(t, fluss.Config{}, tt.opts...)
			logT := e.table(t, "log", fluss.TableDescriptor{Schema: logSchema, BucketCount: 2, Properties: indexed})
			kvT := e.table(t, "kv", fluss.TableDescriptor{Schema: kvSchema, BucketCount: 2})
			b := fluss.BucketRecords{Bucket: 1, RoutingBucketCount: 2, PartitionName: "d"}

			require.NoError(t, produce(t, e.c, logT.TableID, fluss.NoPartition, b).Err)
			w := lastWrite(t, e.fc)
			assert.Equal(t, flussfake.ProduceLog, w.APIKey)
			assert.Equal(t, tt.produceV, w.Version)
			assert.Equal(t, tt.routing, w.HasRoutingBucketCount)
			assert.Equal(t, tt.wantCount, w.RoutingBucketCount)
			assert.Equal(t, tt.wantName, w.PartitionName)

			require.NoError(t, putKv(t, e.c, kvT.TableID, fluss.NoPartition, b).Err)
			w = lastWrite(t, e.fc)
			assert.Equal(t, flussfake.PutKv, w.APIKey)
			assert.Equal(t, tt.putV, w.Version)
			assert.Equal(t, tt.routing, w.HasRoutingBucketCount)
			assert.Equal(t, tt.wantCount, w.RoutingBucketCount)

			// a zero count and an empty name are never sent
			require.NoError(t, produce(t, e.c, logT.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 0}).Err)
			w = lastWrite(t, e.fc)
			assert.False(t, w.HasRoutingBucketCount)
			assert.Empty(t, w.PartitionName)

			vals, err := e.c.LookupBucketKeys(t.Context(), kvT.TableID, fluss.LookupBucket{
				PartitionID: fluss.NoPartition, Bucket: 1, Keys: [][]byte{{1}}, RoutingBucketCount: 2,
			})
			require.NoError(t, err)
			assert.Equal(t, [][]byte{nil}, vals)
			w = lastWrite(t, e.fc)
			assert.Equal(t, flussfake.Lookup, w.APIKey)
			assert.Equal(t, int16(1), w.Version)
			assert.Equal(t, tt.routing, w.HasRoutingBucketCount)
		})
	}
}

// TestPerPartitionBucketCounts pins the 1.0 per-partition bucket count in
// metadata (PbPartitionMetadata.bucket_count) and partition listings
// (PbPartitionInfo.bucket_count), and the 0.9.1 fallback to the number of
// buckets metadata lists; counts are cached and forgotten on invalidation.
func TestPerPartitionBucketCounts(t *testing.T) {
	t.Parallel()
	for _, v10 := range []bool{false, true} {
		name := map[bool]string{false: "0.9.1", true: "1.0"}[v10]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var opts []flussfake.Opt
			if v10 {
				opts = append(opts, flussfake.WithVersion10())
			}
			e := newFakeEnv(t, fluss.Config{}, opts...)
			ctx := t.Context()
			info := e.table(t, "p", fluss.TableDescriptor{Schema: logSchema, PartitionKeys: []string{"day"}, BucketCount: 2, Properties: indexed})
			p1, err := e.fc.AddPartition(info.TableID, fluss.PartitionSpec{{Key: "day", Value: "d1"}}, 0)
			require.NoError(t, err)
			p3, err := e.fc.AddPartition(info.TableID, fluss.PartitionSpec{{Key: "day", Value: "d3"}}, 3)
			require.NoError(t, err)

			before := e.metadata.Load()
			n, err := e.c.BucketCount(ctx, info.TableID, p3)
			require.NoError(t, err)
			assert.Equal(t, int32(3), n, "the partition's own count, not the table's 2")
			assert.Equal(t, before+1, e.metadata.Load(), "one metadata round trip")
			n, err = e.c.BucketCount(ctx, info.TableID, p3)
			require.NoError(t, err)
			assert.Equal(t, int32(3), n)
			assert.Equal(t, before+1, e.metadata.Load(), "cached")

			n, err = e.c.BucketCount(ctx, info.TableID, p1)
			require.NoError(t, err)
			assert.Equal(t, int32(2), n)
			n, err = e.c.BucketCount(ctx, info.TableID, fluss.NoPartition)
			require.NoError(t, err)
			assert.Equal(t, int32(2), n, "a partitioned table's own count is its descriptor's")

			e.c.InvalidatePartitionMetadata(info.TableID, p3)
			before = e.metadata.Load()
			_, err = e.c.BucketCount(ctx, info.TableID, p1)
			require.NoError(t, err)
			assert.Equal(t, before, e.metadata.Load(), "other partitions stay cached")
			_, err = e.c.BucketCount(ctx, info.TableID, p3)
			require.NoError(t, err)
			assert.Equal(t, before+1, e.metadata.Load())
			e.c.InvalidateTableMetadata(info.TableID)
			_, err = e.c.BucketCount(ctx, info.TableID, p1)
			require.NoError(t, err)
			assert.Equal(t, before+2, e.metadata.Load(), "InvalidateTableMetadata forgets counts")

			parts, err := e.c.ListPartitionInfos(ctx, info.Path)
			require.NoError(t, err)
			require.Len(t, parts, 2)
			got := map[string]int32{parts[0].Name: parts[0].BucketCount, parts[1].Name: parts[1].BucketCount}
			if v10 {
				assert.Equal(t, map[string]int32{"d1": 2, "d3": 3}, got)
				assert.NotEmpty(t, parts[0].RemoteDataDir)
			} else {
				assert.Equal(t, map[string]int32{"d1": 0, "d3": 0}, got, "0.9.1 reports no count")
			}

			// a write to bucket 2 exists only in the 3-bucket partition
			require.NoError(t, produce(t, e.c, info.TableID, p3, fluss.BucketRecords{Bucket: 2, RoutingBucketCount: 3}).Err)
			assert.Equal(t, int64(1), e.fc.LogEndOffset(info.TableID, p3, 2))

			// EnsurePartitionInfo creates through the coordinator and reports the count
			pi, err := e.c.EnsurePartitionInfo(ctx, info.Path, fluss.PartitionSpec{{Key: "day", Value: "d9"}})
			require.NoError(t, err)
			assert.Equal(t, "d9", pi.Name)
			assert.Equal(t, int32(2), pi.BucketCount)
		})
	}
}

// TestInvalidBucketRoutingAfterRescale pins INVALID_BUCKET_ROUTING (74): after
// ALTER TABLE SET bucket.num a 1.0 server refuses a write whose
// routing_bucket_count is missing or wrong, stores nothing, and the client
// treats it as non-retriable and forgets that partition's bucket count.
func TestInvalidBucketRoutingAfterRescale(t *testing.T) {
	t.Parallel()
	e := newFakeEnv(t, fluss.Config{}, flussfake.WithVersion10())
	ctx := t.Context()
	info := e.table(t, "r", fluss.TableDescriptor{Schema: logSchema, PartitionKeys: []string{"day"}, BucketCount: 2, Properties: indexed})
	p1, err := e.fc.AddPartition(info.TableID, fluss.PartitionSpec{{Key: "day", Value: "d1"}}, 0)
	require.NoError(t, err)
	require.NoError(t, produce(t, e.c, info.TableID, p1, fluss.BucketRecords{Bucket: 0}).Err, "no rescale yet: a count-less write is fine")

	require.NoError(t, e.fc.Rescale(info.TableID, 4))
	p2, err := e.fc.AddPartition(info.TableID, fluss.PartitionSpec{{Key: "day", Value: "d2"}}, 0)
	require.NoError(t, err)

	n, err := e.c.BucketCount(ctx, info.TableID, p1)
	require.NoError(t, err)
	assert.Equal(t, int32(2), n, "an existing partition keeps its count")
	n, err = e.c.BucketCount(ctx, info.TableID, p2)
	require.NoError(t, err)
	assert.Equal(t, int32(4), n, "a partition created after the rescale gets the new count")
	n, err = e.c.BucketCount(ctx, info.TableID, fluss.NoPartition)
	require.NoError(t, err)
	assert.Equal(t, int32(4), n, "the table's count, from the last metadata answer")

	for _, tc := range []struct {
		name  string
		count int32
	}{{"missing", 0}, {"stale", 4}} {
		r := produce(t, e.c, info.TableID, p1, fluss.BucketRecords{Bucket: 1, RoutingBucketCount: tc.count})
		require.ErrorIs(t, r.Err, fluss.ErrInvalidBucketRouting, tc.name)
		assert.False(t, fluss.IsRetriable(r.Err), tc.name)
		assert.Equal(t, int64(0), e.fc.LogEndOffset(info.TableID, p1, 1), "%s: nothing stored", tc.name)
		before := e.metadata.Load()
		n, err := e.c.BucketCount(ctx, info.TableID, p1)
		require.NoError(t, err)
		assert.Equal(t, int32(2), n)
		assert.Equal(t, before+1, e.metadata.Load(), "%s: the partition's count was forgotten and asked again", tc.name)
	}
	r := produce(t, e.c, info.TableID, p1, fluss.BucketRecords{Bucket: 1, RoutingBucketCount: 2})
	require.NoError(t, r.Err)
	assert.Equal(t, int64(1), e.fc.LogEndOffset(info.TableID, p1, 1))
	r = produce(t, e.c, info.TableID, p2, fluss.BucketRecords{Bucket: 3, RoutingBucketCount: 4})
	require.NoError(t, r.Err)

	vals, err := e.c.Lookup(ctx, info.TableID, p1, 0, [][]byte{{1}})
	require.ErrorIs(t, err, fluss.ErrInvalidBucketRouting, "a count-less lookup of a rescaled table")
	assert.Nil(t, vals)
	_, err = e.c.LookupBucketKeys(ctx, info.TableID, fluss.LookupBucket{PartitionID: p1, Bucket: 0, Keys: [][]byte{{1}}, RoutingBucketCount: 2})
	require.NoError(t, err)

	codes := map[int32]int{}
	for _, w := range e.fc.Writes() {
		codes[w.ErrCode]++
	}
	assert.Equal(t, map[int32]int{0: 4, 74: 3}, codes)
}

// TestRoutingCountNotSentToFluss091 shows the 0.9.1 side of the version
// gate: even with a count in the request, a v0 write carries none, so a
// fake told to insist on one refuses it.
func TestRoutingCountNotSentToFluss091(t *testing.T) {
	t.Parallel()
	e := newFakeEnv(t, fluss.Config{})
	info := e.table(t, "g", fluss.TableDescriptor{Schema: logSchema, BucketCount: 1, Properties: indexed})
	e.fc.StrictRouting(info.TableID, true)
	r := produce(t, e.c, info.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 0, RoutingBucketCount: 1})
	require.ErrorIs(t, r.Err, fluss.ErrInvalidBucketRouting)
	assert.False(t, lastWrite(t, e.fc).HasRoutingBucketCount)
}

// TestPutKvPressure pins PbPutKvRespForBucket.pressure (field 6) and
// STORAGE_BACKPRESSURE_EXCEPTION (72) at PUT_KV v2+, and what a 0.9.1
// server gives instead: no pressure, and 11 in place of 72.
func TestPutKvPressure(t *testing.T) {
	t.Parallel()
	t.Run("1.0", func(t *testing.T) {
		t.Parallel()
		e := newFakeEnv(t, fluss.Config{}, flussfake.WithVersion10())
		info := e.table(t, "kv", fluss.TableDescriptor{Schema: kvSchema, BucketCount: 2})
		e.fc.SetPressure(info.TableID, fluss.NoPartition, 1, 0.25)
		r := putKv(t, e.c, info.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 1, RoutingBucketCount: 2})
		require.NoError(t, r.Err)
		assert.InDelta(t, 0.25, r.Pressure, 1e-6)
		r = putKv(t, e.c, info.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 0, RoutingBucketCount: 2})
		require.NoError(t, r.Err)
		assert.Zero(t, r.Pressure, "no pressure on the other bucket")

		e.fc.SetPressure(info.TableID, fluss.NoPartition, 1, 0.9)
		e.fc.FailBucket(info.TableID, fluss.NoPartition, 1, 72)
		r = putKv(t, e.c, info.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 1, RoutingBucketCount: 2})
		require.ErrorIs(t, r.Err, fluss.ErrStorageBackpressure)
		assert.True(t, fluss.IsRetriable(r.Err))
		assert.InDelta(t, 0.9, r.Pressure, 1e-6, "the pressure comes with the error")
	})
	t.Run("0.9.1", func(t *testing.T) {
		t.Parallel()
		e := newFakeEnv(t, fluss.Config{})
		info := e.table(t, "kv", fluss.TableDescriptor{Schema: kvSchema, BucketCount: 1})
		e.fc.SetPressure(info.TableID, fluss.NoPartition, 0, 0.5)
		r := putKv(t, e.c, info.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 0})
		require.NoError(t, r.Err)
		assert.Zero(t, r.Pressure, "PUT_KV v1 answers carry no pressure")
		e.fc.FailBucket(info.TableID, fluss.NoPartition, 0, 72)
		r = putKv(t, e.c, info.TableID, fluss.NoPartition, fluss.BucketRecords{Bucket: 0})
		require.ErrorIs(t, r.Err, fluss.ErrKvStorage)
	})
}

// TestMetadataFromTabletServerWhenCoordinatorDown: both roles serve
// GET_METADATA and GET_TABLE_INFO, so a bootstrap list naming tablet servers
// keeps metadata working while the coordinator is down, for a new client
// and for one that knew the coordinator.
func TestMetadataFromTabletServerWhenCoordinatorDown(t *testing.T) {
	t.Parallel()
	fc, err := flussfake.NewCluster(flussfake.NumTabletServers(2), flussfake.WithVersion10())
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	path := fluss.TablePath{Database: "db", Table: "t"}
	_, err = fc.AddTable(path, fluss.TableDescriptor{Schema: logSchema, BucketCount: 2, Properties: indexed})
	require.NoError(t, err)
	newClient := func(bootstrap []string) *fluss.Client {
		c, err := fluss.NewClient(fluss.Config{Bootstrap: bootstrap, RequestTimeout: 5 * time.Second, DialTimeout: time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	old := newClient([]string{fc.Bootstrap()})
	info, err := old.TableInfo(t.Context(), path)
	require.NoError(t, err)
	_, err = old.BucketLeader(t.Context(), info.TableID, fluss.NoPartition, 0)
	require.NoError(t, err)
	servers, err := old.TabletServers(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "rack-0", servers[0].Rack, "1.0 metadata: rack")
	epoch, ok := old.LeaderEpoch(info.TableID, fluss.NoPartition, 0)
	assert.True(t, ok, "1.0 metadata: leader epoch")
	assert.Equal(t, int32(0), epoch)

	fc.StopServer(flussfake.CoordinatorID)

	// the client that knew the coordinator falls back to tablet servers
	old.InvalidateTableMetadata(info.TableID)
	n, err := old.BucketLeader(t.Context(), info.TableID, fluss.NoPartition, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(1), n.ID)
	start := time.Now()
	require.NoError(t, old.RefreshMetadata(t.Context(), path))
	assert.Less(t, time.Since(start), time.Second, "the dead coordinator is not waited for")

	// a new client bootstrapped with the coordinator and a tablet server
	addrs := fc.ListenAddrs()
	c := newClient([]string{addrs[0], addrs[2]})
	info2, err := c.TableInfo(t.Context(), path)
	require.NoError(t, err)
	assert.Equal(t, info.TableID, info2.TableID)
	n, err = c.BucketLeader(t.Context(), info.TableID, fluss.NoPartition, 0)
	require.NoError(t, err)
	assert.Equal(t, int32(0), n.ID)
	cnt, err := c.BucketCount(t.Context(), info.TableID, fluss.NoPartition)
	require.NoError(t, err)
	assert.Equal(t, int32(2), cnt)
}

// TestInitWriterCachesItsServer: InitWriter asks no metadata once it knows a
// tablet server, survives a coordinator outage and a tablet server outage
// without a metadata request, and returns promptly with a retriable error
// when no tablet server can be reached.
func TestInitWriterCachesItsServer(t *testing.T) {
	t.Parallel()
	var dialMu sync.Mutex
	dials := map[string]int{}
	var d net.Dialer
	dialer := fluss.WithDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialMu.Lock()
		dials[addr]++
		dialMu.Unlock()
		return d.DialContext(ctx, network, addr)
	})
	dialsTo := func(addr string) int {
		dialMu.Lock()
		defer dialMu.Unlock()
		return dials[addr]
	}
	e := newFakeEnvWith(t, fluss.Config{DialTimeout: 500 * time.Millisecond, RequestTimeout: time.Second},
		[]fluss.Option{dialer}, flussfake.NumTabletServers(2))
	ctx := t.Context()
	path := fluss.TablePath{Database: "db", Table: "w"}
	_, err := e.fc.AddTable(path, fluss.TableDescriptor{Schema: logSchema, BucketCount: 1, Properties: indexed})
	require.NoError(t, err)

	var mu sync.Mutex
	var seen []int32 // the tablet server of each InitWriter
	e.fc.Control(func(req *flussfake.Request) (flussfake.Response, bool) {
		if req.APIKey == flussfake.InitWriter {
			mu.Lock()
			seen = append(seen, req.Server)
			mu.Unlock()
		}
		return flussfake.Response{}, false
	})
	servers := func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	ids := map[int64]bool{}
	for range 5 {
		id, err := e.c.InitWriter(ctx, path)
		require.NoError(t, err)
		ids[id] = true
	}
	assert.Len(t, ids, 5, "a new id per call")
	assert.Equal(t, int32(1), e.metadata.Load(), "one cluster metadata request, for the first call only")
	require.Len(t, servers(), 5)
	first := servers()[0]
	for _, s := range servers() {
		assert.Equal(t, first, s, "the same tablet server every time")
	}

	e.fc.StopServer(flussfake.CoordinatorID)
	_, err = e.c.InitWriter(ctx, path)
	require.NoError(t, err, "a coordinator outage does not matter")

	e.fc.StopServer(first)
	stopped := e.fc.ListenAddrs()[1+first]
	before := dialsTo(stopped)
	for range 3 {
		_, err = e.c.InitWriter(ctx, path)
		require.NoError(t, err, "moves to the other tablet server")
	}
	got := servers()
	assert.Equal(t, []int32{1 - first, 1 - first, 1 - first}, got[len(got)-3:])
	assert.LessOrEqual(t, dialsTo(stopped)-before, 1, "the server that answers is remembered: the stopped one is not dialled on every call")
	assert.Equal(t, int32(1), e.metadata.Load(), "still no metadata request")

	e.fc.StopServer(1 - first)
	start := time.Now()
	_, err = e.c.InitWriter(ctx, path)
	require.Error(t, err)
	assert.True(t, fluss.IsRetriable(err), "%v", err)
	assert.Less(t, time.Since(start), 3*time.Second, "bounded by dial and request timeouts")
}

// TestInitWriterFromBootstrapTabletServer: with the coordinator down from
// the start, a bootstrap address that is a tablet server serves InitWriter.
func TestInitWriterFromBootstrapTabletServer(t *testing.T) {
	t.Parallel()
	fc, err := flussfake.NewCluster()
	require.NoError(t, err)
	t.Cleanup(fc.Close)
	addrs := fc.ListenAddrs()
	fc.StopServer(flussfake.CoordinatorID)
	c, err := fluss.NewClient(fluss.Config{Bootstrap: addrs, DialTimeout: time.Second, RequestTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.InitWriter(t.Context())
	require.NoError(t, err)
}
