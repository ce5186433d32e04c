package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// TestShutdownServersTogether: with several listeners, a SIGTERM stops all
// of them from accepting at once, even while one still drains a pending
// Produce; none keeps taking new work while another drains.
func TestShutdownServersTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sink := kafkatest.NewSink()
	topics := kafkatest.NewTopics(map[string]int32{"t": 1})
	var servers []*kafkaproto.Server
	var addrs []string
	var served []chan error
	for range 2 {
		srv, err := kafkaproto.New(kafkaproto.Config{}, kafkatest.Backend{Topics: topics, Sink: sink, ProducerIDs: &kafkatest.ProducerIDs{}},
			kafkaproto.WithRegisterer(prometheus.NewRegistry()))
		require.NoError(t, err)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(l) }()
		servers, addrs, served = append(servers, srv), append(addrs, l.Addr().String()), append(served, done)
	}

	// A Produce held in the sink keeps the first server draining.
	sink.Hold()
	nc, err := net.Dial("tcp", addrs[0])
	require.NoError(t, err)
	defer nc.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = testBatch(t)
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	_, err = nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
	require.NoError(t, err)
	require.NoError(t, sink.WaitFor(ctx, func(s *kafkatest.Sink) bool { return s.Held() == 1 }))

	shut := make(chan []error, 1)
	go func() { shut <- shutdownServers(ctx, servers) }()
	select {
	case err := <-served[1]:
		require.True(t, errors.Is(err, kafkaproto.ErrServerClosed), "serve: %v", err)
	case <-ctx.Done():
		t.Fatal("the second listener kept accepting while the first one drained")
	}
	select {
	case errs := <-shut:
		t.Fatalf("shutdown finished before the pending produce: %v", errs)
	default:
	}
	sink.Release(nil)
	require.Empty(t, <-shut)
	require.True(t, errors.Is(<-served[0], kafkaproto.ErrServerClosed))
}

// testBatch is a one-record, non-idempotent RecordBatch v2.
func testBatch(t *testing.T) []byte {
	t.Helper()
	var rec []byte
	rec = append(rec, 0)             // attributes
	rec = kbin.AppendVarlong(rec, 0) // timestamp delta
	rec = kbin.AppendVarint(rec, 0)  // offset delta
	rec = kbin.AppendVarint(rec, -1) // null key
	rec = kbin.AppendVarint(rec, 1)
	rec = append(rec, 'v')
	rec = kbin.AppendVarint(rec, 0) // headers
	records := append(kbin.AppendVarint(nil, int32(len(rec))), rec...)

	b := kbin.AppendInt64(nil, 0) // base offset
	b = kbin.AppendInt32(b, 0)    // batch length, below
	b = kbin.AppendInt32(b, -1)   // partition leader epoch
	b = append(b, 2)              // magic
	b = kbin.AppendInt32(b, 0)    // crc, below
	crcFrom := len(b)
	b = kbin.AppendInt16(b, 0)    // attributes
	b = kbin.AppendInt32(b, 0)    // last offset delta
	b = kbin.AppendInt64(b, 1000) // first timestamp
	b = kbin.AppendInt64(b, 1000) // max timestamp
	b = kbin.AppendInt64(b, -1)   // producer id
	b = kbin.AppendInt16(b, -1)   // producer epoch
	b = kbin.AppendInt32(b, -1)   // base sequence
	b = kbin.AppendInt32(b, 1)    // records
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[crcFrom:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestRunFailedLoadTearsDown: a start whose routes cannot be bound goes
// through the same teardown as a stop: Run returns the load error, and the
// Kafka and admin listeners are closed.
func TestRunFailedLoadTearsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl := rawTablesCluster(t, 1, "t")
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
listeners: [{name: plain, bind: '127.0.0.1:0'}]
admin: {address: '127.0.0.1:0'}
fluss: {bootstrap: ['%s'], request_timeout: 5s, dial_timeout: 2s}
routes: [{topic: events, table: db.missing, value: {format: raw, column: payload}}]
`, cl.Bootstrap())))
	require.NoError(t, err)
	g, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, g.Listen())
	addrs := []string{g.kafkaListeners[0].Addr().String(), g.adminListener.Addr().String()}

	force, noForce := context.WithCancel(context.Background())
	defer noForce()
	err = g.Run(ctx, force)
	require.Error(t, err)
	require.Contains(t, err.Error(), "load routes")
	for _, addr := range addrs {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
		}
		require.Error(t, err, "%s still accepts", addr)
	}
}
