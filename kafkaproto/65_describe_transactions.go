package kafkaproto

// DescribeTransactions, key 65, and ListTransactions, key 66: advertised
// (v0, and v0-1) while transactions are served by a backend that also
// implements TransactionsViewer, for kafka-transactions.sh describe/list
// and Admin clients. A transactional id the backend never saw is
// TRANSACTIONAL_ID_NOT_FOUND; ListTransactions' state and producer id
// filters (and v1's duration filter) are applied here.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TransactionsViewer reports transactions for the Admin APIs.
type TransactionsViewer interface {
	// DescribeTransactions describes each id, in order.
	DescribeTransactions(ctx context.Context, ids []string) []TxnDescription
	// ListTransactions lists the transactions the backend knows to be
	// open (Ongoing, PrepareCommit, PrepareAbort).
	ListTransactions(ctx context.Context) ([]TxnListing, error)
	// DescribeProducers reports, per partition of topic asked, the
	// producers with an open transaction on it (61_describe_producers.go).
	DescribeProducers(ctx context.Context, topic string, partitions []int32) (map[int32][]ProducerState, error)
}

// TxnDescription is one transactional id as DescribeTransactions reports
// it. State is one of Kafka's: Empty, Ongoing, PrepareCommit,
// PrepareAbort, CompleteCommit, CompleteAbort.
type TxnDescription struct {
	TransactionalID string
	Err             error // e.g. ErrTransactionalIDNotFound; the rest is then unset
	State           string
	ProducerID      int64
	Epoch           int16
	TimeoutMs       int32
	StartMs         int64 // the open transaction's start, -1 without one
	Partitions      map[string][]int32
}

// TxnListing is one open transaction as ListTransactions reports it.
type TxnListing struct {
	TransactionalID string
	ProducerID      int64
	State           string
	StartMs         int64
}

// kafkaTxnStates are the states ListTransactions filters may name.
var kafkaTxnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (c *conn) handleDescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	v := c.s.txnViewer()
	ctx, cancel := context.WithTimeout(c.ctx, txnRequestTimeout)
	defer cancel()
	var descs []TxnDescription
	if v != nil {
		descs = v.DescribeTransactions(ctx, req.TransactionalIDs)
	}
	for i, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		switch {
		case v == nil:
			st.ErrorCode = ErrTransactionalIDAuthorizationFailed.Code
		case i >= len(descs):
			st.ErrorCode = ErrUnknownServerError.Code
		case descs[i].Err != nil:
			st.ErrorCode = errorCode(descs[i].Err)
		default:
			d := descs[i]
			st.State, st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, st.StartTimestamp = d.State, d.ProducerID, d.Epoch, d.TimeoutMs, d.StartMs
			topics := make([]string, 0, len(d.Partitions))
			for t := range d.Partitions {
				topics = append(topics, t)
			}
			slices.Sort(topics)
			for _, t := range topics {
				tp := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				tp.Topic, tp.Partitions = t, slices.Sorted(slices.Values(d.Partitions[t]))
				st.Topics = append(st.Topics, tp)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func (c *conn) handleListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	v := c.s.txnViewer()
	if v == nil {
		resp.ErrorCode = ErrTransactionalIDAuthorizationFailed.Code
		return resp
	}
	for _, f := range req.StateFilters {
		if !slices.Contains(kafkaTxnStates, f) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	ctx, cancel := context.WithTimeout(c.ctx, txnRequestTimeout)
	defer cancel()
	list, err := v.ListTransactions(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		if resp.ErrorCode == ErrUnknownServerError.Code {
			resp.ErrorCode = ErrCoordinatorLoadInProgress.Code
		}
		return resp
	}
	now := time.Now().UnixMilli()
	for _, l := range list {
		switch {
		case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, l.State),
			len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, l.ProducerID),
			req.DurationFilterMillis > 0 && (l.StartMs < 0 || now-l.StartMs < req.DurationFilterMillis):
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = l.TransactionalID, l.ProducerID, l.State
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}
