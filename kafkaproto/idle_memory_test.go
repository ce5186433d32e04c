package kafkaproto_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestIdleConnectionsHoldNoReadBuffer: a connection that has been answered
// and waits for its next request holds no read buffer (16 KiB each when it
// kept one): clients keep several idle connections each, and thousands of
// producers must fit the memory budget. Measured as live heap per idle
// connection, both ends in this process.
func TestIdleConnectionsHoldNoReadBuffer(t *testing.T) {
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	const n = 200
	// Live heap plus goroutine stacks (the server's reader and writer).
	heap := func() (uint64, uint64) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.StackInuse
	}
	heapBefore, stackBefore := heap()
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, env.Addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "idle-test", "1"
		conns[i].roundTrip(req)
	}
	heapAfter, stackAfter := heap()
	heapPer := float64(int64(heapAfter)-int64(heapBefore)) / n
	stackPer := float64(int64(stackAfter)-int64(stackBefore)) / n
	t.Logf("per idle connection: live heap %.0f bytes (server and client side), goroutine stacks %.0f bytes", heapPer, stackPer)
	assert.Less(t, heapPer, 8192.0, "an idle connection keeps a read buffer")
	assert.Less(t, heapPer+stackPer, 16384.0, "an idle connection's heap and stacks")
	runtime.KeepAlive(conns)
}
