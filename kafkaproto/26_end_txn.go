package kafkaproto

// EndTxn, key 26: advertised 0-3 while transactions are served (v4 adds
// only TRANSACTION_ABORTABLE, v5 is transaction version 2, which the
// gateway does not advertise). The answer waits for the commit or abort
// (Transactions.EndTransaction), as Kafka's waits for its prepare record.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *conn) handleEndTxn(req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	txns := c.s.transactions()
	if txns == nil {
		c.refusedTransactional(req.TransactionalID)
		resp.ErrorCode = ErrTransactionalIDAuthorizationFailed.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(c.ctx, txnRequestTimeout)
	defer cancel()
	err := fencedFor(txns.EndTransaction(ctx, TxnProducer{req.TransactionalID, req.ProducerID, req.ProducerEpoch}, req.Commit), req.Version, 2)
	if err != nil {
		c.logTxn("end transaction refused", req.TransactionalID, err)
	}
	resp.ErrorCode = errorCode(err)
	return resp
}
