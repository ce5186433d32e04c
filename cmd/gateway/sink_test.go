package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// fakePartitions resolves partition names from a map; others fail.
type fakePartitions map[string]int64

func (f fakePartitions) EnsurePartition(_ context.Context, _ fluss.TablePath, spec fluss.PartitionSpec) (int64, error) {
	if id, ok := f[spec[0].Value]; ok {
		return id, nil
	}
	return 0, errors.New("create partition refused")
}

// exampleSink binds configs/gateway.yaml's routes to exampleTables and
// returns a sink over a fresh accumulator (no sender).
func exampleSink(t *testing.T, parts partitionSource) (*sink, *accumulator.Accumulator) {
	t.Helper()
	cfg, err := configs.Load(filepath.Join("..", "..", "configs", "gateway.yaml"))
	require.NoError(t, err)
	specs, err := routeSpecs(cfg.Routes)
	require.NoError(t, err)
	rs, err := mapping.NewRoutes(specs)
	require.NoError(t, err)
	infos := exampleTables()
	id := int64(100)
	for _, info := range infos {
		info.TableID, id = id, id+1
	}
	bound, err := rs.Bind(infos)
	require.NoError(t, err)
	acc, err := accumulator.New(accumulator.Config{Linger: time.Hour})
	require.NoError(t, err)
	st, err := newTableRegistry(acc).state(bound, infos)
	require.NoError(t, err)
	s := newSink(acc, newPartitionCache(parts), nil, newGatewayMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	s.state.Store(st)
	return s, acc
}

// TestProduceSpanningPartitionsIsAtomic: a Kafka batch whose records fall
// into two Fluss partitions, the second of which cannot be resolved, fails
// without writing any of its records (a retry would duplicate them).
func TestProduceSpanningPartitionsIsAtomic(t *testing.T) {
	t.Parallel()
	s, acc := exampleSink(t, fakePartitions{"20240102": 1})
	day := int64(24 * 3600 * 1000)
	req := &kafkaproto.PartitionProduce{
		Topic: "clicks", Partition: 0, Acks: -1, ProducerID: -1, BaseSequence: -1,
		Records: []kafkaproto.Record{
			{Index: 0, Timestamp: 1_704_164_645_000, Value: []byte(`{"user_id": 1}`)},
			{Index: 1, OffsetDelta: 1, Timestamp: 1_704_164_645_000 + day, Value: []byte(`{"user_id": 2}`)},
		},
	}
	_, err := s.Produce(t.Context(), req)
	require.Error(t, err)
	assert.Equal(t, 0, acc.Incomplete(), "no record of the failed batch is queued")
	assert.Zero(t, acc.BufferedBytes())
}
