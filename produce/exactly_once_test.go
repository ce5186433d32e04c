package produce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/exactlyonce"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/metrictest"
	"github.com/fluss-kafka/gateway/internal/writertest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/producerstate"
)

// dedupFluss is one in-memory Fluss cluster shared by several gateway
// instances: per (table, bucket) a log of decoded rows, and Fluss's
// idempotent-writer rules (a writer unknown to the bucket starts at 0, each
// batch's sequence is the last + 1, a copy of one of the last five batches
// is answered with its original offset and not appended, anything else is
// OUT_OF_ORDER_SEQUENCE), applied to an entry of several batches as a
// whole, as Fluss does (docs/exactly-once.md §2, facts 6 and 12).
type dedupFluss struct {
	schemas map[int64]*fluss.Schema // per table id

	mu      sync.Mutex // guards the fields below
	logs    map[[2]int64][]string
	writers map[[3]int64]*dedupWriter
	nextID  int64
	// lostAnswers makes each bucket's next that many log writes apply,
	// then fail with a connection error (the answer is lost: an unknown
	// outcome); a request holding such a write loses its whole answer.
	// Counted per bucket, so that it does not matter whether a Kafka
	// batch's writes to two buckets share a request.
	lostAnswers int
	lost        map[[2]int64]int // writes whose answer was lost, by (table, bucket)
	// entries counts the records entries appended, sharedEntries those
	// that held several batches.
	entries, sharedEntries int
	// refuse, when set, fails every entry holding a batch of that
	// bucket and sequence with the error code it returns (0: none),
	// before anything of the entry is written.
	refuse func(bucket, seq int32) int32
}

type dedupWriter struct {
	last   int32
	recent [][2]int64 // (seq, base offset)
}

func newDedupFluss() *dedupFluss {
	return &dedupFluss{schemas: map[int64]*fluss.Schema{eoTableID: &eoSchema, eoDLQTableID: &eoDLQSchema},
		logs: map[[2]int64][]string{}, writers: map[[3]int64]*dedupWriter{}, lost: map[[2]int64]int{}, nextID: 1000}
}

func (f *dedupFluss) SendProduceLog(_ context.Context, _ int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := make([]fluss.BucketResult, len(req.Buckets))
	for i, b := range req.Buckets {
		res[i] = fluss.BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket}
		res[i].Offset, res[i].Err = f.applyLocked(req.TableID, b)
	}
	var callErr error
	for _, b := range req.Buckets {
		if lk := [2]int64{req.TableID, int64(b.Bucket)}; f.lost[lk] < f.lostAnswers {
			f.lost[lk]++
			callErr = fluss.ErrConnectionClosed
		}
	}
	return fluss.NewPendingWrite(func(context.Context) ([]fluss.BucketResult, error) { return res, callErr }), nil
}

// applyLocked appends one bucket's records as Fluss does: each batch's
// writer sequence is checked, one duplicate skips the whole entry
// (answered with the duplicate's offset) and one gap fails it, before
// anything is appended.
func (f *dedupFluss) applyLocked(tableID int64, b fluss.BucketRecords) (int64, error) {
	lk := [2]int64{tableID, int64(b.Bucket)}
	batches, err := fluss.LogBatches(b.Records)
	if err != nil {
		return -1, fluss.ErrorForCode(2, err.Error())
	}
	base := int64(len(f.logs[lk]))
	next := map[int64]int32{} // per writer, its last sequence as the entry goes
	type stamp struct {
		wk  [3]int64
		seq int32
		off int64
	}
	var stamps []stamp
	off := base
	for _, batch := range batches {
		wid, seq, _ := fluss.LogBatchWriter(batch)
		if wid >= 0 && f.refuse != nil {
			if code := f.refuse(b.Bucket, seq); code != 0 {
				return -1, fluss.ErrorForCode(code, "refused by the test")
			}
		}
		recs, err := fluss.DecodeLogBatchesFormat(batch, f.schemas[tableID], fluss.LogFormatIndexed)
		if err != nil {
			return -1, fluss.ErrorForCode(2, err.Error())
		}
		if wid >= 0 {
			wk := [3]int64{tableID, int64(b.Bucket), wid}
			w := f.writers[wk]
			last, seen := next[wid]
			if !seen {
				last = -1
				if w != nil {
					last = w.last
				}
			}
			if w != nil {
				for _, r := range w.recent {
					if int32(r[0]) == seq {
						return r[1], nil
					}
				}
			}
			if seq != last+1 {
				return -1, fluss.ErrorForCode(31, fmt.Sprintf("expected %d, got %d", last+1, seq))
			}
			next[wid] = seq
			stamps = append(stamps, stamp{wk, seq, off})
		}
		off += int64(len(recs))
	}
	for _, st := range stamps {
		w := f.writers[st.wk]
		if w == nil {
			w = &dedupWriter{last: -1}
			f.writers[st.wk] = w
		}
		w.last = st.seq
		w.recent = append(w.recent, [2]int64{int64(st.seq), st.off})
		if len(w.recent) > 5 {
			w.recent = w.recent[1:]
		}
	}
	recs, err := fluss.DecodeLogBatchesFormat(b.Records, f.schemas[tableID], fluss.LogFormatIndexed)
	if err != nil {
		return -1, fluss.ErrorForCode(2, err.Error())
	}
	for _, r := range recs {
		row := fmt.Sprintf("%s/%d", r.Row[0].B, r.Row[1].I)
		if tableID == eoDLQTableID {
			row = string(r.Row[1].B) // the value
		}
		f.logs[lk] = append(f.logs[lk], row)
	}
	f.entries++
	if len(batches) > 1 {
		f.sharedEntries++
	}
	return base, nil
}

func (f *dedupFluss) SendPutKv(context.Context, int32, *fluss.PutKvRequest) (*fluss.PendingWrite, error) {
	return nil, errors.New("no kv tables here")
}

func (f *dedupFluss) BucketLeader(context.Context, int64, int64, int32) (fluss.ServerNode, error) {
	return fluss.ServerNode{ID: 1, Host: "127.0.0.1", Port: 1}, nil
}
func (f *dedupFluss) InvalidateTableMetadata(int64)            {}
func (f *dedupFluss) InvalidatePartitionMetadata(int64, int64) {}

func (f *dedupFluss) InitWriter(context.Context, ...fluss.TablePath) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return f.nextID, nil
}

// rows counts each row of the table read back from the fake's logs.
// expireWriters forgets every writer's state, as a tablet server does for
// a writer idle past server.writer-id.expiration-time.
func (f *dedupFluss) expireWriters() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.writers)
}

func (f *dedupFluss) rows(tableID int64) map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, l := range f.logs {
		if k[0] == tableID {
			for _, r := range l {
				out[r]++
			}
		}
	}
	return out
}

// memStore is the producer-state table in memory, with the versioned
// merge engine's rule (a lower version is ignored). dead fails every
// commit of the instance using it: a crashed instance never commits.
type memStore struct {
	mu      sync.Mutex
	rows    map[producerstate.Key]producerstate.State
	commits int
}

func (m *memStore) Open(context.Context) error { return nil }

func (m *memStore) Lookup(_ context.Context, k producerstate.Key) (producerstate.State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.rows[k]
	if !ok {
		return producerstate.State{}, false, nil
	}
	return p.Clone(), true, nil
}

func (m *memStore) Commit(_ context.Context, k producerstate.Key, p *producerstate.State) (producerstate.Ack, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	if old, ok := m.rows[k]; !ok || p.Version >= old.Version {
		m.rows[k] = p.Clone()
	}
	return doneAck{}, nil
}

type doneAck struct{ err error }

func (d doneAck) Wait(context.Context) (int64, error) { return 0, d.err }

// crashable is an instance's view of the store: once crashed, its commits
// never reach the table and never complete (until the test ends), while
// its data writes go on: the instance died between writing and committing.
type crashable struct {
	*memStore
	mu      sync.Mutex
	crashed bool
	hung    chan struct{} // closed at the end of the test
}

func (c *crashable) crash() { c.mu.Lock(); c.crashed = true; c.mu.Unlock() }

func (c *crashable) Commit(ctx context.Context, k producerstate.Key, p *producerstate.State) (producerstate.Ack, error) {
	c.mu.Lock()
	crashed := c.crashed
	c.mu.Unlock()
	if crashed {
		return hungAck(c.hung), nil
	}
	return c.memStore.Commit(ctx, k, p)
}

type hungAck chan struct{}

func (h hungAck) Wait(context.Context) (int64, error) {
	<-h
	return -1, errors.New("instance crashed")
}

var (
	eoSchema = fluss.Schema{Columns: []fluss.Column{
		{Name: "producer", Type: fluss.String()},
		{Name: "seq", Type: fluss.BigInt()},
	}}
	eoDLQSchema = fluss.Schema{Columns: []fluss.Column{
		{Name: mapping.DLQColumnTopic, Type: fluss.String()},
		{Name: mapping.DLQColumnValue, Type: fluss.Bytes()},
		{Name: mapping.DLQColumnReason, Type: fluss.String()},
	}}
)

const (
	eoTableID    = 10
	eoDLQTableID = 11
)

// newEOInstance is one gateway instance's bridge with an exactly-once
// route "load" to a 2-bucket log table in f, keeping states in store.
func newEOInstance(t *testing.T, f *dedupFluss, store exactlyonce.Store, set func(*writertest.Config)) *Path {
	t.Helper()
	return newEOInstanceWith(t, f, store, set, prometheus.NewPedanticRegistry())
}

// newEOInstanceWith is newEOInstance registering its exactly-once metrics
// with reg.
func newEOInstanceWith(t *testing.T, f *dedupFluss, store exactlyonce.Store, set func(*writertest.Config), reg *prometheus.Registry) *Path {
	t.Helper()
	indexed := map[string]string{fluss.PropLogFormat: string(fluss.LogFormatIndexed)}
	info := &fluss.TableInfo{TableID: eoTableID, SchemaID: 1, Path: fluss.TablePath{Database: "db", Table: "load"},
		Descriptor: fluss.TableDescriptor{Schema: eoSchema, BucketCount: 2, BucketKeys: []string{"seq"}, Properties: indexed}}
	dlq := &fluss.TableInfo{TableID: eoDLQTableID, SchemaID: 1, Path: fluss.TablePath{Database: "db", Table: "dlq"},
		Descriptor: fluss.TableDescriptor{Schema: eoDLQSchema, BucketCount: 3, Properties: indexed}}
	infos := map[fluss.TablePath]*fluss.TableInfo{info.Path: info, dlq.Path: dlq}
	rs, err := mapping.NewRoutes([]mapping.RouteSpec{{Topic: "load", Table: info.Path, ExactlyOnce: mapping.ExactlyOnceOn,
		Errors: mapping.ErrorSpec{Mode: mapping.ErrorsDLQ, DLQTable: dlq.Path}}})
	require.NoError(t, err)
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	wcfg := writertest.Defaults()
	wcfg.Linger = 0
	wcfg.RetryBackoff, wcfg.RetryBackoffMax = time.Millisecond, time.Millisecond
	if set != nil {
		set(&wcfg)
	}
	w, err := writertest.New(wcfg, f)
	require.NoError(t, err)
	pc := NewPartitionCache(nil)
	st, err := NewTableRegistry(w.Accumulator, pc).Bind(bound, infos, nil)
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	b := New(w.Accumulator, pc, f, NewMetrics(prometheus.NewRegistry()), log)
	b.eo = exactlyonce.New(b.stopped, store, w.Accumulator, f, log)
	require.NoError(t, b.RegisterExactlyOnce(reg))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	b.state.Store(st)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = w.Run(ctx) }()
	t.Cleanup(func() {
		writertest.Shut(t, w)
		cancel()
	})
	require.True(t, b.OwnsIdempotence("load"))
	return b
}

// eoBatch k (from 0) of producer id 7, partition 0: records k*n..k*n+n-1.
func eoProduce(id int64, epoch int16, k, n int) *kafkaproto.PartitionProduce {
	p := &kafkaproto.PartitionProduce{Topic: "load", Partition: 0, Acks: -1, ProducerID: id, ProducerEpoch: epoch, BaseSequence: int32(k * n)}
	for i := range n {
		p.Records = append(p.Records, kafkaproto.Record{Index: int32(i), OffsetDelta: int32(i),
			Value: fmt.Appendf(nil, `{"producer": "p%d", "seq": %d}`, id, k*n+i)})
	}
	return p
}

// eoMixed is eoProduce with every third record not JSON: it goes to the
// dead-letter table, so the batch has targets in two tables.
func eoMixed(id int64, k, n int) *kafkaproto.PartitionProduce {
	p := eoProduce(id, 0, k, n)
	for i := range p.Records {
		if (k*n+i)%3 == 0 {
			p.Records[i].Value = fmt.Appendf(nil, "bad p%d/%d", id, k*n+i)
		}
	}
	return p
}

func await(t *testing.T, b *Path, req *kafkaproto.PartitionProduce) kafkaproto.PartitionResult {
	t.Helper()
	return produceAsync(t, b, req)()
}

// produceAsync hands req to b and returns the wait for its answer (a
// refusal is the answer at once), so that several batches are in flight.
func produceAsync(t *testing.T, b *Path, req *kafkaproto.PartitionProduce) func() kafkaproto.PartitionResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	pw, err := b.Produce(ctx, req)
	if err != nil {
		cancel()
		return func() kafkaproto.PartitionResult { return kafkaproto.PartitionResult{Err: err} }
	}
	return func() kafkaproto.PartitionResult {
		t.Helper()
		defer cancel()
		select {
		case <-pw.Done():
		case <-ctx.Done():
			t.Fatal("no answer")
		}
		return pw.Result()
	}
}

// The replay induction (docs/exactly-once.md 5.3): instance A commits
// three batches, then crashes after writing k more to Fluss without
// committing them; the producer re-sends those k and the rest to
// instance B, which has never seen the producer. Each batch's rows scatter
// over both buckets of the table (a bucket key) and the dead-letter table
// (every third record does not convert), so every batch has several
// targets. Every record is in Fluss exactly once.
func TestExactlyOnceReplayAfterCrash(t *testing.T) {
	t.Parallel()
	const n = 4
	for _, k := range []int{0, 1, 2, 5} {
		t.Run(fmt.Sprintf("written_uncommitted_%d", k), func(t *testing.T) {
			t.Parallel()
			f := newDedupFluss()
			ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
			storeA := &crashable{memStore: ms, hung: make(chan struct{})}
			t.Cleanup(func() { close(storeA.hung) })
			a := newEOInstance(t, f, storeA, nil)
			for i := range 3 {
				require.NoError(t, await(t, a, eoMixed(7, i, n)).Err)
			}
			storeA.crash()
			for i := 3; i < 3+k; i++ {
				_, err := a.Produce(t.Context(), eoMixed(7, i, n)) // never answered
				require.NoError(t, err)
			}
			require.NoError(t, a.Drain(t.Context()), "A admitted them")
			require.NoError(t, a.acc.Flush(t.Context()), "A's data writes reach Fluss")
			written := total(f.rows(eoTableID)) + total(f.rows(eoDLQTableID))
			require.Equal(t, (3+k)*n, written, "A wrote its batches")

			b := newEOInstance(t, f, ms, nil)
			for i := 3; i < 3+k+2; i++ {
				require.NoError(t, await(t, b, eoMixed(7, i, n)).Err, "batch %d", i)
			}
			rows, dead := f.rows(eoTableID), f.rows(eoDLQTableID)
			assert.Equal(t, (3+k+2)*n, total(rows)+total(dead))
			assert.NotEmpty(t, dead)
			for _, m := range []map[string]int{rows, dead} {
				for id, c := range m {
					assert.Equal(t, 1, c, "row %s", id)
				}
			}
		})
	}
}

// Admission follows Kafka's rules from the Fluss-held state: a committed
// batch re-sent is answered with its original offset and not written
// again, also by another instance; a gap is OUT_OF_ORDER_SEQUENCE_NUMBER;
// a batch older than the window DUPLICATE_SEQUENCE_NUMBER; an older epoch
// INVALID_PRODUCER_EPOCH; a new epoch starts again at sequence 0.
func TestExactlyOnceAdmission(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
	regA, regB := prometheus.NewPedanticRegistry(), prometheus.NewPedanticRegistry()
	a := newEOInstanceWith(t, f, ms, nil, regA)
	const n = 2
	var offsets []int64
	for i := range 7 {
		r := await(t, a, eoProduce(9, 1, i, n))
		require.NoError(t, r.Err)
		offsets = append(offsets, r.BaseOffset)
	}
	rows := total(f.rows(eoTableID))
	commits := ms.commits

	r := await(t, a, eoProduce(9, 1, 6, n))
	require.NoError(t, r.Err)
	assert.Equal(t, offsets[6], r.BaseOffset)
	b := newEOInstanceWith(t, f, ms, nil, regB)
	r = await(t, b, eoProduce(9, 1, 5, n))
	require.NoError(t, r.Err)
	assert.Equal(t, offsets[5], r.BaseOffset, "another instance answers from the committed window")
	assert.Equal(t, rows, total(f.rows(eoTableID)), "nothing written again")
	assert.Equal(t, commits, ms.commits, "nothing committed again")
	assert.Equal(t, 1.0, metrictest.Value(t, regA, "fluss_gateway_exactly_once_window_answers_total"))
	assert.Equal(t, 1.0, metrictest.Value(t, regA, "fluss_gateway_exactly_once_state_loads_total", "result", "missing"))
	assert.Equal(t, 1.0, metrictest.Value(t, regA, "fluss_gateway_exactly_once_writer_ids_total", "reason", "new"))
	assert.Equal(t, 1.0, metrictest.Value(t, regB, "fluss_gateway_exactly_once_window_answers_total"))
	assert.Equal(t, 1.0, metrictest.Value(t, regB, "fluss_gateway_exactly_once_state_loads_total", "result", "found"))
	assert.Equal(t, 0.0, metrictest.Value(t, regB, "fluss_gateway_exactly_once_writer_ids_total", "reason", "new"), "B carries on with A's writer id")

	assert.ErrorIs(t, await(t, b, eoProduce(9, 1, 9, n)).Err, kafkaproto.ErrOutOfOrderSequenceNumber)
	assert.ErrorIs(t, await(t, b, eoProduce(9, 1, 0, n)).Err, kafkaproto.ErrDuplicateSequenceNumber)
	assert.ErrorIs(t, await(t, b, eoProduce(9, 0, 7, n)).Err, kafkaproto.ErrInvalidProducerEpoch)
	assert.ErrorIs(t, await(t, b, eoProduce(9, 2, 3, n)).Err, kafkaproto.ErrOutOfOrderSequenceNumber, "a new epoch starts at 0")
	require.NoError(t, await(t, b, eoProduce(9, 2, 0, n)).Err)
	assert.Equal(t, rows+n, total(f.rows(eoTableID)))
}

func total(rows map[string]int) int {
	n := 0
	for _, c := range rows {
		n += c
	}
	return n
}

// A write whose outcome is unknown (applied, answer lost, retries spent)
// is answered with a retriable error; the producer's retry reloads the
// committed state and replays the batch, which Fluss recognises: written
// once.
func TestExactlyOnceUnknownOutcomeReplays(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
	reg := prometheus.NewPedanticRegistry()
	a := newEOInstanceWith(t, f, ms, func(c *writertest.Config) { c.Retries = 1 }, reg)
	require.NoError(t, await(t, a, eoProduce(3, 0, 0, 3)).Err)
	f.mu.Lock()
	f.lostAnswers = 2 // every bucket's first send and its one retry
	f.mu.Unlock()
	r := await(t, a, eoProduce(3, 0, 1, 3))
	require.Error(t, r.Err)
	var ke *kafkaproto.Error
	require.ErrorAs(t, r.Err, &ke)
	assert.True(t, ke.Retriable, "the producer retries: %v", r.Err)
	require.Len(t, f.rows(eoTableID), 6, "the batch was written once")
	f.mu.Lock()
	f.lostAnswers = 0
	f.mu.Unlock()

	require.NoError(t, await(t, a, eoProduce(3, 0, 1, 3)).Err, "the retry")
	assert.Equal(t, 1.0, metrictest.Value(t, reg, "fluss_gateway_exactly_once_recoveries_total"))
	require.NoError(t, await(t, a, eoProduce(3, 0, 2, 3)).Err)
	got := f.rows(eoTableID)
	assert.Len(t, got, 9)
	for id, c := range got {
		assert.Equal(t, 1, c, "row %s", id)
	}
}

// A re-sent batch is answered with its original offset whether its window
// entry came from the committed row or from this instance's own batches,
// across the window's turnover.
func TestExactlyOnceWindowAcrossLoad(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
	a := newEOInstance(t, f, ms, nil)
	const n = 3
	offsets := map[int]int64{}
	for i := range 3 {
		r := await(t, a, eoProduce(5, 0, i, n))
		require.NoError(t, r.Err)
		offsets[i] = r.BaseOffset
	}
	b := newEOInstance(t, f, ms, nil)
	for i := 3; i < 6; i++ {
		r := await(t, b, eoProduce(5, 0, i, n))
		require.NoError(t, r.Err)
		offsets[i] = r.BaseOffset
	}
	rows := total(f.rows(eoTableID))
	for _, i := range []int{1, 2, 3, 5} { // the window: batches 1 to 5
		r := await(t, b, eoProduce(5, 0, i, n))
		require.NoError(t, r.Err, "batch %d", i)
		assert.Equal(t, offsets[i], r.BaseOffset, "batch %d", i)
	}
	assert.ErrorIs(t, await(t, b, eoProduce(5, 0, 0, n)).Err, kafkaproto.ErrDuplicateSequenceNumber, "out of the window")
	assert.Equal(t, rows, total(f.rows(eoTableID)))
}

// A producer that gives up on a batch the crashed instance wrote but never
// committed (its delivery timeout) bumps its epoch and numbers its next
// batch from 0. That batch is new content: it must not get the abandoned
// batch's Fluss sequences, or Fluss would drop it as a copy and the
// producer would be told it was written.
func TestExactlyOnceEpochBumpAfterCrash(t *testing.T) {
	t.Parallel()
	const n = 4
	f := newDedupFluss()
	ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
	storeA := &crashable{memStore: ms, hung: make(chan struct{})}
	t.Cleanup(func() { close(storeA.hung) })
	a := newEOInstance(t, f, storeA, nil)
	for i := range 3 {
		require.NoError(t, await(t, a, eoProduce(8, 0, i, n)).Err)
	}
	storeA.crash()
	_, err := a.Produce(t.Context(), eoProduce(8, 0, 3, n)) // written, never committed nor answered
	require.NoError(t, err)
	require.NoError(t, a.Drain(t.Context()))
	require.NoError(t, a.acc.Flush(t.Context()))
	require.Equal(t, 4*n, total(f.rows(eoTableID)))

	reg := prometheus.NewPedanticRegistry()
	b := newEOInstanceWith(t, f, ms, nil, reg)
	bumped := eoProduce(8, 1, 10, n) // records 40..43, numbered from 0 in epoch 1
	bumped.BaseSequence = 0
	require.NoError(t, await(t, b, bumped).Err)
	got := f.rows(eoTableID)
	for i := 40; i < 44; i++ {
		assert.Equal(t, 1, got[fmt.Sprintf("p8/%d", i)], "record %d of the new epoch", i)
	}
	assert.Equal(t, 1.0, metrictest.Value(t, reg, "fluss_gateway_exactly_once_writer_ids_total", "reason", "epoch_bump"))
}

// TestExactlyOnceRouteMetrics: an exactly-once route records the route
// metrics the other routes do: records accepted and the produce latency of
// every batch it wrote (a re-sent batch answered from the window is not a
// write).
func TestExactlyOnceRouteMetrics(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	a := newEOInstance(t, f, &memStore{rows: map[producerstate.Key]producerstate.State{}}, nil)
	const n, batches = 3, 4
	for i := range batches {
		require.NoError(t, await(t, a, eoProduce(5, 0, i, n)).Err)
	}
	require.NoError(t, await(t, a, eoProduce(5, 0, batches-1, n)).Err, "a re-send")
	assert.Equal(t, float64(batches*n), testutil.ToFloat64(a.m.routeRecords.WithLabelValues("load")))
	var m dto.Metric
	require.NoError(t, a.m.routeLatency.WithLabelValues("load").(prometheus.Metric).Write(&m))
	assert.Equal(t, uint64(batches), m.GetHistogram().GetSampleCount(), "fluss_gateway_route_produce_duration_seconds")
	assert.Positive(t, m.GetHistogram().GetSampleSum())
}

// heldStore holds every commit until release is closed, counting them.
type heldStore struct {
	*memStore
	started chan struct{} // one send per commit begun
	release chan struct{}
}

func (h *heldStore) Commit(ctx context.Context, k producerstate.Key, p *producerstate.State) (producerstate.Ack, error) {
	h.started <- struct{}{}
	<-h.release
	return h.memStore.Commit(ctx, k, p)
}

// Batches of one producer-partition written while its commit is in flight
// are committed together by one state write, and each is answered with
// its own offset; the committed row's window holds all of them, so another
// instance answers a re-send of any of them without writing.
func TestExactlyOnceCommitsGrouped(t *testing.T) {
	t.Parallel()
	const n = 3
	f := newDedupFluss()
	ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
	held := &heldStore{memStore: ms, started: make(chan struct{}, 16), release: make(chan struct{})}
	a := newEOInstance(t, f, held, nil)
	var writes []kafkaproto.PartitionWrite
	for k := range 4 {
		pw, err := a.Produce(t.Context(), eoProduce(7, 0, k, n))
		require.NoError(t, err)
		writes = append(writes, pw)
	}
	<-held.started // the new writer id's commit, before any data
	held.release <- struct{}{}
	<-held.started // batch 0's commit, held
	// Batches 1-3 are written meanwhile: appended once their producer's
	// writer id is committed, each by its own goroutine.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, a.acc.Flush(t.Context()))
		assert.Equal(c, 4*n, total(f.rows(eoTableID)))
	}, time.Minute, time.Millisecond, "batches 1-3 are written meanwhile")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 3, a.eo.Queued(producerstate.Key{ProducerID: 7, Topic: "load", Partition: 0}), "batches 1-3 wait for the commit in flight")
	}, time.Minute, time.Millisecond)
	close(held.release)
	for k, pw := range writes {
		<-pw.Done()
		require.NoError(t, pw.Result().Err, "batch %d", k)
	}
	assert.Len(t, held.started, 1, "batches 1-3: one commit")
	ms.mu.Lock()
	commits, row := ms.commits, ms.rows[producerstate.Key{ProducerID: 7, Topic: "load", Partition: 0}]
	ms.mu.Unlock()
	assert.Equal(t, 3, commits, "writer id, batch 0, batches 1-3")
	require.Len(t, row.Window, 4)
	for k, w := range row.Window {
		assert.Equal(t, writes[k].Result().BaseOffset, w.Offset, "window entry %d", k)
		assert.GreaterOrEqual(t, w.Offset, int64(0))
	}

	b := newEOInstance(t, f, ms, nil)
	for k := range 4 {
		r := await(t, b, eoProduce(7, 0, k, n))
		require.NoError(t, r.Err)
		assert.Equal(t, writes[k].Result().BaseOffset, r.BaseOffset, "re-sent batch %d on another instance", k)
	}
	assert.Equal(t, 4*n, total(f.rows(eoTableID)), "nothing written twice")
}

// lookupHeldStore holds the lookups of one producer's state until release
// is closed.
type lookupHeldStore struct {
	*memStore
	producer int64
	started  chan struct{}
	release  chan struct{}
}

func (h *lookupHeldStore) Lookup(ctx context.Context, k producerstate.Key) (producerstate.State, bool, error) {
	if k.ProducerID == h.producer {
		h.started <- struct{}{}
		<-h.release
	}
	return h.memStore.Lookup(ctx, k)
}

// A producer whose state is being looked up holds only its own batches:
// another producer's batches of the same Kafka partition are written and
// answered meanwhile (with one queue per partition, thousands of producers
// each waited for every other's first lookup).
func TestExactlyOnceProducersDoNotQueueBehindEachOther(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	held := &lookupHeldStore{memStore: &memStore{rows: map[producerstate.Key]producerstate.State{}}, producer: 7,
		started: make(chan struct{}, 1), release: make(chan struct{})}
	a := newEOInstance(t, f, held, nil)
	slow, err := a.Produce(t.Context(), eoProduce(7, 0, 0, 2))
	require.NoError(t, err)
	<-held.started
	r := await(t, a, eoProduce(8, 0, 0, 2))
	require.NoError(t, r.Err, "producer 8 while producer 7's lookup is held")
	select {
	case <-slow.Done():
		t.Fatal("producer 7 answered before its lookup")
	default:
	}
	close(held.release)
	<-slow.Done()
	require.NoError(t, slow.Result().Err)
	assert.Equal(t, 4, total(f.rows(eoTableID)))
}

// A producer idle past Fluss's writer-id expiration carries on: Fluss
// refuses its next batch (it no longer knows the writer), which is
// answered with a retriable error, not OUT_OF_ORDER_SEQUENCE_NUMBER; the
// producer's retry is written under a new writer id, once.
func TestExactlyOnceWriterExpiredInFluss(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	ms := &memStore{rows: map[producerstate.Key]producerstate.State{}}
	reg := prometheus.NewPedanticRegistry()
	a := newEOInstanceWith(t, f, ms, nil, reg)
	const n = 3
	require.NoError(t, await(t, a, eoProduce(5, 0, 0, n)).Err)
	require.NoError(t, await(t, a, eoProduce(5, 0, 1, n)).Err)
	f.expireWriters()

	r := await(t, a, eoProduce(5, 0, 2, n))
	require.Error(t, r.Err)
	assert.ErrorIs(t, r.Err, kafkaproto.ErrNotEnoughReplicas, "retriable: %v", r.Err)
	assert.NotErrorIs(t, r.Err, kafkaproto.ErrOutOfOrderSequenceNumber)
	var ke *kafkaproto.Error
	require.ErrorAs(t, r.Err, &ke)
	assert.True(t, ke.Retriable)

	require.NoError(t, await(t, a, eoProduce(5, 0, 2, n)).Err, "the producer's retry")
	require.NoError(t, await(t, a, eoProduce(5, 0, 3, n)).Err)
	rows := f.rows(eoTableID)
	assert.Equal(t, 4*n, total(rows), "%v", rows)
	for k, c := range rows {
		assert.Equal(t, 1, c, "row %s", k)
	}
	assert.Equal(t, 1.0, metrictest.Value(t, reg, "fluss_gateway_exactly_once_writer_ids_total", "reason", "failed_write"))
}

// heldCommits holds the producer-state commit number holdAt (from 1)
// until released; the others apply at once.
type heldCommits struct {
	*memStore
	holdAt  int
	mu      sync.Mutex
	n       int
	release chan struct{}
}

func (h *heldCommits) Commit(ctx context.Context, k producerstate.Key, p *producerstate.State) (producerstate.Ack, error) {
	h.mu.Lock()
	h.n++
	held := h.n == h.holdAt
	h.mu.Unlock()
	if !held {
		return h.memStore.Commit(ctx, k, p)
	}
	snapshot := p.Clone()
	return heldAck{wait: h.release, apply: func() { _, _ = h.memStore.Commit(ctx, k, &snapshot) }}, nil
}

type heldAck struct {
	wait  chan struct{}
	apply func()
}

func (a heldAck) Wait(ctx context.Context) (int64, error) {
	select {
	case <-a.wait:
		a.apply()
		return 0, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// A batch that fails unwritten leaves a gap: Fluss refuses the next batch
// of the writer with OUT_OF_ORDER_SEQUENCE although it holds the writer's
// state. That refusal must not take a new writer id: the batches written
// since the last commit would be replayed under it and stored twice (the
// long fault schedule read 50 Java rows back twice so). Here batch 0's
// commit is held, batch 1 is written behind it (never committed: P fails
// first), batch 2 fails unwritten and batch 3 is refused for the gap; the
// producer retries 1, 2 and 3.
func TestExactlyOnceGapAfterFailedBatchKeepsWriter(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	// Commit 1 writes P's new writer id, commit 2 is batch 0's.
	store := &heldCommits{memStore: &memStore{rows: map[producerstate.Key]producerstate.State{}}, holdAt: 2, release: make(chan struct{})}
	reg := prometheus.NewPedanticRegistry()
	a := newEOInstanceWith(t, f, store, func(c *writertest.Config) { c.Retries = 1 }, reg)
	const n = 8 // records per batch: each batch reaches both buckets
	start := func(k int) func() kafkaproto.PartitionResult { return produceAsync(t, a, eoProduce(9, 0, k, n)) }
	w0, w1 := start(0), start(1)
	require.Eventually(t, func() bool { return total(f.rows(eoTableID)) == 2*n }, 10*time.Second, time.Millisecond,
		"batches 0 and 1 written")
	f.mu.Lock()
	f.refuse = func(_, seq int32) int32 {
		if seq == 2 {
			return 10 // LOG_STORAGE_EXCEPTION: retriable
		}
		return 0
	}
	f.mu.Unlock()
	w2, w3 := start(2), start(3)
	r2, r3 := w2(), w3()
	require.Error(t, r2.Err)
	require.Error(t, r3.Err)
	assert.ErrorIs(t, r3.Err, kafkaproto.ErrNotEnoughReplicas, "the gap is retriable: %v", r3.Err)
	assert.NotErrorIs(t, r3.Err, kafkaproto.ErrOutOfOrderSequenceNumber)
	close(store.release)
	require.NoError(t, w0().Err)
	require.NoError(t, w1().Err, "written before the failure: committed")
	f.mu.Lock()
	f.refuse = nil
	f.mu.Unlock()
	// The producer retries what was not acknowledged, in order.
	for k := 2; k <= 4; k++ {
		require.NoError(t, await(t, a, eoProduce(9, 0, k, n)).Err, "batch %d", k)
	}
	rows := f.rows(eoTableID)
	assert.Equal(t, 5*n, total(rows), "%v", rows)
	for k, c := range rows {
		assert.Equal(t, 1, c, "row %s", k)
	}
	assert.Zero(t, metrictest.Value(t, reg, "fluss_gateway_exactly_once_writer_ids_total", "reason", "failed_write"))
}

// A batch written while an earlier commit of P is in flight is committed
// even when a later batch of P fails for good meanwhile: left uncommitted,
// it would be replayed under the new writer id that failure takes, and
// stored twice. Batch 2 fails definitely on one bucket after its other
// bucket was written (partly written: a new writer id).
func TestExactlyOnceWrittenBatchCommittedDespiteLaterFailure(t *testing.T) {
	t.Parallel()
	f := newDedupFluss()
	store := &heldCommits{memStore: &memStore{rows: map[producerstate.Key]producerstate.State{}}, holdAt: 2, release: make(chan struct{})}
	reg := prometheus.NewPedanticRegistry()
	a := newEOInstanceWith(t, f, store, func(c *writertest.Config) { c.Retries = 1 }, reg)
	const n = 8
	start := func(k int) func() kafkaproto.PartitionResult { return produceAsync(t, a, eoProduce(4, 0, k, n)) }
	w0, w1 := start(0), start(1)
	require.Eventually(t, func() bool { return total(f.rows(eoTableID)) == 2*n }, 10*time.Second, time.Millisecond,
		"batches 0 and 1 written")
	f.mu.Lock()
	f.refuse = func(bucket, seq int32) int32 {
		if bucket == 0 && seq == 2 {
			return 2 // UNSUPPORTED_VERSION: not retriable
		}
		return 0
	}
	f.mu.Unlock()
	r2 := start(2)()
	require.Error(t, r2.Err)
	var ke *kafkaproto.Error
	require.ErrorAs(t, r2.Err, &ke)
	require.False(t, ke.Retriable, "a definite failure: %v", r2.Err)
	close(store.release)
	require.NoError(t, w0().Err)
	require.NoError(t, w1().Err, "written before the failure: committed")
	// A producer whose answer to batch 1 was lost sends it again: it is
	// answered from the committed window, under whatever writer id.
	require.NoError(t, await(t, a, eoProduce(4, 0, 1, n)).Err)
	rows := f.rows(eoTableID)
	for k := range 2 * n {
		assert.Equal(t, 1, rows[fmt.Sprintf("p4/%d", k)], "row p4/%d", k)
	}
	assert.Equal(t, 1.0, metrictest.Value(t, reg, "fluss_gateway_exactly_once_writer_ids_total", "reason", "failed_write"),
		"the partly written batch takes a new writer id")
}
