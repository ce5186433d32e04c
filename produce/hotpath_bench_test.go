package produce

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/writertest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// The hot path of a Produce without the network: kafkaproto's decoder, the
// bridge (configs/gateway.yaml's routes over exampleTables) and a running
// writer whose transport acknowledges every request at once. The tables'
// Arrow codec is NONE: compression towards Fluss is measured elsewhere.

// hotRecords is the number of records of one Kafka batch.
const hotRecords = 500

// hotRoutes are the routes measured: JSON values into a log table (with
// a dead-letter table) and raw values with key, topic and headers (as
// JSON) columns; the raw route's records carry a header.
var hotRoutes = []struct {
	name, topic string
	value       func(i int) []byte // about 100 bytes
	headers     bool
}{
	{"json", "orders", func(i int) []byte {
		return []byte(`{"order_id": ` + strconv.Itoa(100000+i) + `, "customer": {"name": "customer-` + strconv.Itoa(i%1000) +
			`"}, "amount": "123.45", "created_at": 1704164645000}`)
	}, false},
	{"raw", "logs.app", func(i int) []byte {
		return []byte(`2024-01-02T03:04:05.678Z INFO request ` + strconv.Itoa(100000+i) + ` served in 12 ms from 10.0.0.1 to 10.0.0.2 ok`)
	}, true},
}

var hotCodecs = []kafkaproto.Codec{kafkaproto.CodecNone, kafkaproto.CodecLZ4, kafkaproto.CodecZstd}

// hotPath is one bridge over a running writer, and a decoder.
type hotPath struct {
	s   *Path
	dec *kafkaproto.Decoder
}

func newHotPath(tb testing.TB) *hotPath {
	tb.Helper()
	cfg, err := configs.Load(filepath.Join("..", "configs", "gateway.yaml"))
	require.NoError(tb, err)
	rs, err := mapping.NewRoutes(cfg.Routes)
	require.NoError(tb, err)
	infos := exampleTables()
	id := int64(100)
	for _, info := range infos {
		info.TableID, id = id, id+1
		info.Descriptor.Properties = map[string]string{fluss.PropArrowCompression: string(fluss.ArrowCompressionNone)}
	}
	bound, err := rs.Bind(infos)
	require.NoError(tb, err)
	wcfg := writertest.Defaults()
	wcfg.Linger = time.Millisecond
	w, err := writertest.New(wcfg, writertest.AckTransport{})
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	tb.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = w.Close(cctx)
		cancel()
		<-done
	})
	pc := NewPartitionCache(fakePartitions{})
	st, err := NewTableRegistry(w.Accumulator, pc).Bind(bound, infos, nil)
	require.NoError(tb, err)
	s := New(w.Accumulator, pc, nil, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	s.state.Store(st)
	dec, err := kafkaproto.NewDecoder(64 << 20)
	require.NoError(tb, err)
	tb.Cleanup(dec.Close)
	return &hotPath{s: s, dec: dec}
}

// kafkaBatch encodes n records as a Kafka RecordBatch v2 the way franz-go
// does (lz4 frames with its default options, zstd EncodeAll).
func kafkaBatch(tb testing.TB, codec kafkaproto.Codec, n int, value func(int) []byte, headers bool) []byte {
	tb.Helper()
	var raw []byte
	for i := range n {
		var body []byte
		body = append(body, 0)
		body = kbin.AppendVarlong(body, int64(i))
		body = kbin.AppendVarint(body, int32(i))
		body = kbin.AppendVarintBytes(body, []byte("key-"+strconv.Itoa(i)))
		body = kbin.AppendVarintBytes(body, value(i))
		if headers {
			body = kbin.AppendVarint(body, 1)
			body = kbin.AppendVarintString(body, "trace-id")
			body = kbin.AppendVarintBytes(body, []byte(strconv.Itoa(7*i)))
		} else {
			body = kbin.AppendVarint(body, 0)
		}
		raw = kbin.AppendVarint(raw, int32(len(body)))
		raw = append(raw, body...)
	}
	switch codec {
	case kafkaproto.CodecLZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		_, err := w.Write(raw)
		require.NoError(tb, err)
		require.NoError(tb, w.Close())
		raw = buf.Bytes()
	case kafkaproto.CodecZstd:
		e, err := zstd.NewWriter(nil)
		require.NoError(tb, err)
		raw = e.EncodeAll(raw, nil)
		require.NoError(tb, e.Close())
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec),
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       1_704_164_645_000,
		MaxTimestamp:         1_704_164_645_000 + int64(n),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              raw,
	}
	rb.Length = int32(49 + len(raw))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// hotStage is how far one iteration goes.
type hotStage int

const (
	stageDecode  hotStage = iota // decode and release the batch
	stageConvert                 // decode, convert every record, release
	stageAppend                  // decode, bridge.Produce (convert, append), release
)

func (s hotStage) String() string {
	return [...]string{"decode", "decode+convert", "decode+convert+append"}[s]
}

// hotLoop is one route and codec: the batch bytes and what an iteration
// needs, reused from iteration to iteration.
type hotLoop struct {
	h     *hotPath
	route *mapping.Route
	data  []byte
	req   kafkaproto.PartitionProduce
	// Writes not known to be complete, oldest first: like a connection's
	// in-flight window, the oldest is waited for before a new one.
	inflight []kafkaproto.PartitionWrite
}

const hotInFlight = 5

func (h *hotPath) loop(tb testing.TB, topic string, codec kafkaproto.Codec, value func(int) []byte, headers bool) *hotLoop {
	tb.Helper()
	route, ok := h.s.state.Load().Routes.Resolve(topic)
	require.True(tb, ok, "route for %s", topic)
	return &hotLoop{h: h, route: route, data: kafkaBatch(tb, codec, hotRecords, value, headers),
		req: kafkaproto.PartitionProduce{Topic: topic, Acks: -1, ProducerID: -1, BaseSequence: -1}}
}

// run does one iteration.
func (l *hotLoop) run(tb testing.TB, stage hotStage) {
	batch, err := l.h.dec.Decode(l.data, 9)
	if err != nil {
		tb.Fatal(err)
	}
	l.req.Codec, l.req.WireBytes, l.req.Records = batch.Codec, len(l.data), batch.Records
	switch stage {
	case stageConvert:
		cb := l.h.s.getBatch(len(l.req.Records))
		if err := l.h.s.convert(l.route, &l.req, cb); err != nil {
			tb.Fatal(err)
		}
		l.h.s.putBatch(cb)
	case stageAppend:
		if len(l.inflight) == hotInFlight {
			w := l.inflight[0]
			<-w.Done()
			if err := w.Result().Err; err != nil {
				tb.Fatal(err)
			}
			l.inflight = append(l.inflight[:0], l.inflight[1:]...)
		}
		// Neither route needs a Fluss partition nor a registry schema:
		// Produce converts and appends before it returns (the writer
		// copies the rows), so the batch may be released at once.
		w, err := l.h.s.Produce(context.Background(), &l.req)
		if err != nil {
			tb.Fatal(err)
		}
		l.inflight = append(l.inflight, w)
	}
	l.req.Records = nil
	batch.Release()
}

// drain waits for every write in flight.
func (l *hotLoop) drain(tb testing.TB) {
	for _, w := range l.inflight {
		<-w.Done()
		if err := w.Result().Err; err != nil {
			tb.Fatal(err)
		}
	}
	l.inflight = l.inflight[:0]
}

// BenchmarkHotPath measures decode → convert → append per route and codec
// (500 records of about 100 bytes), each stage against decoding alone.
// allocs/record and B/record count every goroutine, the writer's sender
// included.
func BenchmarkHotPath(b *testing.B) {
	h := newHotPath(b)
	for _, rt := range hotRoutes {
		for _, codec := range hotCodecs {
			var decodeNs float64
			for _, stage := range []hotStage{stageDecode, stageConvert, stageAppend} {
				b.Run(rt.name+"/"+codec.String()+"/"+stage.String(), func(b *testing.B) {
					l := h.loop(b, rt.topic, codec, rt.value, rt.headers)
					for range 20 { // warm the pools
						l.run(b, stage)
					}
					l.drain(b)
					b.SetBytes(int64(len(l.data)))
					b.ReportAllocs()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					for b.Loop() {
						l.run(b, stage)
					}
					l.drain(b)
					runtime.ReadMemStats(&after)
					n := float64(b.N) * hotRecords
					ns := float64(b.Elapsed().Nanoseconds()) / n
					b.ReportMetric(ns, "ns/record")
					b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/record")
					b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/record")
					if stage == stageDecode {
						decodeNs = ns
					} else if decodeNs > 0 {
						b.ReportMetric(ns/decodeNs, "x-decode")
					}
				})
			}
		}
	}
}

// raceEnabled reports a -race build, in which sync.Pool drops a quarter of
// what it is given.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestHotPathAllocs pins the steady state of the produce path. Decoding and
// converting a batch allocate nothing (the decoder's buffers, the route's
// Rows and the bridge's convBatch are reused); with the append, what is
// left is per Fluss batch (the writer's and the completion's), far below
// one allocation per record.
func TestHotPathAllocs(t *testing.T) {
	h := newHotPath(t)
	for _, rt := range hotRoutes {
		for _, codec := range hotCodecs {
			t.Run(rt.name+"/"+codec.String(), func(t *testing.T) {
				l := h.loop(t, rt.topic, codec, rt.value, rt.headers)
				for _, tc := range []struct {
					stage hotStage
					// allocations per batch of hotRecords records
					limit, raceLimit float64
				}{
					// Under -race sync.Pools drop some of what they are
					// given: the bridge's convBatch (four slices) and
					// klauspost's zstd internals allocate again.
					{stageConvert, 0, 10},
					{stageAppend, 0.05 * hotRecords, 0.1 * hotRecords},
				} {
					for range 20 {
						l.run(t, tc.stage)
					}
					l.drain(t)
					allocs := testing.AllocsPerRun(50, func() { l.run(t, tc.stage) })
					l.drain(t)
					limit := tc.limit
					if raceEnabled() {
						limit = tc.raceLimit
					}
					t.Logf("%s: %.0f allocations per batch of %d records", tc.stage, allocs, hotRecords)
					assert.LessOrEqual(t, allocs, limit, "%s: allocations per batch of %d records", tc.stage, hotRecords)
				}
			})
		}
	}
}

// TestHotPathConverts: the measured batches convert as intended (no record
// goes to the dead-letter table), so the benchmark measures the routes and
// not their error path.
func TestHotPathConverts(t *testing.T) {
	h := newHotPath(t)
	for _, rt := range hotRoutes {
		l := h.loop(t, rt.topic, kafkaproto.CodecLZ4, rt.value, rt.headers)
		batch, err := h.dec.Decode(l.data, 9)
		require.NoError(t, err)
		l.req.Records = batch.Records
		cb := h.s.getBatch(len(batch.Records))
		require.NoError(t, h.s.convert(l.route, &l.req, cb))
		require.Len(t, cb.convs, hotRecords)
		schema := l.route.Converter().Schema()
		for i := range cb.convs {
			require.False(t, cb.dead[i], "record %d went to the dead-letter table", i)
		}
		row := cb.convs[7].Row
		col := func(name string) fluss.Datum {
			for i, c := range schema.Columns {
				if c.Name == name {
					return row[i]
				}
			}
			t.Fatalf("no column %s", name)
			return fluss.Datum{}
		}
		switch rt.name {
		case "json":
			require.Equal(t, "customer-7", string(col("customer").B))
			require.Equal(t, int64(100007), col("order_id").I)
		case "raw":
			require.Equal(t, string(rt.value(7)), string(col("payload").B))
			require.JSONEq(t, `{"trace-id": "49"}`, string(col("headers").B))
			require.Equal(t, "key-7", string(col("kafka_key").B))
		}
		h.s.putBatch(cb)
		batch.Release()
	}
}
