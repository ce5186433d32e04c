package kafkaproto_test

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestIdleConnectionsHoldNoReadBuffer: a connection that has been answered
// and waits for its next request holds no read buffer (16 KiB each when it
// kept one) and no writer goroutine (a second stack): clients keep several
// idle connections each, and thousands of producers must fit the memory
// budget. Measured as live heap and stacks per idle connection, both ends
// in this process.
func TestIdleConnectionsHoldNoReadBuffer(t *testing.T) {
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	const n = 200
	// Live heap plus goroutine stacks (the server's reader; no writer while idle).
	heap := func() (uint64, uint64) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.StackInuse
	}
	heapBefore, stackBefore := heap()
	goroutinesBefore := runtime.NumGoroutine()
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, env.Addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "idle-test", "1"
		conns[i].roundTrip(req)
	}
	heapAfter, stackAfter := heap()
	// Each answer's writer exits once its queue is empty: wait for that
	// (a few goroutines of the runtime's or the server's may come and go).
	require.Eventually(t, func() bool { return runtime.NumGoroutine()-goroutinesBefore < n+n/2 }, 10*time.Second, 10*time.Millisecond,
		"goroutines per idle connection: want one (its reader)")
	heapAfter, stackAfter = heap()
	heapPer := float64(int64(heapAfter)-int64(heapBefore)) / n
	stackPer := float64(int64(stackAfter)-int64(stackBefore)) / n
	t.Logf("per idle connection: live heap %.0f bytes (server and client side), goroutine stacks %.0f bytes", heapPer, stackPer)
	assert.Less(t, heapPer, 8192.0, "an idle connection keeps a read buffer")
	if !kafkaproto.RaceEnabled() {
		// 11.4 KiB while every connection kept its writer goroutine
		// (a second stack); 8.3 KiB with the writer started on demand.
		assert.Less(t, heapPer+stackPer, 10240.0, "an idle connection's heap and stacks")
	}
	runtime.KeepAlive(conns)
}

// countingListener counts the reads on the connections it accepts.
type countingListener struct {
	net.Listener
	reads *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, reads: l.reads}, nil
}

type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// A small request that arrives on an idle connection costs one read of the
// socket, not two: producers that send a record or two per request (many
// small services) pay per request, and a read is a system call.
func TestSmallRequestIsOneRead(t *testing.T) {
	srv, err := kafkaproto.New(kafkaproto.Config{}, kafkatest.Backend{Topics: kafkatest.NewTopics(map[string]int32{kafkatest.Topic: 1}),
		Sink: kafkatest.NewSink(), ProducerIDs: &kafkatest.ProducerIDs{}})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var reads atomic.Int64
	go func() { _ = srv.Serve(countingListener{Listener: l, reads: &reads}) }()
	t.Cleanup(func() { _ = srv.Close() })

	c := dialRaw(t, l.Addr().String())
	const n = 200
	for range n {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "one-read-test", "1"
		c.roundTrip(req)
	}
	got := reads.Load()
	t.Logf("%d reads for %d requests, each sent after the previous answer", got, n)
	// One read per request, plus the one waiting for the next.
	assert.LessOrEqual(t, got, int64(n+1))
}
