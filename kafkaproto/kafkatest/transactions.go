package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Transactions is an in-memory transaction coordinator and staging sink in
// front of a Sink, for tests of the protocol's side of transactions
// (kafkaproto.Transactions): InitTransaction bumps an id's epoch and aborts
// its open transaction, a transactional batch is staged (a copy) unless
// its partition was not added, and a commit passes the staged batches on
// to the Sink in order.
type Transactions struct {
	sink    *Sink
	mu      sync.Mutex
	enabled bool
	nextPID int64
	ids     map[string]*txnState
	ends    []string
}

type txnState struct {
	pid    int64
	epoch  int16
	parts  map[TopicPartition]bool
	staged []kafkaproto.PartitionProduce
}

// NewTransactions returns an enabled coordinator committing into sink.
func NewTransactions(sink *Sink) *Transactions {
	return &Transactions{sink: sink, enabled: true, nextPID: 100, ids: map[string]*txnState{}}
}

// SetEnabled turns serving transactions on or off (a reload).
func (m *Transactions) SetEnabled(on bool) { m.mu.Lock(); m.enabled = on; m.mu.Unlock() }

// Ends returns the transactions ended, "id:commit" or "id:abort", in order.
func (m *Transactions) Ends() []string { m.mu.Lock(); defer m.mu.Unlock(); return slices.Clone(m.ends) }

// TransactionsEnabled implements kafkaproto.Transactions.
func (m *Transactions) TransactionsEnabled() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.enabled }

// InitTransaction implements kafkaproto.Transactions.
func (m *Transactions) InitTransaction(_ context.Context, id string, timeoutMs int32, pid int64, epoch int16) (int64, int16, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if timeoutMs <= 0 {
		return -1, -1, kafkaproto.ErrInvalidTransactionTimeout
	}
	t := m.ids[id]
	switch {
	case t == nil:
		m.nextPID++
		t = &txnState{pid: m.nextPID}
		m.ids[id] = t
	case pid >= 0 && (pid != t.pid || epoch != t.epoch):
		return -1, -1, kafkaproto.ErrProducerFenced
	default:
		t.epoch++
		t.parts, t.staged = nil, nil // the open transaction is aborted
	}
	return t.pid, t.epoch, nil
}

func (m *Transactions) check(p kafkaproto.TxnProducer) (*txnState, error) {
	t := m.ids[p.TransactionalID]
	switch {
	case t == nil || t.pid != p.ProducerID:
		return nil, kafkaproto.ErrInvalidProducerIDMapping
	case t.epoch != p.Epoch:
		return nil, kafkaproto.ErrProducerFenced
	}
	return t, nil
}

// AddPartitions implements kafkaproto.Transactions.
func (m *Transactions) AddPartitions(_ context.Context, p kafkaproto.TxnProducer, parts map[string][]int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.check(p)
	if err != nil {
		return err
	}
	if t.parts == nil {
		t.parts = map[TopicPartition]bool{}
	}
	for topic, ps := range parts {
		for _, pa := range ps {
			t.parts[TopicPartition{Topic: topic, Partition: pa}] = true
		}
	}
	return nil
}

// EndTransaction implements kafkaproto.Transactions.
func (m *Transactions) EndTransaction(ctx context.Context, p kafkaproto.TxnProducer, commit bool) error {
	m.mu.Lock()
	t, err := m.check(p)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	staged := t.staged
	t.parts, t.staged = nil, nil
	outcome := "abort"
	if commit {
		outcome = "commit"
	}
	m.ends = append(m.ends, fmt.Sprintf("%s:%s", p.TransactionalID, outcome))
	m.mu.Unlock()
	if !commit {
		return nil
	}
	for i := range staged {
		w, err := m.sink.Produce(ctx, &staged[i])
		if err != nil {
			return err
		}
		<-w.Done()
	}
	return nil
}

// Produce implements kafkaproto.Sink: a transactional batch is staged (a
// copy of its records), every other batch goes to the Sink.
func (m *Transactions) Produce(ctx context.Context, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	if req.TransactionalID == "" {
		return m.sink.Produce(ctx, req)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.check(kafkaproto.TxnProducer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch})
	if err != nil {
		return nil, err
	}
	if !t.parts[TopicPartition{Topic: req.Topic, Partition: req.Partition}] {
		return nil, kafkaproto.ErrInvalidTxnState
	}
	cp := kafkaproto.PartitionProduce{Topic: req.Topic, Partition: req.Partition, Acks: req.Acks,
		ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, BaseSequence: req.BaseSequence, Codec: req.Codec}
	cp.Records = cloneRecords(req.Records)
	t.staged = append(t.staged, cp)
	req.Release()
	return kafkaproto.Completed(kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}), nil
}

// TxnBackend is a Backend whose transactional batches go through Txns.
type TxnBackend struct {
	*Topics
	*ProducerIDs
	*Transactions
	Authorizer kafkaproto.Authorizer
}

// Authorize implements kafkaproto.Authorizer.
func (b TxnBackend) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	return b.Authorizer == nil || b.Authorizer.Authorize(principal, op, topic)
}
