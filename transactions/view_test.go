package transactions

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/produce"
)

// The Admin views agree on which partitions an open transaction writes
// (kafka-transactions.sh find-hanging calls a transaction hanging on a
// partition DescribeProducers lists and DescribeTransactions does not):
// the begin row's partitions, known to every instance, plus those added
// on this one.
func TestDescribeProducersAndTransactionsAgree(t *testing.T) {
	ctx := t.Context()
	l, _, clock := newTestLedger()
	tx := &Coordinator{claims: l.claims, ledger: l, added: map[string]*txnSession{}, view: &txnView{}}
	b := tx

	_, err := b.DescribeProducers(ctx, "t", []int32{0})
	require.ErrorIs(t, err, kafkaproto.ErrNotLeaderOrFollower, "no answer before the sweeper read the table")

	// remote began on another instance: only its begin row is known here.
	remote := initTxn(t, l, "remote", 60_000)
	rpos, err := l.begin(ctx, remote, map[string][]int32{"t": {0}, "u": {3}}, noStaging)
	require.NoError(t, err)
	sweptAt := clock.Now().UnixMilli()
	tx.view.set([]kafkaproto.TxnListing{{TransactionalID: "remote", ProducerID: remote.ProducerID, State: "Ongoing"}},
		[]openTxn{{ref: txnRef{"remote", rpos.claim.key.claim, 0}, producerID: remote.ProducerID, epoch: remote.Epoch,
			startMs: rpos.begin.writtenAtMs, stagingOffset: 7, begin: rpos.begin}}, sweptAt)

	// local began here after that sweep, and added one more partition.
	clock.Advance(time.Second)
	local := initTxn(t, l, "local", 60_000)
	lpos, err := l.begin(ctx, local, map[string][]int32{"t": {1}}, noStaging)
	require.NoError(t, err)
	require.NoError(t, tx.addParts(local, map[string][]int32{"t": {1}}, lpos.claim.key.claim, 0, lpos.begin))
	require.NoError(t, tx.addParts(local, map[string][]int32{"t": {2}}, lpos.claim.key.claim, 0, nil))

	// stale: a session here whose transaction the sweep no longer lists
	// (ended on another instance long before).
	stale := initTxn(t, l, "stale", 60_000)
	tx.added["stale"] = &txnSession{producer: stale, begun: true, parts: map[produce.TopicPartition]bool{{Topic: "t", Partition: 0}: true},
		beganAtMs: sweptAt - 60_000}

	got, err := b.DescribeProducers(ctx, "t", []int32{0, 1, 2, 3})
	require.NoError(t, err)
	require.Len(t, got[0], 1)
	assert.Equal(t, remote.ProducerID, got[0][0].ProducerID, "the remote transaction, from its begin row")
	assert.Equal(t, int64(7), got[0][0].TxnStartOffset)
	require.Len(t, got[1], 1)
	assert.Equal(t, local.ProducerID, got[1][0].ProducerID)
	require.Len(t, got[2], 1, "a partition added after the begin, on this instance")
	assert.Empty(t, got[3])

	// ListTransactions agrees: the local one is listed before any sweep
	// saw it (Flink's listing strategy may run right after a failure).
	list, err := b.ListTransactions(ctx)
	require.NoError(t, err)
	var ids []string
	for _, l := range list {
		ids = append(ids, l.TransactionalID+"/"+l.State)
	}
	assert.ElementsMatch(t, []string{"remote/Ongoing", "local/Ongoing"}, ids)

	descs := b.DescribeTransactions(ctx, []string{"remote", "local", "nobody"})
	assert.Equal(t, map[string][]int32{"t": {0}, "u": {3}}, sortedParts(descs[0].Partitions))
	assert.Equal(t, map[string][]int32{"t": {1, 2}}, sortedParts(descs[1].Partitions))
	assert.Equal(t, "Ongoing", descs[1].State)
	assert.ErrorIs(t, descs[2].Err, kafkaproto.ErrTransactionalIDNotFound)

	// Once local ends, the view of its partition empties.
	_, _, err = l.end(ctx, local, false, noStaging)
	require.NoError(t, err)
	delete(tx.added, "local")
	got, err = b.DescribeProducers(ctx, "t", []int32{1})
	require.NoError(t, err)
	assert.Empty(t, got[1])
}

func sortedParts(m map[string][]int32) map[string][]int32 {
	for k := range m {
		slices.Sort(m[k])
	}
	return m
}
