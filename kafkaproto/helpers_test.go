package kafkaproto_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func splitAddr(t *testing.T, addr string) (string, int32) {
	t.Helper()
	host, portStr, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	return host, int32(port)
}

// logSignal is a slog.Handler that closes a channel when a record whose
// message contains substr is logged.
type logSignal struct {
	substr string
	once   *sync.Once
	ch     chan struct{}
}

func newLogSignal(substr string) logSignal {
	return logSignal{substr: substr, once: &sync.Once{}, ch: make(chan struct{})}
}

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

// loginLimit bounds a SASL client's record: one expected to log in gets a
// generous delivery timeout; one expected to fail its login gets no record
// retries, so it fails with SASL_AUTHENTICATION_FAILED after its first
// failed login (franz-go otherwise retries a failed login until the
// delivery timeout). A short delivery timeout would bound it by time
// instead, and a login merely slow on a busy machine would then end in a
// timeout with no login error yet.
func loginLimit(ok bool) kgo.Opt {
	if ok {
		return kgo.RecordDeliveryTimeout(time.Minute)
	}
	return kgo.RecordRetries(0)
}
