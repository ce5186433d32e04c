package transactions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/fluss-kafka/gateway/internal/writertest"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Integration, on a real Fluss: the transactions table is created as a
// first_row table, a second write of a row's key does not replace it, and
// InitProducerId races between instances (each with its own client and
// writer, as separate gateway processes) never hand one epoch to two
// producers: every success holds its own claim, and the claims read back
// are exactly the successes.
// txnInstances gives n instances (each its own client and writer, as
// separate gateway processes) of one fresh transactions table.
func txnInstances(t *testing.T, ctx context.Context, instances int) ([]*txnTable, []*txnClaims, fluss.TablePath) {
	addr := flusstest.Bootstrap(t)
	var path fluss.TablePath
	claims := make([]*txnClaims, instances)
	var tables []*txnTable
	for i := range instances {
		c, w := itInstance(t, addr)
		if i == 0 {
			path = fluss.TablePath{Database: itDatabase(t, c), Table: "transactions"}
		}
		tab := newTxnTable(c, w.Accumulator, path)
		tables = append(tables, tab)
		claims[i] = newTxnClaims(tab, c, time.Hour, nil)
	}
	return tables, claims, path
}

// itInstance is one instance's Fluss client and running writer, as a
// gateway process has them, both closed when the test ends.
func itInstance(t *testing.T, addr string) (*fluss.Client, *writertest.Writer) {
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(addr, ",")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w, err := writertest.New(writertest.Defaults(), c)
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(context.Background()) }()
	t.Cleanup(func() {
		assert.NoError(t, w.Close(context.Background()))
		assert.NoError(t, <-runErr)
	})
	return c, w
}

// itDatabase names a fresh database for the test's tables, dropped through
// c when the test ends.
func itDatabase(t *testing.T, c *fluss.Client) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "gateway_it_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, db, true, true); err != nil {
			t.Logf("drop database %s: %v", db, err)
		}
	})
	return db
}

func TestIntegrationTxnClaims(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	const instances = 4
	tables, claims, path := txnInstances(t, ctx, instances)
	require.NoError(t, tables[0].Open(ctx), "creates the table")
	info, err := tables[0].Source.TableInfo(ctx, path)
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

// Integration, on a real Fluss: a commit on one instance races a new
// producer's InitProducerId and the settling of the old claim's open
// transaction on another, round after round. Both always read the same
// outcome: the commit is answered only if the settle found it committed
// (or nothing open); otherwise it is fenced and the settle aborted it.
func TestIntegrationTxnOutcomeRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	tables, claims, _ := txnInstances(t, ctx, 2)
	a := &txnLedger{claims: claims[0], rows: tables[0], now: time.Now}
	b := &txnLedger{claims: claims[1], rows: tables[1], now: time.Now}
	commits, aborts := 0, 0
	for round := range 12 {
		id := fmt.Sprintf("race-%d", round)
		pid, epoch, err := claims[0].init(ctx, id, 60_000, -1, -1)
		require.NoError(t, err)
		p := kafkaproto.TxnProducer{TransactionalID: id, ProducerID: pid, Epoch: epoch}
		_, err = a.begin(ctx, p, nil, noStaging)
		require.NoError(t, err)
		old, err := claims[1].current(ctx, id)
		require.NoError(t, err)
		var endErr, settleErr error
		var settled *txnRow
		commit := func() { _, _, endErr = a.end(ctx, p, true, noStaging) }
		successor := func() {
			// A new producer with the same id: its claim, then the old
			// claim's open transaction.
			if _, _, settleErr = claims[1].init(ctx, id, 60_000, -1, -1); settleErr == nil {
				settled, settleErr = b.settle(ctx, old)
			}
		}
		switch round % 3 {
		case 0: // the successor first: the commit is fenced
			successor()
			commit()
			require.Error(t, endErr, "round %d", round)
		case 1: // the commit first: nothing is left open
			commit()
			successor()
			require.NoError(t, endErr, "round %d", round)
		default:
			var wg sync.WaitGroup
			wg.Go(commit)
			wg.Go(successor)
			wg.Wait()
		}
		require.NoError(t, settleErr)
		if endErr == nil {
			commits++
			// The settle ran before or after the commit's row: it found
			// nothing open, or the commit.
			if settled != nil {
				assert.Equal(t, outcomeCommit, settled.outcome, "round %d", round)
			}
		} else {
			aborts++
			assert.ErrorIs(t, endErr, kafkaproto.ErrProducerFenced, "round %d", round)
			require.NotNil(t, settled, "round %d", round)
			assert.Equal(t, outcomeAbort, settled.outcome, "round %d", round)
		}
		out, err := a.rows.get(ctx, id, []txnKey{outcomeKey(0, 0)})
		require.NoError(t, err)
		require.NotNil(t, out[0])
		assert.Equal(t, endErr == nil, out[0].outcome == outcomeCommit, "round %d: the table agrees with the answer", round)
	}
	t.Logf("%d commits won, %d aborts won", commits, aborts)
}
