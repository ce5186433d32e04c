package kafkaproto_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// rawConn speaks the Kafka protocol with hand-built kmsg requests.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// send writes req and returns its correlation id.
func (r *rawConn) send(req kmsg.Request) int32 {
	r.t.Helper()
	r.corr++
	buf := r.f.AppendRequest(nil, req, r.corr)
	r.write(buf)
	return r.corr
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	require.NoError(r.t, r.c.SetWriteDeadline(time.Now().Add(time.Minute)))
	_, err := r.c.Write(b)
	require.NoError(r.t, err)
}

// readFrame reads one size-prefixed response frame.
func (r *rawConn) readFrame() ([]byte, error) {
	if err := r.c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r.c, buf)
	return buf, err
}

// recv reads the response to corr into resp (whose version must be set).
func (r *rawConn) recv(corr int32, resp kmsg.Response) {
	r.t.Helper()
	frame, err := r.readFrame()
	require.NoError(r.t, err)
	require.GreaterOrEqual(r.t, len(frame), 4)
	require.Equal(r.t, corr, int32(binary.BigEndian.Uint32(frame)), "correlation id")
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		require.Equal(r.t, byte(0), body[0], "response header tags")
		body = body[1:]
	}
	require.NoError(r.t, resp.ReadFrom(body))
}

// roundTrip sends req and returns its response.
func (r *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	corr := r.send(req)
	resp := req.ResponseKind()
	r.recv(corr, resp)
	return resp
}

// expectClosed asserts that the server closes the connection (after any
// responses already due, which are discarded).
func (r *rawConn) expectClosed() {
	r.t.Helper()
	require.NoError(r.t, r.c.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err := io.Copy(io.Discard, r.c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.t.Fatal("connection was not closed by the server")
	}
}

// checkAlive asserts that a fresh connection still gets answers.
func checkAlive(t *testing.T, addr string) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	resp := dialRaw(t, addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
}

// produceRequest builds a one-partition Produce request.
func produceRequest(version int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func onlyPartition(t *testing.T, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	require.Len(t, pr.Topics, 1)
	require.Len(t, pr.Topics[0].Partitions, 1)
	return pr.Topics[0].Partitions[0]
}

func batch(pid int64, epoch int16, seq int32, n int) []byte {
	return kafkaproto.TestBatch{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, BaseTimestamp: 1000,
		Records: kafkaproto.SimpleRecords(n)}.Build()
}
