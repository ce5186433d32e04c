package produce

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/writertest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// fakePartitions resolves partition names from a map; others fail.
type fakePartitions map[string]int64

func (f fakePartitions) EnsurePartition(_ context.Context, _ fluss.TablePath, spec fluss.PartitionSpec) (int64, error) {
	if id, ok := f[spec[0].Value]; ok {
		return id, nil
	}
	return 0, errors.New("create partition refused")
}

// BucketCount reports no count of its own: partitions have the table's.
func (fakePartitions) BucketCount(context.Context, int64, int64) (int32, error) { return 0, nil }

// exampleSink binds configs/gateway.yaml's routes to exampleTables and
// returns a bridge over a fresh writer that is not running (its batches
// stay queued) and whose transport fails every write with PARTITION_NOT_EXISTS.
func exampleSink(t *testing.T, parts PartitionSource) (*Path, *writertest.Writer) {
	t.Helper()
	cfg := writertest.Defaults()
	cfg.Linger = time.Hour
	return exampleSinkWith(t, parts, cfg)
}

func exampleSinkWith(t *testing.T, parts PartitionSource, wcfg writertest.Config) (*Path, *writertest.Writer) {
	t.Helper()
	cfg, err := configs.Load(filepath.Join("..", "configs", "gateway.yaml"))
	require.NoError(t, err)
	rs, err := mapping.NewRoutes(cfg.Routes)
	require.NoError(t, err)
	infos := exampleTables()
	id := int64(100)
	for _, info := range infos {
		info.TableID, id = id, id+1
	}
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	acc, err := writertest.New(wcfg, failingTransport{code: 36})
	require.NoError(t, err)
	pc := NewPartitionCache(parts)
	st, err := NewTableRegistry(acc.Accumulator, pc).Bind(bound, infos, nil)
	require.NoError(t, err)
	s := New(acc.Accumulator, pc, nil, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	s.state.Store(st)
	return s, acc
}

// TestProduceSpanningPartitionsIsAtomic: a Kafka batch whose records fall
// into two Fluss partitions, the second of which cannot be resolved, fails
// without writing any of its records (a retry would duplicate them).
func TestProduceSpanningPartitionsIsAtomic(t *testing.T) {
	t.Parallel()
	s, acc := exampleSink(t, fakePartitions{"20240102": 1})
	day := int64(24 * 3600 * 1000)
	req := &kafkaproto.PartitionProduce{
		Topic: "clicks", Partition: 0, Acks: -1, ProducerID: -1, BaseSequence: -1,
		Records: []kafkaproto.Record{
			{Index: 0, Timestamp: 1_704_164_645_000, Value: []byte(`{"user_id": 1}`)},
			{Index: 1, OffsetDelta: 1, Timestamp: 1_704_164_645_000 + day, Value: []byte(`{"user_id": 2}`)},
		},
	}
	err := produceErr(t, s, req)
	require.Error(t, err)
	assert.Equal(t, 0, acc.Incomplete(), "no record of the failed batch is queued")
	assert.Zero(t, acc.BufferedBytes())
}

// TestStopEndsAppendsPastTheRequestDeadline: the rows after a batch's first
// no longer follow the request's deadline (a half-written batch is worse
// than a late answer), but a shutdown that runs out of time ends them.
func TestStopEndsAppendsPastTheRequestDeadline(t *testing.T) {
	t.Parallel()
	wcfg := writertest.Defaults()
	wcfg.Linger, wcfg.BatchSize, wcfg.BufferMemory, wcfg.BufferWaitTimeout = time.Hour, 4096, 8192, time.Hour
	wcfg.MaxTableShare = 1 // the whole buffer, one table
	s, acc := exampleSinkWith(t, fakePartitions{}, wcfg)
	route, ok := s.state.Load().Routes.Resolve("customers")
	require.True(t, ok)
	bucketOf := func(key string) int32 {
		var out mapping.Converted
		require.NoError(t, route.Converter().Convert(&mapping.Record{Topic: "customers", Key: []byte(key), Value: []byte(`{"name": "x"}`)}, &out))
		return out.Bucket
	}
	// Keys of three different buckets.
	keys := map[int32]string{}
	for i := 0; len(keys) < 3; i++ {
		k := "cust-" + strconv.Itoa(i)
		if b := bucketOf(k); keys[b] == "" {
			keys[b] = k
		}
	}
	var ks []string
	for _, k := range keys {
		ks = append(ks, k)
	}
	rec := func(i int, key string) kafkaproto.Record {
		return kafkaproto.Record{Index: int32(i), OffsetDelta: int32(i), Key: []byte(key), Value: []byte(`{"name": "x"}`)}
	}
	produce := func(ctx context.Context, recs ...kafkaproto.Record) error {
		_, err := s.Produce(ctx, &kafkaproto.PartitionProduce{Topic: "customers", Acks: -1, ProducerID: -1, BaseSequence: -1, Records: recs})
		return err
	}
	// Two open batches use the whole buffer.
	require.NoError(t, produce(t.Context(), rec(0, ks[0])))
	require.NoError(t, produce(t.Context(), rec(0, ks[1])))

	// The first row joins an open batch; the second needs memory there is not.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- produce(ctx, rec(0, ks[0]), rec(1, ks[2])) }()
	select {
	case err := <-done:
		t.Fatalf("produce returned before the stop: %v", err)
	case <-time.After(300 * time.Millisecond): // well past the request deadline
	}
	s.StopAppends()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.ErrorIs(t, err, kafkaproto.ErrNotLeaderOrFollower, "retriable: the producer tries another instance")
	case <-time.After(time.Minute):
		t.Fatal("produce still blocked after stop")
	}
	writertest.Shut(t, acc)
}

// countingPartitions counts partition resolutions.
type countingPartitions struct {
	fakePartitions
	calls atomic.Int32 // resolutions run on the bridge's queue goroutine
}

func (c *countingPartitions) EnsurePartition(ctx context.Context, p fluss.TablePath, spec fluss.PartitionSpec) (int64, error) {
	c.calls.Add(1)
	return c.fakePartitions.EnsurePartition(ctx, p, spec)
}

// TestGonePartitionIsResolvedAgain: when Fluss fails a write because the
// partition no longer exists (retention dropped it, or it was re-created),
// the cached id is forgotten and the producer's retry resolves it anew
// instead of failing the same way until the delivery timeout.
func TestGonePartitionIsResolvedAgain(t *testing.T) {
	t.Parallel()
	parts := &countingPartitions{fakePartitions: fakePartitions{"20240102": 1}}
	wcfg := writertest.Defaults()
	wcfg.Linger = 0 // sent as soon as Run runs
	s, acc := exampleSinkWith(t, parts, wcfg)
	req := &kafkaproto.PartitionProduce{
		Topic: "clicks", Partition: 0, Acks: -1, ProducerID: -1, BaseSequence: -1,
		Records: []kafkaproto.Record{{Index: 0, Timestamp: 1_704_164_645_000, Value: []byte(`{"user_id": 1}`)}},
	}
	pw, err := s.Produce(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, s.Drain(t.Context()))
	require.EqualValues(t, 1, parts.calls.Load())

	// Fluss answers PARTITION_NOT_EXISTS for the batch.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = acc.Run(ctx) }()
	select {
	case <-pw.Done():
	case <-time.After(time.Minute):
		t.Fatal("the write did not complete")
	}
	assert.ErrorIs(t, pw.Result().Err, kafkaproto.ErrUnknownTopicOrPartition)

	_, err = s.Produce(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, s.Drain(t.Context()))
	assert.EqualValues(t, 2, parts.calls.Load(), "the retry resolved the partition again")
	writertest.Shut(t, acc)
}

// produceErr hands req to the bridge and returns its error: the one
// Produce returns, or else the write's once it completes (a batch that
// waited for partition resolution fails through its write).
func produceErr(t *testing.T, s *Path, req *kafkaproto.PartitionProduce) error {
	t.Helper()
	pw, err := s.Produce(t.Context(), req)
	if err != nil {
		return err
	}
	select {
	case <-pw.Done():
		return pw.Result().Err
	case <-time.After(time.Minute):
		t.Fatal("write not complete after a minute")
		return nil
	}
}

// blockingPartitions resolves partitions only once released.
type blockingPartitions struct {
	fakePartitions
	asked   chan string
	release chan struct{}
}

func (b *blockingPartitions) EnsurePartition(ctx context.Context, p fluss.TablePath, spec fluss.PartitionSpec) (int64, error) {
	b.asked <- spec[0].Value
	select {
	case <-b.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return b.fakePartitions.EnsurePartition(ctx, p, spec)
}

// TestPartitionResolutionDoesNotBlockTheReader: a batch whose Fluss
// partition is not known yet waits off the connection's read goroutine:
// Produce returns while the lookup is still blocked, a later batch of the
// same Kafka partition queues behind it (order), and other topics are
// appended at once.
func TestPartitionResolutionDoesNotBlockTheReader(t *testing.T) {
	t.Parallel()
	parts := &blockingPartitions{
		fakePartitions: fakePartitions{"20240102": 1, "20240103": 2},
		asked:          make(chan string, 4),
		release:        make(chan struct{}),
	}
	s, acc := exampleSink(t, parts)
	defer writertest.Shut(t, acc)
	const day = int64(24 * 3600 * 1000)
	click := func(ts int64) *kafkaproto.PartitionProduce {
		return &kafkaproto.PartitionProduce{
			Topic: "clicks", Partition: 0, Acks: -1, ProducerID: -1, BaseSequence: -1,
			Records: []kafkaproto.Record{{Index: 0, Timestamp: ts, Value: []byte(`{"user_id": 1}`)}},
		}
	}
	type produced struct {
		w   kafkaproto.PartitionWrite
		err error
	}
	ch := make(chan produced, 1)
	go func() {
		w, err := s.Produce(t.Context(), click(1_704_164_645_000))
		ch <- produced{w, err}
	}()
	var first kafkaproto.PartitionWrite
	select {
	case p := <-ch:
		require.NoError(t, p.err)
		first = p.w
	case <-time.After(time.Minute):
		close(parts.release)
		t.Fatal("Produce blocked on the partition lookup")
	}
	select {
	case name := <-parts.asked:
		assert.Equal(t, "20240102", name)
	case <-time.After(time.Minute):
		t.Fatal("the partition was never looked up")
	}
	// A later batch of the same Kafka partition waits behind the first,
	// even though nothing of it is known to be slow.
	second, err := s.Produce(t.Context(), click(1_704_164_645_000+day))
	require.NoError(t, err)
	// Another topic is not held up.
	orders, err := s.Produce(t.Context(), &kafkaproto.PartitionProduce{
		Topic: "orders", Partition: 0, Acks: -1, ProducerID: -1, BaseSequence: -1,
		Records: []kafkaproto.Record{{Index: 0, Value: []byte(`{"order_id": 7}`)}},
	})
	require.NoError(t, err)
	assert.Equal(t, 1, acc.Incomplete(), "only the orders row is appended while the lookup blocks")
	assert.True(t, s.pending.busy(mergedQueue(TopicPartition{"clicks", 0})))
	select {
	case <-first.Done():
		t.Fatal("first batch completed before its partition was resolved")
	case <-second.Done():
		t.Fatal("second batch completed before the first")
	default:
	}
	close(parts.release)
	select {
	case name := <-parts.asked:
		assert.Equal(t, "20240103", name, "the second batch resolved its own partition after the first")
	case <-time.After(time.Minute):
		t.Fatal("the second batch's partition was never looked up")
	}
	require.NoError(t, s.Drain(t.Context()))
	assert.Equal(t, 3, acc.Incomplete(), "both click rows are appended once resolved")
	assert.False(t, s.pending.busy(mergedQueue(TopicPartition{"clicks", 0})))
	_ = orders
}

// failingTransport answers every write with one Fluss error per bucket.
type failingTransport struct{ code int32 }

func (f failingTransport) results(pid int64, buckets []int32) *fluss.PendingWrite {
	res := make([]fluss.BucketResult, len(buckets))
	for i, b := range buckets {
		res[i] = fluss.BucketResult{PartitionID: pid, Bucket: b, Err: fluss.ErrorForCode(f.code, "from the fake"), Offset: -1}
	}
	return fluss.NewPendingWrite(func(context.Context) ([]fluss.BucketResult, error) { return res, nil })
}

func (f failingTransport) SendProduceLog(_ context.Context, _ int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error) {
	var buckets []int32
	var pid int64
	for _, b := range req.Buckets {
		buckets, pid = append(buckets, b.Bucket), b.PartitionID
	}
	return f.results(pid, buckets), nil
}

func (f failingTransport) SendPutKv(_ context.Context, _ int32, req *fluss.PutKvRequest) (*fluss.PendingWrite, error) {
	var buckets []int32
	var pid int64
	for _, b := range req.Buckets {
		buckets, pid = append(buckets, b.Bucket), b.PartitionID
	}
	return f.results(pid, buckets), nil
}

func (failingTransport) BucketLeader(context.Context, int64, int64, int32) (fluss.ServerNode, error) {
	return fluss.ServerNode{ID: 1, Host: "127.0.0.1", Port: 1}, nil
}

func (failingTransport) InvalidateTableMetadata(int64)            {}
func (failingTransport) InvalidatePartitionMetadata(int64, int64) {}

func (failingTransport) InitWriter(context.Context, ...fluss.TablePath) (int64, error) { return 1, nil }

// countedPartitions resolves partitions from a map and reports their own
// bucket counts (Fluss 1.0), which a test may change.
type countedPartitions struct {
	fakePartitions
	mu     sync.Mutex
	counts map[int64]int32
	asked  int
}

func (c *countedPartitions) BucketCount(_ context.Context, _, partitionID int64) (int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	return c.counts[partitionID], nil
}

func (c *countedPartitions) set(partitionID int64, n int32) {
	c.mu.Lock()
	c.counts[partitionID] = n
	c.mu.Unlock()
}

// routingTransport records the (bucket, routing count) of every bucket
// written and answers INVALID_BUCKET_ROUTING while reject is set.
type routingTransport struct {
	failingTransport
	mu     sync.Mutex
	seen   [][2]int32
	reject bool
}

func (r *routingTransport) SendProduceLog(_ context.Context, _ int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := make([]fluss.BucketResult, len(req.Buckets))
	for i, b := range req.Buckets {
		r.seen = append(r.seen, [2]int32{b.Bucket, b.RoutingBucketCount})
		res[i] = fluss.BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, Offset: 0}
		if r.reject {
			res[i].Err, res[i].Offset = fluss.ErrorForCode(74, "routing bucket count mismatch"), -1
		}
	}
	return fluss.NewPendingWrite(func(context.Context) ([]fluss.BucketResult, error) { return res, nil }), nil
}

func (r *routingTransport) written() [][2]int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// TestPartitionBucketCountsAndInvalidRouting: rows of a Fluss partition are
// bucketed with that partition's own bucket count (Kafka partition mod the
// count for a log table without bucket key) and sent with it as the routing
// count; the topic keeps the table's partition count. When Fluss answers
// INVALID_BUCKET_ROUTING, the producer gets a retriable error, and its
// retry is bucketed with the count read anew.
func TestPartitionBucketCountsAndInvalidRouting(t *testing.T) {
	t.Parallel()
	parts := &countedPartitions{fakePartitions: fakePartitions{"20240102": 1}, counts: map[int64]int32{1: 2}}
	wcfg := writertest.Defaults()
	wcfg.Linger = 0
	cfg, err := configs.Load(filepath.Join("..", "configs", "gateway.yaml"))
	require.NoError(t, err)
	rs, err := mapping.NewRoutes(cfg.Routes)
	require.NoError(t, err)
	infos := exampleTables()
	id := int64(100)
	for _, info := range infos {
		info.TableID, id = id, id+1
	}
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	tr := &routingTransport{}
	w, err := writertest.New(wcfg, tr)
	require.NoError(t, err)
	pc := NewPartitionCache(parts)
	st, err := NewTableRegistry(w.Accumulator, pc).Bind(bound, infos, nil)
	require.NoError(t, err)
	s := New(w.Accumulator, pc, nil, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	s.state.Store(st)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = w.Run(ctx) }()

	n, ok := s.Topic("clicks")
	require.True(t, ok)
	assert.EqualValues(t, 3, n, "the topic has the table's bucket count")
	click := &kafkaproto.PartitionProduce{
		Topic: "clicks", Partition: 2, Acks: -1, ProducerID: -1, BaseSequence: -1,
		Records: []kafkaproto.Record{{Index: 0, Timestamp: 1_704_164_645_000, Value: []byte(`{"user_id": 1}`)}},
	}
	produce := func() kafkaproto.PartitionResult {
		pw, err := s.Produce(t.Context(), click)
		require.NoError(t, err)
		select {
		case <-pw.Done():
		case <-time.After(time.Minute):
			t.Fatal("the write did not complete")
		}
		return pw.Result()
	}
	require.NoError(t, produce().Err)
	assert.Equal(t, [][2]int32{{0, 2}}, tr.written(), "Kafka partition 2 mod the partition's 2 buckets, routing count 2")

	// Fluss says the count is wrong; the partition really has 5 buckets.
	tr.mu.Lock()
	tr.reject = true
	tr.mu.Unlock()
	parts.set(1, 5)
	res := produce()
	require.Error(t, res.Err)
	assert.ErrorIs(t, res.Err, kafkaproto.ErrNotLeaderOrFollower, "retriable for the producer")

	tr.mu.Lock()
	tr.reject = false
	tr.mu.Unlock()
	require.NoError(t, produce().Err, "the producer's retry")
	got := tr.written()
	assert.Equal(t, [2]int32{2, 5}, got[len(got)-1], "re-bucketed for 5 buckets, routing count 5")
	n, _ = s.Topic("clicks")
	assert.EqualValues(t, 3, n, "the topic's partition count did not change")
	writertest.Shut(t, w)
}

// TestLeaderlessTableRefusedAtOnce: a topic whose table the sender reports
// leaderless is shown so in Metadata and its batches are refused with
// LEADER_NOT_AVAILABLE (retriable) before anything is queued; other
// topics are not affected.
func TestLeaderlessTableRefusedAtOnce(t *testing.T) {
	t.Parallel()
	s, acc := exampleSink(t, fakePartitions{})
	st := s.state.Load()
	route, ok := st.Routes.Resolve("customers")
	require.True(t, ok)
	customers := st.Tables[route.Table()].ID()
	s.Leaderless = func(id int64) bool { return id == customers }

	assert.True(t, s.TopicLeaderless("customers"))
	assert.False(t, s.TopicLeaderless("orders"))
	assert.False(t, s.TopicLeaderless("no-such-topic"))
	_, err := s.Produce(t.Context(), &kafkaproto.PartitionProduce{Topic: "customers", Acks: -1, ProducerID: -1, BaseSequence: -1,
		Records: []kafkaproto.Record{{Key: []byte("k"), Value: []byte(`{"name": "x"}`)}}})
	require.ErrorIs(t, err, kafkaproto.ErrLeaderNotAvailable)
	assert.Zero(t, acc.Incomplete(), "nothing queued")
	var ke *kafkaproto.Error
	require.ErrorAs(t, err, &ke)
	assert.True(t, ke.Retriable)
}
