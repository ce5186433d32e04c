package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Integration, on a real Fluss: the transactions table is created as a
// first_row table, a second write of a row's key does not replace it, and
// InitProducerId races between instances (each with its own client and
// writer, as separate gateway processes) never hand one epoch to two
// producers: every success holds its own claim, and the claims read back
// are exactly the successes.
func TestIntegrationTxnClaims(t *testing.T) {
	addr := flusstest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	path := fluss.TablePath{Database: "gateway_it_" + hex.EncodeToString(b[:]), Table: "transactions"}

	const instances = 4
	claims := make([]*txnClaims, instances)
	var tables []*txnTable
	for i := range instances {
		c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(addr, ",")})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		w, err := newTestWriter(testWriterDefaults(), c)
		require.NoError(t, err)
		runErr := make(chan error, 1)
		go func() { runErr <- w.Run(context.Background()) }()
		t.Cleanup(func() {
			assert.NoError(t, w.Close(context.Background()))
			assert.NoError(t, <-runErr)
		})
		tab := newTxnTable(c, w.Accumulator, path)
		tables = append(tables, tab)
		claims[i] = newTxnClaims(tab, newProducerIDs(c, 30*time.Second, time.Minute, newOutageLog(slog.New(slog.DiscardHandler), "down", "up", time.Second, nil), nil), time.Hour, nil)
		if i == 0 {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := c.DropDatabase(ctx, path.Database, true, true); err != nil {
					t.Logf("drop database %s: %v", path.Database, err)
				}
			})
		}
	}
	require.NoError(t, tables[0].open(ctx), "creates the table")
	info, err := tables[0].src.TableInfo(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, "first_row", info.Descriptor.Properties["table.merge-engine"])

	// first_row: the first write of a key stands.
	first := &txnRow{id: "probe", key: txnKey{claim: 7, txn: 3}, producerID: 1, writtenBy: 11, outcome: "commit", reason: "first"}
	require.NoError(t, tables[1].insert(ctx, first))
	second := *first
	second.writtenBy, second.outcome, second.reason = 22, "abort", "second"
	require.NoError(t, tables[2].insert(ctx, &second))
	got, err := tables[3].get(ctx, "probe", []txnKey{{claim: 7, txn: 3}, {claim: 7, txn: 4}})
	require.NoError(t, err)
	require.NotNil(t, got[0])
	assert.Equal(t, *first, *got[0], "the first row stands")
	assert.Nil(t, got[1], "a key never written")

	// Racing InitProducerIds of a few ids, from every instance at once.
	ids := []string{"flink-sink-0-1", "flink-sink-1-1", "orders-tx"}
	const perInstance = 6
	type success struct {
		pid   int64
		epoch int16
	}
	var mu sync.Mutex
	won := map[string][]success{}
	var conflicts int
	var wg sync.WaitGroup
	for i := range instances {
		for _, id := range ids {
			wg.Go(func() {
				for range perInstance {
					for {
						pid, epoch, err := claims[i].init(ctx, id, 60_000, -1, -1)
						if errors.Is(err, kafkaproto.ErrConcurrentTransactions) {
							mu.Lock()
							conflicts++
							mu.Unlock()
							continue
						}
						if !assert.NoError(t, err) {
							return
						}
						mu.Lock()
						won[id] = append(won[id], success{pid, epoch})
						mu.Unlock()
						break
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d lost races answered CONCURRENT_TRANSACTIONS", conflicts)
	for _, id := range ids {
		got := won[id]
		require.Len(t, got, instances*perInstance, id)
		seen := map[success]bool{}
		pid := got[0].pid
		for _, s := range got {
			assert.False(t, seen[s], "%s: producer id %d epoch %d handed out twice", id, s.pid, s.epoch)
			seen[s] = true
			assert.Equal(t, pid, s.pid, "%s keeps its producer id", id)
		}
		cur, err := claims[0].current(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, cur)
		assert.Equal(t, int64(len(got)-1), cur.key.claim, "%s: claims 0..%d, one per success", id, len(got)-1)
		for e := range int16(len(got)) {
			assert.True(t, seen[success{pid, e}], fmt.Sprintf("%s: epoch %d was handed out", id, e))
		}
	}
	// The newest epoch fences the others: a KIP-360 bump from an older
	// pair is refused.
	cur, err := claims[1].current(ctx, ids[0])
	require.NoError(t, err)
	_, _, err = claims[2].init(ctx, ids[0], 60_000, cur.producerID, cur.epoch-2)
	assert.ErrorIs(t, err, kafkaproto.ErrProducerFenced)
	_, epoch, err := claims[2].init(ctx, ids[0], 60_000, cur.producerID, cur.epoch)
	require.NoError(t, err)
	assert.Equal(t, cur.epoch+1, epoch)
}
