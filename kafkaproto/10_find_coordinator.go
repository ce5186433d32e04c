package kafkaproto

// FindCoordinator, key 10: advertised 0-6.
//
// librdkafka < 2.11.1 enables LZ4 only if FindCoordinator's range includes
// 0. While the backend serves transactions (transactions.go), this gateway
// is every transactional id's coordinator: any instance answers for any id.
// Otherwise transaction keys get TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Group
// keys always get GROUP_AUTHORIZATION_FAILED: there are no consumer groups.
// Both refusals are non-retriable (COORDINATOR_NOT_AVAILABLE would make
// initTransactions spin until max.block.ms). v4+ answers each key. A
// refused transactional producer is logged here: Java clients look the
// coordinator up first and never reach InitProducerId.

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const coordinatorTypeTransaction = 1

func (c *conn) handleFindCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.CoordinatorType == coordinatorTypeTransaction && c.s.transactions() != nil {
		host, port := c.advertised()
		if req.Version < 4 {
			resp.NodeID, resp.Host, resp.Port = c.s.cfg.NodeID, host, port
			return resp
		}
		for _, key := range req.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key, co.NodeID, co.Host, co.Port = key, c.s.cfg.NodeID, host, port
			resp.Coordinators = append(resp.Coordinators, co)
		}
		return resp
	}
	code, msg := ErrGroupAuthorizationFailed.Code, "consumer groups are not supported by this producer-only gateway"
	if req.CoordinatorType == coordinatorTypeTransaction {
		code, msg = ErrTransactionalIDAuthorizationFailed.Code, "transactions are not served by this gateway"
		ids := req.CoordinatorKeys
		if req.Version < 4 {
			ids = []string{req.CoordinatorKey}
		}
		c.refusedTransactional(ids...)
	}
	if req.Version < 4 {
		resp.ErrorCode = code
		resp.ErrorMessage = &msg
		resp.NodeID, resp.Port = -1, -1
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key = key
		co.NodeID, co.Port = -1, -1
		co.ErrorCode = code
		m := msg
		co.ErrorMessage = &m
		resp.Coordinators = append(resp.Coordinators, co)
	}
	return resp
}

// refusedTransactional logs, rate-limited, that a producer with these
// transactional ids was refused.
func (c *conn) refusedTransactional(ids ...string) {
	if ok, suppressed := c.s.txnLog.allow(time.Now()); ok {
		c.log.Warn("refused transactional producer: transactions are not served by this gateway (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)",
			slog.Any("transactional_ids", ids), slog.Int("suppressed", suppressed))
	}
}
