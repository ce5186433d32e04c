package transactions

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fluss-kafka/gateway/producerstate"
)

// Agreement rows share the transactions table: the sweeper, tailing its
// changelog, must not take one for a transaction (a begin row of an id
// with no claim, which it would try to abort on every sweep).
func TestSweeperSkipsWriterAgreements(t *testing.T) {
	w := newTxnSweeper(&Coordinator{}, nil)
	id := writerAgreementID(producerstate.Key{ProducerID: 3, Topic: "t", Partition: 1})
	assert.True(t, isWriterAgreement(id))
	for _, version := range []int64{0, 1, 2, 8} { // even versions read as begin rows
		w.note(&txnRow{id: id, key: txnKey{claim: 1000, txn: version}, producerID: 2000, reason: "writer"})
	}
	assert.Empty(t, w.pending)
	w.note(&txnRow{id: "orders-tx", key: beginKey(0, 0), producerID: 7})
	assert.Len(t, w.pending, 1, "a transaction's begin row is still noted")
	assert.False(t, isWriterAgreement("orders-tx"))
}
