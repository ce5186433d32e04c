package kafkaproto

// DescribeProducers, key 61: advertised (v0) with DescribeTransactions,
// for Flink 2.x's listing abort strategy and kafka-transactions.sh
// describe-producers / find-hanging. A partition's active producers are
// the producers with an open transaction on it: the gateway keeps no
// per-partition state of idempotent producers that an Admin could use.
// Each partition is checked as a Produce's (the principal may describe the
// topic, the partition exists); the backend answers the rest.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProducerState is one producer with an open transaction on a partition.
type ProducerState struct {
	ProducerID int64
	Epoch      int16
	// LastTimestampMs is when the transaction began (Kafka reports its
	// last batch's timestamp; find-hanging ages transactions by it).
	LastTimestampMs int64
	// TxnStartOffset is where the transaction's records begin in the
	// backend's staging (≥ 0: the transaction is open).
	TxnStartOffset int64
}

func (c *conn) handleDescribeProducers(req *kmsg.DescribeProducersRequest) *kmsg.DescribeProducersResponse {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	v := c.s.txnViewer()
	for _, rt := range req.Topics {
		topic := strings.Clone(rt.Topic)
		t := kmsg.NewDescribeProducersResponseTopic()
		t.Topic = rt.Topic
		allowed := c.authorize(OpDescribe, topic)
		n, exists := c.s.topicPartitions(topic)
		var asked []int32
		for _, p := range rt.Partitions {
			if allowed && exists && p >= 0 && p < n {
				asked = append(asked, p)
			}
		}
		var states map[int32][]ProducerState
		var err error
		if v == nil {
			err = withMessage(ErrNotLeaderOrFollower, "transactions are not served by this gateway")
		} else if len(asked) > 0 {
			ctx, cancel := context.WithTimeout(c.ctx, txnRequestTimeout)
			states, err = v.DescribeProducers(ctx, topic, asked)
			cancel()
		}
		for _, p := range rt.Partitions {
			pr := kmsg.NewDescribeProducersResponseTopicPartition()
			pr.Partition = p
			switch {
			case !allowed:
				pr.ErrorCode = ErrTopicAuthorizationFailed.Code
			case !exists || p < 0 || p >= n:
				pr.ErrorCode = ErrUnknownTopicOrPartition.Code
			case err != nil:
				pr.ErrorCode, pr.ErrorMessage = errorCode(err), errorMessage(err)
			default:
				for _, ps := range states[p] {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.Epoch)
					ap.LastSequence, ap.LastTimestamp, ap.CoordinatorEpoch = -1, ps.LastTimestampMs, -1
					ap.CurrentTxnStartOffset = ps.TxnStartOffset
					pr.ActiveProducers = append(pr.ActiveProducers, ap)
				}
			}
			t.Partitions = append(t.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
