package sender

import (
	"context"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// The sender's tests drive both halves as the gateway does; these names
// keep them short.
type (
	Table      = accumulator.Table
	TableSpec  = accumulator.TableSpec
	Handle     = accumulator.Handle
	Batch      = accumulator.Batch
	Op         = accumulator.Op
	Seal       = accumulator.Seal
	LogBuilder = accumulator.LogBuilder
	KvBuilder  = accumulator.KvBuilder
	accConfig  = accumulator.Config
)

const (
	NoPartition  = accumulator.NoPartition
	StickyBucket = accumulator.StickyBucket
	noSequence   = accumulator.NoSequence
)

var (
	ErrClosed         = accumulator.ErrClosed
	ErrBufferFull     = accumulator.ErrBufferFull
	ErrRecordTooLarge = accumulator.ErrRecordTooLarge
)

// writerConfig is both halves' configuration as a test sets it.
type writerConfig struct {
	accConfig
	Config
}

// Validate checks both halves' settings.
func (c writerConfig) Validate() error {
	if err := c.accConfig.Validate(); err != nil {
		return err
	}
	return c.Config.Validate()
}

// testConfig returns both defaults changed by set (nil: unchanged).
func testConfig(set func(*writerConfig)) writerConfig {
	c := writerConfig{accumulator.DefaultConfig(), DefaultConfig()}
	if set != nil {
		set(&c)
	}
	return c
}

// testWriter is an accumulator and its sender, wired as the gateway wires
// them.
type testWriter struct {
	acc *accumulator.Accumulator
	snd *Sender
}

func newTestWriter(cfg writerConfig, tr Transport, opts ...Option) (*testWriter, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var accOpts []accumulator.Option
	if o.reg != nil {
		accOpts = append(accOpts, accumulator.WithRegisterer(o.reg))
	}
	acc, err := accumulator.New(cfg.accConfig, accOpts...)
	if err != nil {
		return nil, err
	}
	snd, err := New(cfg.Config, acc, tr, opts...)
	if err != nil {
		return nil, err
	}
	return &testWriter{acc: acc, snd: snd}, nil
}

func (w *testWriter) AddTable(spec TableSpec) (*Table, error) { return w.acc.AddTable(spec) }
func (w *testWriter) Write(ctx context.Context, t *Table, partitionID int64, bucket int32, op fluss.WriteOp, key []byte, row fluss.Row) (Handle, error) {
	return w.acc.Append(ctx, t, partitionID, bucket, op, key, row)
}
func (w *testWriter) WriteSealed(ctx context.Context, t *Table, partitionID int64, bucket int32, writerID int64, sequence int32, ops []Op) (Handle, error) {
	return w.acc.AppendSealed(ctx, t, partitionID, bucket, Seal{WriterID: writerID, Sequence: sequence}, ops)
}
func (w *testWriter) WriteSeal(ctx context.Context, t *Table, partitionID int64, bucket int32, seal Seal, ops []Op) (Handle, error) {
	return w.acc.AppendSealed(ctx, t, partitionID, bucket, seal, ops)
}
func (w *testWriter) Flush(ctx context.Context) error { return w.acc.Flush(ctx) }
func (w *testWriter) Run(ctx context.Context) error   { return w.snd.Run(ctx) }
func (w *testWriter) Close(ctx context.Context) error { return w.snd.Close(ctx) }
func (w *testWriter) Incomplete() int                 { return w.acc.Incomplete() }
func (w *testWriter) BufferedBytes() int64            { return w.acc.BufferedBytes() }
