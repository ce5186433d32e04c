package kafkaproto_test

import (
	"encoding/binary"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

func frameHeader(size int32, key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return b
}

// rawFrame builds a frame with a computed size; body starts with the client id.
func rawFrame(key, version int16, body ...byte) []byte {
	return append(frameHeader(int32(8+len(body)), key, version, 1), body...)
}

// TestHostileInput: each bad connection is closed (or answered with an
// error) while an established connection keeps working.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{MaxFrameBytes: 2 << 20})
	bystander := dialRaw(t, env.Addr)
	pid := initProducerID(t, bystander)
	seq := int32(0)
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"oversized frame", frameHeader(2<<20+1, 0, 9, 1)},
		{"huge frame", binary.BigEndian.AppendUint32(nil, 0x7fffffff)},
		{"negative length", binary.BigEndian.AppendUint32(nil, 0xfffffff0)},
		{"tls client hello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}},
		{"unknown api key", rawFrame(999, 0, 0xff, 0xff)},
		{"telemetry key not advertised", rawFrame(71, 0, 0xff, 0xff)},
		{"produce v13 not advertised", rawFrame(0, 13, 0xff, 0xff)},
		{"fetch v3 below range", rawFrame(1, 3, 0xff, 0xff)},
		{"truncated header", frameHeader(6, 3, 1, 1)[:10]},
		{"malformed metadata body", rawFrame(3, 4, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff)},
		{"malformed client id", rawFrame(3, 4, 0x7f, 0xff, 0, 0)},
		{"malformed produce body", rawFrame(0, 9, 0xff, 0xff, 0, 0, 1, 0, 0, 0, 0xff, 0xff)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, env.Addr)
			c.write(tc.bytes)
			c.expectClosed()
			// The established connection still produces.
			p := onlyPartition(t, bystander.roundTrip(produceRequest(9, -1, kafkatest.Topic, 0, batch(pid, 0, seq, 1))))
			require.Equal(t, int16(0), p.ErrorCode)
			seq++
			checkAlive(t, env.Addr)
		})
	}
	assert.Equal(t, int(seq), env.Sink.TotalRecords())
}

// TestClientStopsReading: a client that pipelines requests but never reads
// is disconnected after the write timeout; others are unaffected.
func TestClientStopsReading(t *testing.T) {
	t.Parallel()
	closed := newLogSignal("closing connection: write response")
	env := kafkatest.StartServer(t, kafkaproto.Config{WriteTimeout: 200 * time.Millisecond, MaxInFlightRequests: 4},
		kafkaproto.WithLogger(slog.New(closed)))
	env.Topics.Set("big", 40000) // ~1 MB Metadata responses
	c := dialRaw(t, env.Addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 4
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("big")}}
	for range 40 {
		c.send(req)
	}
	checkAlive(t, env.Addr)
	select {
	case <-closed.ch:
	case <-kafkatest.Context(t).Done():
		t.Fatal("the server did not give up on the client that stopped reading")
	}
	c.expectClosed()
	checkAlive(t, env.Addr)
}

// TestShutdownWaitsForInflightProduce: Shutdown lets a pending produce finish.
func TestShutdownWaitsForInflightProduce(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	env.Sink.Hold()
	c := dialRaw(t, env.Addr)
	corr := c.send(produceRequest(9, -1, kafkatest.Topic, 0, batch(-1, 0, -1, 2)))
	require.NoError(t, env.Sink.WaitFor(kafkatest.Context(t), func(s *kafkatest.Sink) bool { return s.Held() == 1 }))
	done := make(chan error, 1)
	go func() { done <- env.Srv.Shutdown(kafkatest.Context(t)) }()
	env.Sink.Release(nil)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	c.recv(corr, resp)
	assert.Equal(t, int16(0), onlyPartition(t, resp).ErrorCode)
	require.NoError(t, <-done)
	c.expectClosed()
}
