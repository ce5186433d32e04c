package transactions

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Integration, on a real Fluss: a staging write of transaction 1 that
// lands after its end, among transaction 2's rows (its Produce timed out
// at the client, whose resent copy was staged and committed first), is not
// applied with transaction 2; a row naming no transaction (codec 1) is
// still taken by its offsets. Before rows named their transaction, the
// late copy was read as transaction 2's: the join of it with transaction
// 2's batches overlapped the applied sequences (the Java transactional
// producer of e2e.TestFlussFaults stuck on "sequence 850, expected 900"),
// and an aborted transaction's late write would have been committed with
// the next one.
func TestIntegrationStagingSkipsLateWritesOfOtherTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, w := itInstance(t, flusstest.Bootstrap(t))
	path := fluss.TablePath{Database: itDatabase(t, c), Table: "staging"}
	l := newStagingLog(c, w.Accumulator, path)

	const id = "late-writer"
	stage := func(txn *txnTag, seq int32, n int) {
		t.Helper()
		recs := make([]kafkaproto.Record, n)
		for i := range recs {
			recs[i] = kafkaproto.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, `{"seq": %d}`, int(seq)+i)}
		}
		h, err := l.stage(ctx, &stagedBatch{id: id, topic: "t", partition: 0, producerID: 7, epoch: 0, baseSequence: seq,
			records: recs, stagingOffset: -1, txn: txn})
		require.NoError(t, err)
		_, err = h.Wait(ctx)
		require.NoError(t, err)
	}
	end := func() int64 {
		t.Helper()
		off, err := l.end(ctx, id)
		require.NoError(t, err)
		return off
	}
	one, two := &txnTag{claim: 0, n: 1}, &txnTag{claim: 0, n: 2}
	from1 := end()
	stage(one, 0, 5) // transaction 1: the client's resent copy
	to1 := end()
	from2 := end()
	stage(one, 0, 5)  // the first write of that batch, landing late
	stage(two, 5, 5)  // transaction 2's batch, right after in sequence
	stage(nil, 10, 5) // a row of an instance that knew no transaction number
	to2 := end()

	seqs := func(bs []*stagedBatch) []string {
		var out []string
		for _, b := range bs {
			out = append(out, fmt.Sprintf("%d+%d", b.baseSequence, len(b.records)))
		}
		return out
	}
	got1, err := l.read(ctx, id, 7, 0, *one, from1, to1)
	require.NoError(t, err)
	assert.Equal(t, []string{"0+5"}, seqs(got1), "transaction 1")
	got2, err := l.read(ctx, id, 7, 0, *two, from2, to2)
	require.NoError(t, err)
	assert.Equal(t, []string{"5+5", "10+5"}, seqs(got2), "transaction 2: not the late copy of transaction 1's batch")
}
