package writer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/fluss"
)

// Writer buffers rows into Fluss batches and writes them to the tablet
// servers. Create it with New, register tables with AddTable, run it with
// Run, write with Write, stop it with Close. All methods are safe for
// concurrent use.
type Writer struct {
	acc *accumulator
	snd *sender
}

// New returns a Writer that sends through tr (a *fluss.Client). It starts
// nothing: Run does.
func New(cfg Config, tr Transport, opts ...Option) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{seed: uint64(time.Now().UnixNano())}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	reg := o.reg
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	acc, err := newAccumulator(cfg, reg)
	if err != nil {
		return nil, err
	}
	snd, err := newSender(cfg, acc, tr, o, reg)
	if err != nil {
		return nil, err
	}
	return &Writer{acc: acc, snd: snd}, nil
}

// AddTable registers a table; the returned Table is passed to Write. A
// table id can be registered once.
func (w *Writer) AddTable(spec TableSpec) (*Table, error) { return w.acc.addTable(spec) }

// Write queues one row operation and returns its Handle at once: op is
// fluss.WriteAppend for a log table, fluss.WriteUpsert or fluss.WriteDelete
// for a primary-key table; key is the encoded primary key (primary-key
// tables), row the row (unused by a delete). partitionID is NoPartition for
// a non-partitioned table; bucket is the bucket chosen by the caller (from
// the bucket key) or StickyBucket. Write blocks only when a new batch needs
// buffer memory that is not free: then it waits up to
// Config.BufferWaitTimeout (ErrBufferFull) or until ctx ends. Key and row
// are copied into the batch before Write returns.
func (w *Writer) Write(ctx context.Context, t *Table, partitionID int64, bucket int32, op fluss.WriteOp, key []byte, row fluss.Row) (Handle, error) {
	switch op {
	case fluss.WriteAppend:
		if t.kv {
			return Handle{}, fmt.Errorf("writer: append to primary-key table %s: use upsert or delete", t.spec.Path)
		}
	case fluss.WriteUpsert, fluss.WriteDelete:
		if !t.kv {
			return Handle{}, fmt.Errorf("writer: %s on log table %s: not a primary-key table", op, t.spec.Path)
		}
	default:
		return Handle{}, fmt.Errorf("writer: table %s: invalid write op %v", t.spec.Path, op)
	}
	return w.acc.write(ctx, t, partitionID, bucket, record{op: op, key: key, row: row})
}

// Flush makes every queued batch ready and waits until all batches that
// were incomplete when Flush was called have completed, or ctx ends. It
// returns an error naming how many of them failed (the first error
// wrapped); each record's own outcome is on its handle.
func (w *Writer) Flush(ctx context.Context) error { return w.acc.flush(ctx) }

// Run drains and sends until the writer is closed and every batch has
// completed (then it returns nil), or until ctx ends (then it stops every
// request, fails every batch not yet acknowledged with ErrStopped and
// returns ctx's error). It starts one goroutine per write request in
// flight and per metadata or writer-id lookup, and waits for all of them
// before returning. Run may be called once.
func (w *Writer) Run(ctx context.Context) error { return w.snd.run(ctx) }

// Close stops accepting rows (writes fail with ErrClosed, writes waiting
// for memory too) and waits until Run has sent everything and returned, or
// until ctx ends: then it stops Run, which fails whatever was not
// acknowledged with ErrStopped, and returns an error. Close is idempotent;
// without Run it fails what is queued with ErrStopped.
func (w *Writer) Close(ctx context.Context) error { return w.snd.close(ctx) }

// BufferedBytes returns the bytes of buffer memory held by incomplete
// batches.
func (w *Writer) BufferedBytes() int64 { return w.acc.mem.inUse() }

// Incomplete returns the number of batches queued, in flight or awaiting a
// retry.
func (w *Writer) Incomplete() int { return w.acc.incompleteCount() }
