package kafkaproto_test

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// flakyListener fails its first Accept with err, then serves the wrapped
// listener; accepted is signalled on every later Accept call.
type flakyListener struct {
	net.Listener
	err      error
	calls    atomic.Int32
	accepted chan struct{}
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.calls.Add(1) == 1 {
		return nil, l.err
	}
	select {
	case l.accepted <- struct{}{}:
	default:
	}
	return l.Listener.Accept()
}

// TestServeSurvivesTemporaryAcceptErrors: running out of file descriptors
// (EMFILE) while accepting is temporary; Serve backs off and goes on instead
// of returning, which would stop the whole gateway.
func TestServeSurvivesTemporaryAcceptErrors(t *testing.T) {
	t.Parallel()
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			srv, err := kafkaproto.New(kafkaproto.Config{}, kafkatest.Backend{Topics: kafkatest.NewTopics(nil), Sink: kafkatest.NewSink(), ProducerIDs: &kafkatest.ProducerIDs{}},
				kafkaproto.WithRegisterer(prometheus.NewRegistry()))
			require.NoError(t, err)
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			l := &flakyListener{Listener: inner, accepted: make(chan struct{}, 1),
				err: &net.OpError{Op: "accept", Net: "tcp", Addr: inner.Addr(), Err: os.NewSyscallError("accept", errno)}}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(l) }()
			select {
			case <-l.accepted:
			case err := <-served:
				t.Fatalf("Serve returned after a temporary accept error: %v", err)
			case <-kafkatest.Context(t).Done():
				t.Fatal("Serve neither retried nor returned")
			}
			checkAlive(t, inner.Addr().String())
			require.NoError(t, srv.Close())
			require.True(t, errors.Is(<-served, kafkaproto.ErrServerClosed))
		})
	}
}

// TestUnauthenticatedFrameLimit: before SASL authentication a client may
// only send small frames (Kafka: sasl.server.max.receive.size, 512 KiB), so
// unauthenticated connections cannot hold the server-wide read budget that
// authenticated producers need.
func TestUnauthenticatedFrameLimit(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkatest.SASLConfig())
	c := dialRaw(t, env.Addr)
	c.write(frameHeader(1<<20, 18, 3, 1)) // claims 1 MiB, sends 8 bytes
	c.expectClosed()
	checkAlive(t, env.Addr)
}
