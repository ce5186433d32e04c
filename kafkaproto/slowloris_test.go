package kafkaproto_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// slowSender is a hostile connection: after a valid ApiVersions it declares
// a giant Produce and trickles its body at one byte a second.
type slowSender struct {
	nc       net.Conn
	declared time.Time          // when the giant size field was written
	closed   chan time.Duration // how long after declared the server closed it
}

func startSlowSender(t *testing.T, ctx context.Context, addr string, size int32) *slowSender {
	t.Helper()
	c := dialRaw(t, addr)
	checkApiVersions(t, c) // the first request is small: MaxFirstRequestBytes no longer applies
	s := &slowSender{nc: c.c, closed: make(chan time.Duration, 1)}
	s.declared = time.Now()
	c.write(frameHeader(size, 0, 9, 2))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // trickle until the server closes the socket
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := s.nc.Write([]byte{0}); err != nil {
					return
				}
			}
		}
	}()
	go func() { // the server's close ends the read
		defer wg.Done()
		_ = s.nc.SetReadDeadline(time.Now().Add(time.Minute))
		_, _ = io.Copy(io.Discard, s.nc)
		s.closed <- time.Since(s.declared)
	}()
	t.Cleanup(func() { _ = s.nc.Close(); wg.Wait() })
	return s
}

func checkApiVersions(t *testing.T, c *rawConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	require.Equal(t, int16(0), c.roundTrip(req).(*kmsg.ApiVersionsResponse).ErrorCode)
}

// TestSlowGiantFramesDoNotStarveProducers is the slowloris case of issue
// 12: three connections each declare a ~100 MiB request and send one byte
// a second. A producer keeps getting acks meanwhile (before, the declared
// sizes were reserved from the 256 MiB read budget and everyone else waited
// behind them), the slow sockets are closed once their read deadline
// (RequestReadTimeout + size / MinReadBytesPerSecond) passes, and the read
// budget returns to zero. The read timeout is the window in which the
// producer must get its acks: long enough for a busy machine under -race
// (20 acks take well under a second on an idle one).
func TestSlowGiantFramesDoNotStarveProducers(t *testing.T) {
	t.Parallel()
	const (
		readTimeout = 15 * time.Second
		declared    = 100<<20 - 64 // within the default MaxFrameBytes
		minAcks     = 20
	)
	cfg := kafkaproto.Config{RequestReadTimeout: readTimeout, MinReadBytesPerSecond: 1 << 30} // + ~0.1 s for 100 MiB
	require.Equal(t, 100<<20, kafkaproto.DefaultConfig().MaxFrameBytes)
	require.Equal(t, int64(256<<20), kafkaproto.DefaultConfig().MaxReadBytes)
	env := kafkatest.StartServer(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // past readTimeout, on a busy machine too
	defer cancel()

	var slow []*slowSender
	for range 3 {
		slow = append(slow, startSlowSender(t, ctx, env.Addr, declared))
	}
	// Each slow request holds its first 64 KiB buffer, not 100 MiB.
	waitMetric(t, env, "fluss_gateway_kafka_read_budget_bytes", 3*64<<10)

	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DefaultProduceTopic(kafkatest.Topic))
	require.NoError(t, err)
	defer cl.Close()
	var acks []time.Time
	for len(acks) < minAcks {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("while slow senders hold the server")).FirstErr())
		acks = append(acks, time.Now())
	}
	firstAcks := acks[len(acks)-1].Sub(slow[0].declared)
	for i, s := range slow {
		select {
		case d := <-s.closed:
			t.Fatalf("slow sender %d was closed after %s, before the producer got %d acks", i, d, minAcks)
		default:
		}
	}

	var closedAfter []time.Duration
	for i, s := range slow {
		select {
		case d := <-s.closed:
			assert.GreaterOrEqual(t, d, readTimeout, "slow sender %d closed before its read deadline", i)
			closedAfter = append(closedAfter, d)
		case <-ctx.Done():
			t.Fatalf("slow sender %d was never closed", i)
		}
	}
	assert.Equal(t, 3.0, metricWithLabel(t, env, "fluss_gateway_kafka_protocol_errors_total", "reason", "read_timeout"))
	cl.Close()
	waitMetric(t, env, "fluss_gateway_kafka_read_budget_bytes", 0)
	assert.Equal(t, minAcks, env.Sink.TotalRecords())
	t.Logf("%d acks within %s of the giant size fields; slow senders closed after %v", len(acks), firstAcks, closedAfter)
}

// TestGiantFirstRequestClosed: a connection whose first request declares
// more than MaxFirstRequestBytes is closed at once, before any budget.
func TestGiantFirstRequestClosed(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	c.write(frameHeader(100<<20-64, 0, 9, 1))
	c.expectClosed()
	assert.Equal(t, 1.0, metricWithLabel(t, env, "fluss_gateway_kafka_protocol_errors_total", "reason", "bad_frame"))

	// Below the cap a first request is read (here a 1.5 MiB one, read in
	// growing pieces) and answered.
	c = dialRaw(t, env.Addr)
	big := kafkaproto.TestBatch{ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{{Value: make([]byte, 3<<19)}}}.Build()
	p := onlyPartition(t, c.roundTrip(produceRequest(9, 1, kafkatest.Topic, 0, big)))
	assert.Equal(t, kafkaproto.ErrMessageTooLarge.Code, p.ErrorCode, "read and refused by MaxMessageBytes, not closed")
	waitMetric(t, env, "fluss_gateway_kafka_read_budget_bytes", 0)
}

// waitMetric waits until a gauge or counter (summed over its series)
// equals want.
func waitMetric(t *testing.T, env *kafkatest.Env, name string, want float64) {
	t.Helper()
	ctx := kafkatest.Context(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if got := env.MetricValue(t, name); got == want {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s is %v, want %v", name, env.MetricValue(t, name), want)
		}
	}
}

// metricWithLabel returns the value of the series of a counter vector
// whose label has the given value (0 if absent).
func metricWithLabel(t *testing.T, env *kafkatest.Env, name, label, value string) float64 {
	t.Helper()
	mfs, err := env.Reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
