package gateway

import (
	"context"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/sender"
)

// testWriterConfig is the writer section's two halves as a test sets them.
type (
	accConfig        = accumulator.Config
	sndConfig        = sender.Config
	testWriterConfig struct {
		accConfig
		sndConfig
	}
)

func testWriterDefaults() testWriterConfig {
	return testWriterConfig{accumulator.DefaultConfig(), sender.DefaultConfig()}
}

// testWriter is an accumulator and its sender wired as New wires them;
// tests hand the accumulator to the bridge and run the sender.
type testWriter struct {
	*accumulator.Accumulator
	snd *sender.Sender
}

func newTestWriter(cfg testWriterConfig, tr sender.Transport) (*testWriter, error) {
	acc, err := accumulator.New(cfg.accConfig)
	if err != nil {
		return nil, err
	}
	snd, err := sender.New(cfg.sndConfig, acc, tr)
	if err != nil {
		return nil, err
	}
	return &testWriter{Accumulator: acc, snd: snd}, nil
}

func (w *testWriter) Run(ctx context.Context) error   { return w.snd.Run(ctx) }
func (w *testWriter) Close(ctx context.Context) error { return w.snd.Close(ctx) }
