package kafkaproto

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSink accepts everything at offset 0.
type fuzzSink struct{}

func (fuzzSink) Produce(context.Context, *PartitionProduce) (PartitionWrite, error) {
	return Completed(PartitionResult{LogAppendTime: -1}), nil
}

type fuzzTopics struct{}

func (fuzzTopics) Topic(name string) (int32, bool) { return 4, name == "t" }
func (fuzzTopics) AllTopics() []TopicInfo          { return []TopicInfo{{Name: "t", Partitions: 4}} }

type fuzzPIDs struct{}

func (fuzzPIDs) NextProducerID(context.Context) (int64, error) { return 1, nil }

// requestSeeds are valid (and a few invalid) request streams.
func requestSeeds() [][]byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	frame := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		return f.AppendRequest(nil, req, 1)
	}
	produce := func(v int16, b TestBatch) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 1000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = 1
		p.Records = b.Build()
		tp.Partitions = []kmsg.ProduceRequestTopicPartition{p}
		req.Topics = []kmsg.ProduceRequestTopic{tp}
		return frame(req, v)
	}
	api := kmsg.NewPtrApiVersionsRequest()
	api.ClientSoftwareName, api.ClientSoftwareVersion = "fuzz", "1"
	mdNamed := kmsg.NewPtrMetadataRequest()
	mdNamed.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("x")}}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g"}
	fetch := kmsg.NewPtrFetchRequest()
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	seeds := [][]byte{
		frame(api, 0), frame(api, 3), frame(api, 4), frame(api, 5),
		frame(kmsg.NewPtrMetadataRequest(), 1), frame(mdNamed, 4), frame(mdNamed, 12),
		frame(kmsg.NewPtrInitProducerIDRequest(), 0), frame(kmsg.NewPtrInitProducerIDRequest(), 4),
		frame(fc, 0), frame(fc, 4), frame(fetch, 4), frame(fetch, 12), frame(hs, 1),
		produce(3, TestBatch{ProducerID: -1, BaseSequence: -1, Codec: CodecGzip, Records: SimpleRecords(3)}),
		produce(7, TestBatch{ProducerID: -1, BaseSequence: -1, Records: SimpleRecords(2)}),
		produce(9, TestBatch{ProducerID: 5, BaseSequence: 0, Codec: CodecSnappy, XerialSnappy: true, Records: SimpleRecords(4)}),
		produce(11, TestBatch{ProducerID: 5, BaseSequence: 4, Codec: CodecZstd, Records: SimpleRecords(2)}),
		produce(12, TestBatch{ProducerID: 5, BaseSequence: 6, Codec: CodecLZ4, Records: SimpleRecords(2)}),
		produce(2, TestBatch{ProducerID: -1, BaseSequence: -1, Records: SimpleRecords(1)}),
		{0xff, 0xff, 0xff, 0xf0},
		{0, 0, 0, 10, 3, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff},
	}
	seeds = append(seeds, append(frame(api, 3), frame(mdNamed, 9)...)) // pipelined
	return seeds
}

func batchSeeds() [][]byte {
	recs := []Record{{Key: nil, Value: []byte("v")}, {Key: []byte{}, Value: nil, Headers: []Header{{Key: "h", Value: nil}}}}
	var seeds [][]byte
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		seeds = append(seeds, TestBatch{ProducerID: -1, BaseSequence: -1, Codec: c, Records: recs}.Build())
	}
	seeds = append(seeds,
		TestBatch{ProducerID: 9, ProducerEpoch: 1, BaseSequence: 100, Codec: CodecSnappy, XerialSnappy: true, Records: SimpleRecords(5)}.Build(),
		TestBatch{ProducerID: -1, BaseSequence: -1, Attributes: attrControl, Records: SimpleRecords(1)}.Build(),
	)
	magic1 := TestBatch{ProducerID: -1, Records: SimpleRecords(1)}.Build()
	magic1[batchMagicOffset] = 1
	return append(seeds, magic1, magic1[:30])
}

// fuzzBackend joins the fuzz fakes.
type fuzzBackend struct {
	fuzzTopics
	fuzzSink
	fuzzPIDs
}

func newFuzzServer(tb testing.TB) (*Server, *conn) {
	s, err := New(Config{MaxFrameBytes: 1 << 16, MaxDecompressedBytes: 1 << 16, MaxMessageBytes: 1 << 16},
		fuzzBackend{}, WithRegisterer(prometheus.NewRegistry()))
	require.NoError(tb, err)
	a, b := net.Pipe()
	tb.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = s.Close() })
	return s, newConn(s, a)
}

// FuzzReadRequest feeds byte streams through framing, request parsing, the
// handlers and response encoding: nothing may panic, and a frame never
// exceeds its input.
func FuzzReadRequest(f *testing.F) {
	for _, s := range requestSeeds() {
		f.Add(s)
	}
	_, c := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c.auth = connAuth{authenticated: true}
		r := bytes.NewReader(data)
		for {
			frame, err := readFrame(r, c.s.cfg.MaxFrameBytes)
			if err != nil {
				return
			}
			if len(frame)+4 > len(data) {
				t.Fatalf("frame of %d bytes from %d input bytes", len(frame), len(data))
			}
			resp, closeConn := c.handleFrame(frame)
			if resp != nil && resp.msg != nil {
				if resp.produce != nil {
					c.awaitProduce(resp.produce)
				}
				_ = appendResponse(nil, resp.corr, resp.msg)
			}
			if closeConn {
				return
			}
		}
	})
}

// FuzzDecodeRecordBatch: decoding never panics, and a decoded batch has
// 1..n records with consistent indexes.
func FuzzDecodeRecordBatch(f *testing.F) {
	for _, s := range batchSeeds() {
		f.Add(s)
	}
	d, err := newBatchDecoder(1<<16, nil)
	require.NoError(f, err)
	f.Cleanup(d.close)
	check := func(t *testing.T, data []byte) {
		b, err := d.decode(data, 9)
		if err != nil {
			if errorCode(err) <= 0 {
				t.Fatalf("decode error without a kafka code: %v", err)
			}
			return
		}
		if len(b.Records) == 0 {
			t.Fatal("decoded an empty batch")
		}
		for i, r := range b.Records {
			if r.Index != int32(i) {
				t.Fatalf("record %d has index %d", i, r.Index)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		// Again with a valid CRC, so mutations reach the record parser.
		if len(data) >= batchHeaderLen {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[batchCRCOffset:], crc32Checksum(fixed[batchAttrOffset:]))
			check(t, fixed)
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz from the seed functions when
// KAFKAPROTO_WRITE_FUZZ_SEEDS=1; otherwise it checks the corpus exists.
func TestWriteFuzzSeeds(t *testing.T) {
	for name, seeds := range map[string][][]byte{"FuzzReadRequest": requestSeeds(), "FuzzDecodeRecordBatch": batchSeeds()} {
		dir := filepath.Join("testdata", "fuzz", name)
		if os.Getenv("KAFKAPROTO_WRITE_FUZZ_SEEDS") == "" {
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(entries), len(seeds), "checked-in corpus for %s", name)
			continue
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644))
		}
	}
}
