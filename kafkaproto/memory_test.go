package kafkaproto_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

const (
	budgetBytes    = "fluss_gateway_kafka_read_budget_bytes"
	budgetWaits    = "fluss_gateway_kafka_read_budget_waits_total"
	collectedTotal = "fluss_gateway_kafka_produce_batches_collected_total"
)

// serveSink serves cfg on 127.0.0.1:0 with sink behind the kafkatest topics
// and producer ids, until the test ends. Only Srv, Addr and Reg are set.
func serveSink(t *testing.T, cfg kafkaproto.Config, sink kafkaproto.Sink) *kafkatest.Env {
	t.Helper()
	b := struct {
		*kafkatest.Topics
		kafkaproto.Sink
		*kafkatest.ProducerIDs
	}{kafkatest.NewTopics(map[string]int32{kafkatest.Topic: 3}), sink, &kafkatest.ProducerIDs{}}
	reg := prometheus.NewPedanticRegistry()
	srv, err := kafkaproto.New(cfg, b, kafkaproto.WithRegisterer(reg))
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
		assert.ErrorIs(t, <-served, kafkaproto.ErrServerClosed)
	})
	return &kafkatest.Env{Srv: srv, Addr: l.Addr().String(), Reg: reg}
}

// keepingSink accepts every batch at once but keeps it unreleased until
// releaseAll, as a sink that queues batches for a goroutine does.
type keepingSink struct {
	mu       sync.Mutex
	kept     []*kafkaproto.PartitionProduce
	accepted int
}

func (s *keepingSink) Produce(_ context.Context, pp *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(s.kept, pp)
	s.accepted++
	return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: int64(s.accepted - 1), LogAppendTime: -1}), nil
}

func (s *keepingSink) releaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pp := range s.kept {
		pp.Release()
	}
	s.kept = nil
}

func (s *keepingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// compressible is a batch of one record of n zero bytes in codec: a few
// hundred bytes on the wire for the compressing codecs.
func compressible(codec kafkaproto.Codec, pid int64, seq int32, n int) []byte {
	return kafkaproto.TestBatch{ProducerID: pid, BaseSequence: seq, Codec: codec, BaseTimestamp: 1000,
		Records: []kafkaproto.Record{{Value: make([]byte, n), Timestamp: 1000}}}.Build()
}

// TestKeptBatchesStopReading: a batch the sink keeps after Produce stays
// charged at its decompressed size; once that uses up the budget the next
// request is not read until the sink releases, and then everything
// charged comes back.
func TestKeptBatchesStopReading(t *testing.T) {
	t.Parallel()
	const (
		limit = 64 << 10
		plain = 100 << 10 // decompressed, more than the whole budget
	)
	for _, codec := range []kafkaproto.Codec{kafkaproto.CodecLZ4, kafkaproto.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			sink := &keepingSink{}
			env := serveSink(t, kafkaproto.Config{MaxFrameBytes: limit, MaxReadBytes: limit, MaxMessageBytes: limit}, sink)
			big := compressible(codec, -1, -1, plain)
			require.Less(t, len(big), 4<<10)
			c := dialRaw(t, env.Addr)
			p := onlyPartition(t, c.roundTrip(produceRequest(9, 1, kafkatest.Topic, 0, big)))
			require.Equal(t, int16(0), p.ErrorCode)
			// The frame's reservation is back (released before the response
			// is queued): what remains is the kept batch.
			assert.GreaterOrEqual(t, env.MetricValue(t, budgetBytes), float64(plain))

			corr := c.send(produceRequest(9, 1, kafkatest.Topic, 1, batch(-1, 0, -1, 1)))
			waitMetric(t, env, budgetWaits, 1)
			assert.Equal(t, 1, sink.count(), "the second request was read while the budget was used up")

			sink.releaseAll()
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = 9
			c.recv(corr, resp)
			assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
			assert.Equal(t, 2, sink.count())
			assert.Positive(t, env.MetricValue(t, budgetBytes), "the second batch is kept too")
			sink.releaseAll()
			assert.Zero(t, env.MetricValue(t, budgetBytes))
			assert.Zero(t, env.MetricValue(t, collectedTotal))
		})
	}
}

// TestDiscardedBatchesReturnTheirCharge: every batch kafkaproto decodes and
// does not leave with the sink gives its charge back at once.
func TestDiscardedBatchesReturnTheirCharge(t *testing.T) {
	t.Parallel()
	lz4 := kafkaproto.CodecLZ4
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, env *kafkatest.Env, c *rawConn)
	}{
		{"duplicate answered from the window", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			pid := initProducerID(t, c)
			first := compressible(lz4, pid, 0, 10<<10)
			for range 2 {
				p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, first)))
				require.Equal(t, int16(0), p.ErrorCode)
			}
			assert.Len(t, env.Sink.Batches(), 1)
			assert.Equal(t, 1.0, env.MetricValue(t, "fluss_gateway_kafka_produce_duplicate_batches_total"))
		}},
		{"duplicate of a write in flight", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			pid := initProducerID(t, c)
			env.Sink.Hold()
			first := compressible(lz4, pid, 0, 10<<10)
			corr1 := c.send(produceRequest(9, -1, kafkatest.Topic, 0, first))
			corr2 := c.send(produceRequest(9, -1, kafkatest.Topic, 0, first))
			waitMetric(t, env, "fluss_gateway_kafka_produce_duplicate_batches_total", 1)
			assert.Equal(t, 1, env.Sink.Held())
			env.Sink.Release(nil)
			for _, corr := range []int32{corr1, corr2} {
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = 9
				c.recv(corr, resp)
				assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
			}
		}},
		{"out of order sequence", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			pid := initProducerID(t, c)
			p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, compressible(lz4, pid, 0, 10<<10))))
			require.Equal(t, int16(0), p.ErrorCode)
			p = onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, compressible(lz4, pid, 7, 10<<10))))
			assert.Equal(t, kafkaproto.ErrOutOfOrderSequenceNumber.Code, p.ErrorCode)
		}},
		{"sink refuses", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			env.Sink.Reject = func(*kafkaproto.PartitionProduce) error { return kafkaproto.ErrNotEnoughReplicas }
			p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, compressible(lz4, -1, -1, 10<<10))))
			assert.Equal(t, kafkaproto.ErrNotEnoughReplicas.Code, p.ErrorCode)
		}},
		{"sink refuses an idempotent batch", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			pid := initProducerID(t, c)
			env.Sink.Reject = func(*kafkaproto.PartitionProduce) error { return kafkaproto.ErrNotEnoughReplicas }
			p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, compressible(lz4, pid, 0, 10<<10))))
			assert.Equal(t, kafkaproto.ErrNotEnoughReplicas.Code, p.ErrorCode)
		}},
		{"sink refuses with acks=0", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			env.Sink.Reject = func(*kafkaproto.PartitionProduce) error { return kafkaproto.ErrNotEnoughReplicas }
			c.send(produceRequest(9, 0, kafkatest.Topic, 0, compressible(lz4, -1, -1, 10<<10)))
			c.expectClosed() // after the reader released the batch and the frame
		}},
		{"codec none refused", func(t *testing.T, env *kafkatest.Env, c *rawConn) {
			env.Sink.Reject = func(*kafkaproto.PartitionProduce) error { return kafkaproto.ErrNotEnoughReplicas }
			p := onlyPartition(t, c.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, compressible(kafkaproto.CodecNone, -1, -1, 10<<10))))
			assert.Equal(t, kafkaproto.ErrNotEnoughReplicas.Code, p.ErrorCode)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := kafkatest.StartServer(t, kafkaproto.Config{})
			tc.run(t, env, dialRaw(t, env.Addr))
			assert.Zero(t, env.MetricValue(t, budgetBytes))
			assert.Zero(t, env.MetricValue(t, collectedTotal))
		})
	}
}

// blockingSink waits in Produce until its context ends.
type blockingSink struct{ entered chan struct{} }

func (s blockingSink) Produce(ctx context.Context, _ *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestBatchChargeReturnedOnClose: a batch whose sink call ends with the
// connection gives its charge back.
func TestBatchChargeReturnedOnClose(t *testing.T) {
	t.Parallel()
	sink := blockingSink{entered: make(chan struct{}, 1)}
	env := serveSink(t, kafkaproto.Config{}, sink)
	c := dialRaw(t, env.Addr)
	c.send(produceRequest(9, -1, kafkatest.Topic, 0, compressible(kafkaproto.CodecZstd, -1, -1, 100<<10)))
	<-sink.entered
	assert.GreaterOrEqual(t, env.MetricValue(t, budgetBytes), float64(100<<10), "frame and decoded batch")
	require.NoError(t, env.Srv.Close())
	assert.Zero(t, env.MetricValue(t, budgetBytes))
}

// countingBudget is a MemoryBudget without a limit that counts what it is
// charged, as a budget shared with a writer would see it.
type countingBudget struct {
	used, acquired, forced, released atomic.Int64
	overdrawn                        atomic.Bool // released more than charged at some point
}

func (b *countingBudget) TryAcquire(n int64) bool {
	b.acquired.Add(n)
	b.used.Add(n)
	return true
}

func (b *countingBudget) Acquire(ctx context.Context, n int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.TryAcquire(n)
	return nil
}

func (b *countingBudget) Force(n int64) {
	b.forced.Add(n)
	b.used.Add(n)
}

func (b *countingBudget) Release(n int64) {
	b.released.Add(n)
	if b.used.Add(-n) < 0 {
		b.overdrawn.Store(true)
	}
}

// TestCustomMemoryBudget: a budget passed in Config.Memory is charged for
// the frames and the decoded batches (their decompressed size), and gets
// everything back once the connections are gone.
func TestCustomMemoryBudget(t *testing.T) {
	t.Parallel()
	budget := &countingBudget{}
	env := kafkatest.StartServer(t, kafkaproto.Config{Memory: budget})
	const (
		n    = 20
		size = 10 << 10
	)
	value := bytes.Repeat([]byte("compressible "), size/13)
	for _, compression := range []kgo.CompressionCodec{kgo.Lz4Compression(), kgo.ZstdCompression(), kgo.NoCompression()} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.DefaultProduceTopic(kafkatest.Topic),
			kgo.ProducerBatchCompression(compression))
		require.NoError(t, err)
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Value: value})
		}
		require.NoError(t, cl.ProduceSync(kafkatest.Context(t), recs...).FirstErr())
		cl.Close()
	}
	env.WaitRecords(t, 3*n)
	require.NoError(t, env.Srv.Shutdown(kafkatest.Context(t)))

	assert.Positive(t, budget.acquired.Load(), "frames reserve from the budget")
	assert.GreaterOrEqual(t, budget.forced.Load(), int64(3*n*len(value)), "every batch is charged at least its records")
	assert.Zero(t, budget.used.Load())
	assert.Equal(t, budget.acquired.Load()+budget.forced.Load(), budget.released.Load())
	assert.False(t, budget.overdrawn.Load())
	assert.Zero(t, env.MetricValue(t, budgetBytes))
}
