package kafkaproto

// AddPartitionsToTxn, key 24: advertised 0-3 while transactions are served
// (clients send at most v3; v4+ is broker-to-broker).
//
// Every partition is checked first (the principal may write the topic, the
// partition exists); if any fails, it gets its error and the others
// OPERATION_NOT_ATTEMPTED, as Kafka answers, and nothing is added.
// Otherwise the whole set goes to Transactions.AddPartitions and its error,
// if any, is every partition's.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *conn) handleAddPartitionsToTxn(req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	codes := make([][]int16, len(req.Topics))
	failed := false
	parts := make(map[string][]int32, len(req.Topics))
	for ti, rt := range req.Topics {
		topic := strings.Clone(rt.Topic)
		codes[ti] = make([]int16, len(rt.Partitions))
		allowed := c.authorize(OpWrite, topic)
		n, exists := c.s.topicPartitions(topic)
		for pi, p := range rt.Partitions {
			switch {
			case !allowed:
				codes[ti][pi], failed = ErrTopicAuthorizationFailed.Code, true
			case !exists || p < 0 || p >= n:
				codes[ti][pi], failed = ErrUnknownTopicOrPartition.Code, true
			default:
				parts[topic] = append(parts[topic], p)
			}
		}
	}
	var err error
	txns := c.s.transactions()
	switch {
	case txns == nil:
		err = withMessage(ErrTransactionalIDAuthorizationFailed, "transactions are not served by this gateway")
		c.refusedTransactional(req.TransactionalID)
	case failed:
		err = ErrOperationNotAttempted
	default:
		ctx, cancel := context.WithTimeout(c.ctx, txnRequestTimeout)
		err = fencedFor(txns.AddPartitions(ctx, TxnProducer{req.TransactionalID, req.ProducerID, req.ProducerEpoch}, parts), req.Version, 2)
		cancel()
		if err != nil {
			c.logTxn("add partitions to transaction refused", req.TransactionalID, err)
		}
	}
	code := errorCode(err)
	for ti, rt := range req.Topics {
		t := kmsg.NewAddPartitionsToTxnResponseTopic()
		t.Topic = rt.Topic
		for pi, p := range rt.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[ti][pi]
			if rp.ErrorCode == 0 {
				rp.ErrorCode = code
			}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
