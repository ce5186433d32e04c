package kafkaproto

// AddOffsetsToTxn, key 25: advertised 0-3 while transactions are served,
// and always refused: it starts a consume-transform-produce transaction's
// offset commit, and the gateway has no consumer groups. The answer is
// GROUP_AUTHORIZATION_FAILED, which Java, franz-go and librdkafka treat as
// abortable: the application can abort the transaction and go on without
// sendOffsetsToTransaction. TxnOffsetCommit, which only follows a
// successful AddOffsetsToTxn, is not advertised.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *conn) handleAddOffsetsToTxn(req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.ErrorCode = ErrGroupAuthorizationFailed.Code
	c.logTxn("refused sendOffsetsToTransaction: consumer group offsets cannot be committed through this producer-only gateway (GROUP_AUTHORIZATION_FAILED)",
		req.TransactionalID, withMessage(ErrGroupAuthorizationFailed, "group %q", req.Group))
	return resp
}
