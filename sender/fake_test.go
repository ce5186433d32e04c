package sender

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/batchtest"
)

// testBuilder, testSetWriter and decodeTestBatch are the toy batch
// format both halves' tests share.
type testBuilder = batchtest.Builder

var (
	testSetWriter   = batchtest.SetWriter
	decodeTestBatch = batchtest.Decode
)

// fakeCall is one ProduceLog/PutKv call seen by the fake.
type fakeCall struct {
	Server  int32
	TableID int64
	Buckets []fakeBatch
}

type fakeBatch struct {
	PartitionID int64
	Bucket      int32
	WriterID    int64
	Seq         int32
	Values      []int64
	Routing     int32 // the routing bucket count sent (Fluss 1.0)
	// Entry is the index of the records entry the batch came in; batches
	// of one entry (fresh sealed ones) share it.
	Entry int
}

type bucketID struct {
	table, partition int64
	bucket           int32
}

type fakeWriter struct {
	lastSeq int32
	recent  []fakeRecent
}

type fakeRecent struct {
	seq  int32
	base int64
}

type fakeLog struct {
	values  []int64
	writers map[int64]*fakeWriter
}

// hookResult lets a test decide one bucket's outcome (or the whole call's).
type hookResult struct {
	// CallErr fails the whole request (request-level error).
	CallErr error
	// BucketErr fails one bucket; Apply still writes it when set (lost ack).
	BucketErr map[int32]error
	// ApplyThenFail writes the buckets, then returns CallErr (lost response).
	ApplyThenFail bool
	// Pressure is the KV storage pressure answered per bucket.
	Pressure map[int32]float32
}

// fakeTransport emulates tablet servers and the coordinator in memory: it
// keeps one log per bucket, enforces Fluss's idempotence rules (seq ==
// last+1, duplicates of the last 5 batches answered with their original
// offset, else OUT_OF_ORDER_SEQUENCE), and lets tests hold, fail or inspect
// calls.
type fakeTransport struct {
	mu        sync.Mutex
	leaders   map[int64]int32 // table -> server (all buckets)
	logs      map[bucketID]*fakeLog
	calls     []fakeCall
	holds     map[int64]*fakeHold
	hook      func(c fakeCall) hookResult
	latency   time.Duration
	writerID  int64
	inits     int
	inflight  map[bucketID]int
	maxFlight map[bucketID]int
	invalids  map[int64]int
	dropped   map[int64]bool

	partInvalids map[[2]int64]int           // InvalidatePartitionMetadata calls per (table, partition)
	served       map[[2]int64]chan struct{} // per (server, table): closed once the last request arrived is served
}

type fakeHold struct {
	arrived chan fakeCall
	release chan struct{}
}

func newFakeTransport() *fakeTransport {
	return &fakeTransport{
		leaders:   make(map[int64]int32),
		logs:      make(map[bucketID]*fakeLog),
		holds:     make(map[int64]*fakeHold),
		writerID:  41,
		inflight:  make(map[bucketID]int),
		maxFlight: make(map[bucketID]int),
		invalids:  make(map[int64]int),
		dropped:   make(map[int64]bool),

		partInvalids: make(map[[2]int64]int),
		served:       make(map[[2]int64]chan struct{}),
	}
}

// hold makes calls for table wait until release is closed; arrived gets each
// held call.
func (f *fakeTransport) hold(table int64) *fakeHold {
	h := &fakeHold{arrived: make(chan fakeCall, 16), release: make(chan struct{})}
	f.mu.Lock()
	f.holds[table] = h
	f.mu.Unlock()
	return h
}

// restartBucket keeps only each writer's last batch, as a tablet server
// does when it restores writer state from its snapshot after a restart.
func (f *fakeTransport) restartBucket(id bucketID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.logs[id]; l != nil {
		for _, w := range l.writers {
			if n := len(w.recent); n > 1 {
				w.recent = w.recent[n-1:]
			}
		}
	}
}

func (f *fakeTransport) setHook(h func(c fakeCall) hookResult) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

// arrive records a request when it is sent, in the order the writer queues
// requests on a connection, and returns the channel closed once the
// previous request of the same (server, table) has been served: like a
// server reading one connection, the fake serves them in that order.
func (f *fakeTransport) arrive(server int32, tableID int64, buckets []fluss.BucketRecords) (c fakeCall, h *fakeHold, prev <-chan struct{}, done chan struct{}, err error) {
	c = fakeCall{Server: server, TableID: tableID}
	for e, br := range buckets {
		parts, err := batchtest.Split(br.Records)
		if err != nil {
			return c, nil, nil, nil, err
		}
		for _, part := range parts {
			wid, seq, vals, err := decodeTestBatch(part)
			if err != nil {
				return c, nil, nil, nil, err
			}
			c.Buckets = append(c.Buckets, fakeBatch{br.PartitionID, br.Bucket, wid, seq, vals, br.RoutingBucketCount, e})
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	for _, b := range c.Buckets {
		id := bucketID{tableID, b.PartitionID, b.Bucket}
		f.inflight[id]++
		f.maxFlight[id] = max(f.maxFlight[id], f.inflight[id])
	}
	k := [2]int64{int64(server), tableID}
	prev, done = f.served[k], make(chan struct{})
	f.served[k] = done
	return c, f.holds[tableID], prev, done, nil
}

// serve answers an arrived request once the previous one is served.
func (f *fakeTransport) serve(ctx context.Context, c fakeCall, h *fakeHold, prev <-chan struct{}) ([]fluss.BucketResult, error) {
	server, tableID := c.Server, c.TableID
	defer func() {
		f.mu.Lock()
		for _, b := range c.Buckets {
			f.inflight[bucketID{tableID, b.PartitionID, b.Bucket}]--
		}
		f.mu.Unlock()
	}()
	if h != nil {
		h.arrived <- c
	}
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if h != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	hook := f.hook
	latency := f.latency
	f.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency) // simulated server time (fake clock under synctest)
	}
	var hr hookResult
	if hook != nil {
		hr = hook(c)
	}
	if hr.CallErr != nil && !hr.ApplyThenFail {
		return nil, hr.CallErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leaders[tableID] != server {
		res := make([]fluss.BucketResult, len(c.Buckets))
		for i, b := range c.Buckets {
			res[i] = fluss.BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, Err: fluss.ErrorForCode(12, "not leader"), Offset: -1}
		}
		return res, nil
	}
	res := make([]fluss.BucketResult, 0, len(c.Buckets))
	for i := 0; i < len(c.Buckets); {
		j := i + 1 // c.Buckets[i:j] is one records entry
		for j < len(c.Buckets) && c.Buckets[j].Entry == c.Buckets[i].Entry {
			j++
		}
		b := c.Buckets[i]
		r := fluss.BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, Offset: -1, Pressure: hr.Pressure[b.Bucket]}
		if err := hr.BucketErr[b.Bucket]; err != nil {
			r.Err = err
		} else {
			r.Offset, r.Err = f.applyEntryLocked(bucketID{tableID, b.PartitionID, b.Bucket}, c.Buckets[i:j])
		}
		res = append(res, r)
		i = j
	}
	if hr.ApplyThenFail {
		return nil, hr.CallErr
	}
	return res, nil
}

// applyEntryLocked applies one records entry as Fluss does: every batch's
// sequence is checked before anything is appended; a copy anywhere skips
// the whole entry (answered with the copy's offset), a gap fails it.
func (f *fakeTransport) applyEntryLocked(id bucketID, entry []fakeBatch) (int64, error) {
	if len(entry) == 1 {
		return f.applyLocked(id, entry[0])
	}
	l := f.logs[id]
	last := map[int64]int32{}
	for _, b := range entry {
		if b.WriterID < 0 {
			continue
		}
		prev, ok := last[b.WriterID]
		if !ok {
			prev = -1
			if l != nil && l.writers[b.WriterID] != nil {
				w := l.writers[b.WriterID]
				prev = w.lastSeq
				for _, r := range w.recent {
					if r.seq == b.Seq {
						return r.base, nil
					}
				}
			}
		}
		if b.Seq != prev+1 {
			return -1, fluss.ErrorForCode(31, fmt.Sprintf("Out of order batch sequence for writer %d at offset 0 in table-bucket TableBucket{tableId=%d, bucket=%d} : %d (incoming batch seq.), %d (current batch seq.)",
				b.WriterID, id.table, id.bucket, b.Seq, prev))
		}
		last[b.WriterID] = b.Seq
	}
	base := int64(-1)
	for i, b := range entry {
		off, err := f.applyLocked(id, b)
		if err != nil {
			return -1, err // checked above: cannot happen
		}
		if i == 0 {
			base = off
		}
	}
	return base, nil
}

func (f *fakeTransport) applyLocked(id bucketID, b fakeBatch) (int64, error) {
	l := f.logs[id]
	if l == nil {
		l = &fakeLog{writers: make(map[int64]*fakeWriter)}
		f.logs[id] = l
	}
	if b.WriterID >= 0 {
		w := l.writers[b.WriterID]
		if w == nil {
			w = &fakeWriter{lastSeq: -1}
			l.writers[b.WriterID] = w
		}
		for _, r := range w.recent {
			if r.seq == b.Seq {
				return r.base, nil // duplicate: original offset
			}
		}
		if b.Seq != w.lastSeq+1 {
			// The tablet server's wording, which the writer reads.
			return -1, fluss.ErrorForCode(31, fmt.Sprintf("Out of order batch sequence for writer %d at offset %d in table-bucket TableBucket{tableId=%d, bucket=%d} : %d (incoming batch seq.), %d (current batch seq.)",
				b.WriterID, len(l.values)+len(b.Values)-1, id.table, id.bucket, b.Seq, w.lastSeq))
		}
		w.lastSeq = b.Seq
		w.recent = append(w.recent, fakeRecent{b.Seq, int64(len(l.values))})
		if len(w.recent) > 5 {
			w.recent = w.recent[1:]
		}
	}
	base := int64(len(l.values))
	l.values = append(l.values, b.Values...)
	return base, nil
}

// SendProduceLog and SendPutKv report the request queued at once, as the
// real client does before it waits for the answer.
func (f *fakeTransport) SendProduceLog(ctx context.Context, serverID int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error) {
	return f.pending(serverID, req.TableID, req.Buckets), nil
}

func (f *fakeTransport) SendPutKv(ctx context.Context, serverID int32, req *fluss.PutKvRequest) (*fluss.PendingWrite, error) {
	return f.pending(serverID, req.TableID, req.Buckets), nil
}

func (f *fakeTransport) pending(serverID int32, tableID int64, buckets []fluss.BucketRecords) *fluss.PendingWrite {
	c, h, prev, done, err := f.arrive(serverID, tableID, buckets)
	return fluss.NewPendingWrite(func(ctx context.Context) ([]fluss.BucketResult, error) {
		if err != nil {
			return nil, err
		}
		defer close(done)
		return f.serve(ctx, c, h, prev)
	})
}

func (f *fakeTransport) BucketLeader(ctx context.Context, tableID, partitionID int64, bucket int32) (fluss.ServerNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.leaders[tableID]
	if f.dropped[tableID] {
		return fluss.ServerNode{}, fmt.Errorf("get_metadata: %w", fluss.ErrorForCode(7, "table does not exist"))
	}
	if !ok {
		return fluss.ServerNode{}, fluss.ErrorForCode(21, "unknown table")
	}
	return fluss.ServerNode{ID: id, Host: "127.0.0.1", Port: 9000 + int(id)}, nil
}

func (f *fakeTransport) InvalidateTableMetadata(tableID int64) {
	f.mu.Lock()
	f.invalids[tableID]++
	f.mu.Unlock()
}

func (f *fakeTransport) InvalidatePartitionMetadata(tableID, partitionID int64) {
	f.mu.Lock()
	f.partInvalids[[2]int64{tableID, partitionID}]++
	f.mu.Unlock()
}

func (f *fakeTransport) InitWriter(ctx context.Context, tables ...fluss.TablePath) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inits++
	f.writerID++
	return f.writerID, nil
}

func (f *fakeTransport) logValues(table int64, bucket int32) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.logs[bucketID{table, NoPartition, bucket}]; l != nil {
		return append([]int64(nil), l.values...)
	}
	return nil
}

func (f *fakeTransport) callsFor(table int64) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.TableID == table {
			out = append(out, c)
		}
	}
	return out
}

// harness wires a Writer and the fake.
type harness struct {
	w      *testWriter
	acc    *accumulator.Accumulator // w.acc
	snd    *Sender                  // w.snd
	fake   *fakeTransport
	tables map[int64]*Table
	runErr chan error
	cancel context.CancelFunc
	reg    *prometheus.Registry
}

type tableDef struct {
	id      int64
	buckets int
	server  int32
	kv      bool
}

// newHarness runs a Writer configured as DefaultConfig changed by set.
func newHarness(t *testing.T, set func(*writerConfig), defs ...tableDef) *harness {
	t.Helper()
	h := newIdleHarness(t, set, defs...)
	h.start()
	return h
}

// start runs the harness's writer.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.runErr <- h.w.Run(ctx) }()
}

// newIdleHarness is newHarness without Run: writes queue up until start.
func newIdleHarness(t *testing.T, set func(*writerConfig), defs ...tableDef) *harness {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	fake := newFakeTransport()
	w, err := newTestWriter(testConfig(set), fake, WithJitterSeed(1), WithRegisterer(reg))
	require.NoError(t, err)
	h := &harness{w: w, acc: w.acc, snd: w.snd, fake: fake, reg: reg, tables: make(map[int64]*Table), runErr: make(chan error, 1)}
	for _, d := range defs {
		fake.leaders[d.id] = d.server
		spec := TableSpec{
			ID:         d.id,
			Path:       fluss.TablePath{Database: "db", Table: fmt.Sprintf("t%d", d.id)},
			NumBuckets: d.buckets,
			SetWriter:  testSetWriter,
		}
		if d.kv {
			spec.NewKvBuilder = func() (KvBuilder, error) { return &testBuilder{}, nil }
		} else {
			spec.NewLogBuilder = func() (LogBuilder, error) { return &testBuilder{}, nil }
		}
		tbl, err := w.AddTable(spec)
		require.NoError(t, err)
		h.tables[d.id] = tbl
	}
	return h
}

func (h *harness) append(t *testing.T, table int64, bucket int32, v int64) Handle {
	t.Helper()
	hd, err := h.w.Write(context.Background(), h.tables[table], NoPartition, bucket, fluss.WriteAppend, nil, fluss.Row{fluss.IntDatum(v)})
	require.NoError(t, err)
	return hd
}

// inflight returns the write requests sent and not yet answered.
func (h *harness) inflight() int { return int(h.snd.inflightReqs.Load()) }

// close shuts the writer down gracefully and checks that nothing leaked.
func (h *harness) close(t *testing.T) {
	t.Helper()
	require.NoError(t, h.w.Close(context.Background()))
	require.NoError(t, <-h.runErr)
	h.cancel()
	require.Equal(t, 0, h.w.Incomplete(), "incomplete batches after close")
	require.Equal(t, int64(0), h.w.BufferedBytes(), "buffer bytes after close")
	require.Equal(t, 0, h.inflight(), "in-flight requests after close")
}
