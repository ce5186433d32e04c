// Package writertest is a Fluss writer (accumulator and sender) over any
// sender.Transport, for the product packages' tests: a fake cluster or a
// real one. Never linked into the gateway.
package writertest

import (
	"context"
	"testing"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/sender"
)

type (
	// AccConfig and SndConfig let Config embed both components' configs
	// (two embedded fields may not share the name Config).
	AccConfig = accumulator.Config
	SndConfig = sender.Config
	// Config is the writer's two configs, their fields promoted.
	Config struct {
		AccConfig
		SndConfig
	}
)

// Defaults is both components' defaults.
func Defaults() Config {
	return Config{accumulator.DefaultConfig(), sender.DefaultConfig()}
}

// Writer is an accumulator and the sender that drains it.
type Writer struct {
	*accumulator.Accumulator
	snd *sender.Sender
}

// New builds a writer over tr; Run starts its sender.
func New(cfg Config, tr sender.Transport) (*Writer, error) {
	acc, err := accumulator.New(cfg.AccConfig)
	if err != nil {
		return nil, err
	}
	snd, err := sender.New(cfg.SndConfig, acc, tr)
	if err != nil {
		return nil, err
	}
	return &Writer{Accumulator: acc, snd: snd}, nil
}

// Run runs the sender until ctx ends.
func (w *Writer) Run(ctx context.Context) error { return w.snd.Run(ctx) }

// Close closes the sender, waiting up to ctx for what is in flight.
func (w *Writer) Close(ctx context.Context) error { return w.snd.Close(ctx) }

// Shut closes w, giving what is in flight a moment (a test's cleanup).
func Shut(t testing.TB, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_ = w.Close(ctx)
}
