package produce

import (
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/writertest"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

const eventAvro = `{"type": "record", "name": "Event", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}`

// registryBridge is a bridge with one avro route over a table (id, name)
// and a registry client on reg; the writer is not running.
func registryBridge(t *testing.T, reg *srfake.Registry) (*Path, *writertest.Writer, *Metrics) {
	t.Helper()
	rs, err := mapping.NewRoutes([]mapping.RouteSpec{{
		Topic: "events", Table: fluss.TablePath{Database: "db", Table: "events"},
		Value: mapping.ValueSpec{Format: mapping.ValueAvro},
	}})
	require.NoError(t, err)
	info := &fluss.TableInfo{TableID: 7, Path: fluss.TablePath{Database: "db", Table: "events"}, Descriptor: fluss.TableDescriptor{
		Schema:      fluss.Schema{Columns: []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "name", Type: fluss.String()}}},
		BucketCount: 1,
	}}
	infos := map[fluss.TablePath]*fluss.TableInfo{info.Path: info}
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	cfg := writertest.Defaults()
	cfg.Linger = time.Hour
	w, err := writertest.New(cfg, failingTransport{code: 36})
	require.NoError(t, err)
	t.Cleanup(func() { writertest.Shut(t, w) })
	pc := NewPartitionCache(fakePartitions{})
	st, err := NewTableRegistry(w.Accumulator, pc).Bind(bound, infos, nil)
	require.NoError(t, err)
	m := NewMetrics(prometheus.NewRegistry())
	s := New(w.Accumulator, pc, nil, m, slog.New(slog.DiscardHandler))
	rc := schemaregistry.DefaultConfig()
	rc.URLs, rc.RequestTimeout = []string{reg.URL()}, 30*time.Second // the fake answers at once; no test waits for it to time out
	s.Registry, err = schemaregistry.New(rc)
	require.NoError(t, err)
	s.SetState(st)
	return s, w, m
}

// confluentAvro frames an Event as Confluent's serializer does.
func confluentAvro(t *testing.T, id int, v map[string]any) []byte {
	t.Helper()
	payload, err := avro.Marshal(avro.MustParse(eventAvro), v)
	require.NoError(t, err)
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

func awaitWrite(t *testing.T, w kafkaproto.PartitionWrite) kafkaproto.PartitionResult {
	t.Helper()
	select {
	case <-w.Done():
		return w.Result()
	case <-time.After(time.Minute):
		t.Fatal("write not complete after a minute")
		return kafkaproto.PartitionResult{}
	}
}

// TestRegistryRecordsFetchOffTheReaderThenFromCache: the first batch of a
// writer schema waits for its fetch off the read goroutine; later batches
// are converted at once from the cache; one fetch however many batches.
func TestRegistryRecordsFetchOffTheReaderThenFromCache(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("events-value", 1, 11, sr.Schema{Schema: eventAvro})
	var fetches atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		fetches.Add(1)
		return false
	})
	s, w, _ := registryBridge(t, reg)
	batch := func(ids ...int64) *kafkaproto.PartitionProduce {
		req := &kafkaproto.PartitionProduce{Topic: "events", Acks: -1, ProducerID: -1, BaseSequence: -1}
		for i, id := range ids {
			req.Records = append(req.Records, kafkaproto.Record{Index: int32(i), OffsetDelta: int32(i),
				Value: confluentAvro(t, 11, map[string]any{"id": id, "name": "n"})})
		}
		return req
	}
	first, err := s.Produce(t.Context(), batch(1, 2))
	require.NoError(t, err)
	require.NoError(t, s.Drain(t.Context()))
	assert.Equal(t, 1, w.Incomplete(), "the first batch is appended once its schema is fetched")
	select {
	case <-first.Done():
		t.Fatal("acknowledged before Fluss acked (the writer is not running)")
	default:
	}
	assert.False(t, s.pending.busy(mergedQueue(TopicPartition{"events", 0})))
	// From the cache: converted and appended within Produce.
	_, err = s.Produce(t.Context(), batch(3))
	require.NoError(t, err)
	assert.False(t, s.pending.busy(mergedQueue(TopicPartition{"events", 0})), "a cached schema needs no queue")
	assert.EqualValues(t, 1, fetches.Load(), "one registry request for the schema")
	assert.Equal(t, 1, w.Incomplete(), "both batches share the open Fluss batch")
}

// TestRegistryUnknownSchemaIsABadRecord: an id the registry does not know
// rejects the batch with INVALID_RECORD naming the record; nothing written.
func TestRegistryUnknownSchemaIsABadRecord(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("events-value", 1, 11, sr.Schema{Schema: eventAvro})
	s, w, _ := registryBridge(t, reg)
	req := &kafkaproto.PartitionProduce{Topic: "events", Acks: -1, ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{
		{Index: 0, Value: confluentAvro(t, 11, map[string]any{"id": int64(1), "name": "ok"})},
		{Index: 1, OffsetDelta: 1, Value: confluentAvro(t, 999, map[string]any{"id": int64(2), "name": "unknown id"})},
	}}
	pw, err := s.Produce(t.Context(), req)
	require.NoError(t, err, "schemas are fetched off the read goroutine")
	res := awaitWrite(t, pw)
	var re *kafkaproto.RecordsError
	require.ErrorAs(t, res.Err, &re)
	require.Len(t, re.Records, 1)
	assert.EqualValues(t, 1, re.Records[0].Index)
	assert.Contains(t, re.Records[0].Message, "unknown schema")
	assert.Zero(t, w.Incomplete(), "nothing of the batch is written")
}

// TestRegistryDownIsRetriable: a registry that fails refuses the batch with
// REQUEST_TIMED_OUT (the producer retries), writes nothing, and counts it;
// once it answers, the same batch goes through.
func TestRegistryDownIsRetriable(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("events-value", 1, 11, sr.Schema{Schema: eventAvro})
	var down atomic.Bool
	down.Store(true)
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	s, w, m := registryBridge(t, reg)
	req := &kafkaproto.PartitionProduce{Topic: "events", Acks: -1, ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{
		{Index: 0, Value: confluentAvro(t, 11, map[string]any{"id": int64(1), "name": "a"})},
	}}
	pw, err := s.Produce(t.Context(), req)
	require.NoError(t, err)
	res := awaitWrite(t, pw)
	assert.ErrorIs(t, res.Err, kafkaproto.ErrRequestTimedOut)
	assert.Zero(t, w.Incomplete())
	assert.InDelta(t, 1, testutil.ToFloat64(m.registryDown.WithLabelValues("events")), 0)

	down.Store(false)
	_, err = s.Produce(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, s.Drain(t.Context()))
	assert.Equal(t, 1, w.Incomplete(), "the retry is written once the registry answers")
}

// TestRegistryGUIDHeader: Confluent Platform 8's header mode — the raw Avro
// payload with the schema GUID in the __value_schema_id header — resolves
// through the registry's /schemas/guids/ and lands (srfake issues GUIDs;
// Apicurio 3.3.3 does not).
func TestRegistryGUIDHeader(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("events-value", 1, 11, sr.Schema{Schema: eventAvro})
	s, w, _ := registryBridge(t, reg)
	latest, err := s.Registry.LatestSchema(t.Context(), "events-value")
	require.NoError(t, err)
	require.NotEmpty(t, latest.GUID, "srfake lists the schema's GUID")
	guid, err := hex.DecodeString(strings.ReplaceAll(latest.GUID, "-", ""))
	require.NoError(t, err)
	payload, err := avro.Marshal(avro.MustParse(eventAvro), map[string]any{"id": int64(5), "name": "guid"})
	require.NoError(t, err)
	req := &kafkaproto.PartitionProduce{Topic: "events", Acks: -1, ProducerID: -1, BaseSequence: -1, Records: []kafkaproto.Record{{
		Value: payload, Headers: []kafkaproto.Header{{Key: "__value_schema_id", Value: append([]byte{1}, guid...)}},
	}}}
	pw, err := s.Produce(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, s.Drain(t.Context()))
	assert.Equal(t, 1, w.Incomplete(), "the record resolved by GUID is appended")
	select {
	case <-pw.Done():
		t.Fatalf("completed before Fluss acked: %v", pw.Result().Err)
	default:
	}
}
