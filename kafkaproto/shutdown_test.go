package kafkaproto_test

import (
	"context"
	"errors"
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

// startShutdown runs Shutdown in the background and returns once the
// listener refuses connections (Shutdown has begun and every connection
// is draining: it drains them first); the channel gets Shutdown's result.
func startShutdown(t *testing.T, env *kafkatest.Env) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- env.Srv.Shutdown(kafkatest.Context(t)) }()
	ctx := kafkatest.Context(t)
	for {
		nc, err := net.DialTimeout("tcp", env.Addr, time.Second)
		var ne net.Error
		if err == nil {
			_ = nc.Close()
		} else if !errors.As(err, &ne) || !ne.Timeout() { // a slow dial on a busy machine is no sign of Shutdown
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener still accepts after Shutdown")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return done
}

// requireNotReturned fails if Shutdown already returned.
func requireNotReturned(t *testing.T, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) before the read requests were answered", err)
	default:
	}
}

// expectEOF asserts the server half-closed the connection cleanly (FIN,
// not a reset) with no further response.
func (r *rawConn) expectEOF() {
	r.t.Helper()
	require.NoError(r.t, r.c.SetReadDeadline(time.Now().Add(time.Minute)))
	n, err := io.Copy(io.Discard, r.c)
	require.NoError(r.t, err, "want a clean EOF")
	require.Zero(r.t, n, "unexpected bytes after the last response")
}

// TestShutdownAnswersEveryReadRequest: Produce requests pipelined on one
// connection are all answered during Shutdown: one waiting for the sink's
// write, one whose handling (a blocked sink call) spans the start of
// Shutdown, and one that was complete in the read buffer behind them.
// Shutdown returns only after that, and the connection then ends with a
// clean FIN.
func TestShutdownAnswersEveryReadRequest(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	entered, unblock := make(chan struct{}), make(chan struct{})
	env.Sink.Reject = func(pp *kafkaproto.PartitionProduce) error {
		if pp.Partition == 1 {
			close(entered)
			select { // t.Context: a failed test does not hang its cleanup
			case <-unblock:
			case <-t.Context().Done():
			}
		}
		return nil
	}
	env.Sink.Hold()
	c := dialRaw(t, env.Addr)
	var wire []byte
	var corrs []int32
	for p := range int32(3) {
		c.corr++
		// AppendRequest writes the size at dst[0]: one buffer per request.
		wire = append(wire, c.f.AppendRequest(nil, produceRequest(9, -1, kafkatest.Topic, p, batch(-1, 0, -1, 1)), c.corr)...)
		corrs = append(corrs, c.corr)
	}
	c.write(wire) // one write: all three reach the server's read buffer together
	<-entered     // the first is held by the sink, the second in the sink call, the third buffered
	require.Equal(t, 1, env.Sink.Held())

	done := startShutdown(t, env)
	requireNotReturned(t, done)
	close(unblock)
	// The buffered third request is handled although the server is draining.
	require.NoError(t, env.Sink.WaitFor(kafkatest.Context(t), func(s *kafkatest.Sink) bool { return s.Held() == 3 }))
	requireNotReturned(t, done)
	env.Sink.Release(nil)
	for _, corr := range corrs {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		c.recv(corr, resp)
		assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
	}
	c.expectEOF()
	require.NoError(t, <-done)
	assert.Len(t, env.Sink.Batches(), 3)
}

// TestShutdownAbandonsPartialRequest: a request only partly received when
// Shutdown starts is abandoned (nothing of it reaches the sink), while the
// one before it is answered.
func TestShutdownAbandonsPartialRequest(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	env.Sink.Hold()
	c := dialRaw(t, env.Addr)
	corr := c.send(produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 1)))
	require.NoError(t, env.Sink.WaitFor(kafkatest.Context(t), func(s *kafkatest.Sink) bool { return s.Held() == 1 }))
	second := c.f.AppendRequest(nil, produceRequest(9, -1, kafkatest.Topic, 1, batch(-1, 0, -1, 1)), corr+1)
	c.write(second[:len(second)/2])

	done := startShutdown(t, env)
	requireNotReturned(t, done)
	c.write(second[len(second)/2:]) // too late: not read any more
	env.Sink.Release(nil)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	c.recv(corr, resp)
	assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
	c.expectEOF()
	require.NoError(t, <-done)
	require.Len(t, env.Sink.Batches(), 1)
	assert.Equal(t, int32(0), env.Sink.Batches()[0].Produce.Partition)
}

// TestShutdownAbandonsRequestWaitingForBudget: a reader waiting for read
// budget for a request not yet received stops waiting when Shutdown
// starts, instead of holding Shutdown until the budget frees.
func TestShutdownAbandonsRequestWaitingForBudget(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxFrameBytes: 64 << 10, MaxReadBytes: 64 << 10, MaxMessageBytes: 64 << 10})
	entered := make(chan struct{})
	unblock := make(chan struct{})
	env.Sink.Reject = func(pp *kafkaproto.PartitionProduce) error {
		if pp.Partition == 0 {
			close(entered)
			select {
			case <-unblock:
			case <-t.Context().Done():
			}
		}
		return nil
	}
	big := kafkaproto.TestBatch{ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{{Value: make([]byte, 40<<10)}}}.Build()
	a, b := dialRaw(t, env.Addr), dialRaw(t, env.Addr)
	corrA := a.send(produceRequest(9, 1, kafkatest.Topic, 0, big))
	<-entered // a holds 40 of the 64 KiB while its sink call blocks
	frame := b.f.AppendRequest(nil, produceRequest(9, 1, kafkatest.Topic, 1, big), 1)
	b.write(frame[:8]) // b's size field claims 40 KiB more: it waits
	waitMetric(t, env, "fluss_gateway_kafka_read_budget_waits_total", 1)

	done := startShutdown(t, env)
	b.expectEOF() // abandoned: closed without waiting for a's budget
	requireNotReturned(t, done)
	close(unblock)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	a.recv(corrA, resp)
	assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
	a.expectEOF()
	require.NoError(t, <-done)
	assert.Len(t, env.Sink.Batches(), 1)
}

// TestShutdownKgoNoUnansweredWrites: with an idempotent franz-go producer
// mid-stream, every record that reached the sink before Shutdown is
// acknowledged to the client, and no record the client saw fail is in the
// sink: a client never has to resend a write that happened.
func TestShutdownKgoNoUnansweredWrites(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DefaultProduceTopic(kafkatest.Topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(kafkatest.Context(t), kgo.StringRecord("warm-up")).FirstErr())

	env.Sink.Hold()
	const n = 100
	var mu sync.Mutex
	results := map[string]error{}
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		rec := kgo.StringRecord(string(rune('a'+i%26)) + "-" + time.Duration(i).String())
		cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
			mu.Lock()
			results[string(r.Value)] = err
			mu.Unlock()
			wg.Done()
		})
	}
	require.NoError(t, env.Sink.WaitFor(kafkatest.Context(t), func(s *kafkatest.Sink) bool { return s.Held() >= 1 }))

	done := startShutdown(t, env)
	requireNotReturned(t, done)
	// Records produced now cannot reach the gateway any more.
	wg.Add(n)
	for i := range n {
		cl.Produce(context.Background(), kgo.StringRecord("late-"+time.Duration(i).String()), func(r *kgo.Record, err error) {
			mu.Lock()
			results[string(r.Value)] = err
			mu.Unlock()
			wg.Done()
		})
	}
	env.Sink.Release(nil)
	require.NoError(t, <-done)
	cl.Close() // fails what the client still buffers
	wg.Wait()

	inSink := map[string]bool{}
	for _, b := range env.Sink.Batches() {
		for _, r := range b.Produce.Records {
			inSink[string(r.Value)] = true
		}
	}
	acked := 0
	for v, err := range results {
		if err == nil {
			acked++
			assert.True(t, inSink[v], "record %q acknowledged but not in the sink", v)
		} else {
			assert.False(t, inSink[v], "record %q in the sink but failed to the client (%v): it would be resent", v, err)
		}
	}
	assert.Positive(t, acked)
	assert.Less(t, acked, 2*n, "records produced after the shutdown began were acknowledged")
	assert.Equal(t, acked+1, env.Sink.TotalRecords(), "acked records + warm-up")
	t.Logf("%d of %d records acknowledged during shutdown, the rest failed unsent", acked, 2*n)
}
