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
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, env.Addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "idle-test", "1"
		conns[i].roundTrip(req)
	}
	perConn := float64(int64(heap())-int64(before)) / n
	t.Logf("live heap per idle connection (server and client side): %.0f bytes", perConn)
	assert.Less(t, perConn, 8192.0, "an idle connection keeps a read buffer")
	runtime.KeepAlive(conns)
}
