package accumulator

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/fluss"
)

// Accumulator queues records into batches per table, partition and
// bucket, within the memory budget. It starts no goroutines of its own
// except the encodings of full batches (prebuild). All methods are safe for
// concurrent use.
type Accumulator struct {
	cfg     Config
	mem     *memoryBudget
	metrics *metrics

	closed   atomic.Bool
	flushing atomic.Int32
	wakeCh   chan struct{} // signalled when the sender should look again

	qmu      sync.Mutex
	queues   atomic.Pointer[[]*Queue] // copy on write under qmu
	tableIDs map[int64]bool           // under qmu
	busy     busyQueues               // the queues that hold batches

	incMu      sync.Mutex
	incomplete map[*Batch]struct{}
	idle       chan struct{} // closed when incomplete becomes empty; replaced when it fills

	// prebuilds bounds the batches encoded at once as soon as they are
	// closed to appends (see prebuild); prebuilding counts them for close.
	prebuilds   chan struct{}
	prebuilding sync.WaitGroup

	// encodeBufs are scratch buffers a batch is encoded into before its
	// bytes are copied out at their size (Batch.encode).
	encodeBufs sync.Pool // *[]byte
}

// New returns an Accumulator for cfg (start from DefaultConfig), its
// metrics registered with WithRegisterer's registry.
func New(cfg Config, opts ...Option) (*Accumulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.reg == nil {
		o.reg = prometheus.NewRegistry()
	}
	a := &Accumulator{
		cfg:        cfg,
		mem:        newMemoryBudget(cfg.BufferMemory, cfg.tableMemoryCap(), cfg.RequestMemory),
		wakeCh:     make(chan struct{}, 1),
		incomplete: make(map[*Batch]struct{}),
		idle:       make(chan struct{}),
		tableIDs:   make(map[int64]bool),
		prebuilds:  make(chan struct{}, runtime.GOMAXPROCS(0)),
	}
	close(a.idle)
	empty := []*Queue{}
	a.queues.Store(&empty)
	m, err := newMetrics(o.reg, a)
	if err != nil {
		return nil, err
	}
	a.metrics = m
	return a, nil
}

// Config returns the configuration in force (defaults applied).
func (a *Accumulator) Config() Config { return a.cfg }

// AddTable registers a table; the returned Table is passed to Append. A
// table id can be registered once: two queues for one bucket would break
// per-bucket order and sequences.
func (a *Accumulator) AddTable(spec TableSpec) (*Table, error) {
	if spec.NumBuckets <= 0 {
		return nil, fmt.Errorf("accumulator: table %s: bucket count %d must be positive", spec.Path, spec.NumBuckets)
	}
	if (spec.NewLogBuilder == nil) == (spec.NewKvBuilder == nil) {
		return nil, fmt.Errorf("accumulator: table %s: set exactly one of NewLogBuilder and NewKvBuilder", spec.Path)
	}
	spec.TargetColumns = append([]int32(nil), spec.TargetColumns...)
	if spec.SetWriter == nil {
		if spec.NewKvBuilder != nil {
			spec.SetWriter = fluss.SetKvBatchWriter
		} else {
			spec.SetWriter = fluss.SetLogBatchWriter
		}
	}
	t := &Table{acc: a, spec: spec, kv: spec.NewKvBuilder != nil, builders: make(chan pooledBuilder, 4)}
	t.schema.Store(&tableSchema{id: spec.SchemaID, width: spec.Columns, newLog: spec.NewLogBuilder, newKv: spec.NewKvBuilder})
	empty := map[int64]*partitionQueues{}
	t.partitions.Store(&empty)
	a.qmu.Lock()
	defer a.qmu.Unlock()
	if a.tableIDs[spec.ID] {
		return nil, fmt.Errorf("accumulator: table %s: table id %d is already registered", spec.Path, spec.ID)
	}
	a.tableIDs[spec.ID] = true
	return t, nil
}

func (a *Accumulator) addQueues(qs []*Queue) {
	a.qmu.Lock()
	defer a.qmu.Unlock()
	old := *a.queues.Load()
	n := make([]*Queue, 0, len(old)+len(qs))
	n = append(append(n, old...), qs...)
	a.queues.Store(&n)
}

// Queues returns a snapshot of every queue (do not modify), in creation
// order. The sender drains the Busy ones.
func (a *Accumulator) Queues() []*Queue { return *a.queues.Load() }

// Wakeup is signalled when the sender should look again: a batch was
// created or became full, a flush or close began, or an appender waits for
// memory.
func (a *Accumulator) Wakeup() <-chan struct{} { return a.wakeCh }

func (a *Accumulator) wake() {
	select {
	case a.wakeCh <- struct{}{}:
	default:
	}
}

// ForceReady reports whether every batch is ready regardless of linger: a
// flush or close is in progress, or an appender waits for memory.
func (a *Accumulator) ForceReady() bool {
	return a.flushing.Load() > 0 || a.closed.Load() || a.mem.waiting() > 0
}

// Closed reports whether Close was called: no record joins any more.
func (a *Accumulator) Closed() bool { return a.closed.Load() }

// Incomplete returns the number of batches queued, in flight or awaiting a
// retry.
func (a *Accumulator) Incomplete() int {
	a.incMu.Lock()
	defer a.incMu.Unlock()
	return len(a.incomplete)
}

// BufferedBytes returns the bytes of buffer memory held by incomplete
// batches.
func (a *Accumulator) BufferedBytes() int64 { return a.mem.inUse() }

// idleCh returns a channel closed once no batch is incomplete (at the time
// of the call it may already be closed).
func (a *Accumulator) idleCh() <-chan struct{} {
	a.incMu.Lock()
	defer a.incMu.Unlock()
	return a.idle
}

func (a *Accumulator) track(b *Batch) {
	a.incMu.Lock()
	if len(a.incomplete) == 0 {
		a.idle = make(chan struct{})
	}
	a.incomplete[b] = struct{}{}
	a.incMu.Unlock()
}

func (a *Accumulator) forget(b *Batch) {
	a.incMu.Lock()
	delete(a.incomplete, b)
	if len(a.incomplete) == 0 {
		select {
		case <-a.idle:
		default:
			close(a.idle)
		}
	}
	a.incMu.Unlock()
}

// Flush makes every queued batch ready and waits until all batches that
// were incomplete when Flush was called have completed, or ctx ends. It
// returns an error naming how many of them failed (the first error
// wrapped); each record's own outcome is on its handle.
func (a *Accumulator) Flush(ctx context.Context) error {
	a.flushing.Add(1)
	defer a.flushing.Add(-1)
	a.incMu.Lock()
	batches := make([]*Batch, 0, len(a.incomplete))
	for b := range a.incomplete {
		batches = append(batches, b)
	}
	a.incMu.Unlock()
	a.wake()
	var failed int
	var first error
	for _, b := range batches {
		select {
		case <-b.done:
			if b.err != nil {
				failed++
				if first == nil {
					first = b.err
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("flush: %w", ctx.Err())
		}
	}
	if failed > 0 {
		return fmt.Errorf("flush: %d of %d batches failed, first: %w", failed, len(batches), first)
	}
	return nil
}

// Close stops accepting records (appends fail with ErrClosed, appenders
// waiting for memory too) and makes every queued batch ready. It does not
// wait: the sender drains what is queued, or Abort fails what was not
// sent. Close is idempotent; the sender's Close calls it.
func (a *Accumulator) Close() {
	if a.closed.Swap(true) {
		return
	}
	a.mem.close()
	a.wake()
}

// Abort fails every queued batch (not the ones the sender holds) with err
// and returns how many it failed.
func (a *Accumulator) Abort(err error) int {
	n := 0
	for _, q := range a.Queues() {
		if q.Empty() {
			continue
		}
		for _, b := range q.DrainAll() {
			if b.Complete(-1, err) {
				n++
			}
		}
	}
	return n
}

// WaitEncodings waits for the encodings of full batches started early
// (prebuild); once every batch is complete they end at once.
func (a *Accumulator) WaitEncodings() { a.prebuilding.Wait() }
