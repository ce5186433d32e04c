// Package kafkatest provides in-memory fakes of the interfaces kafkaproto
// consumes (Topics, Sink, ProducerIDs, joined by Backend), for tests of kafkaproto and of code
// built on it. Everything is safe for concurrent use.
package kafkatest

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Backend joins the three fakes into a kafkaproto.Backend. It is also a
// kafkaproto.Authorizer: with Authorizer nil it allows everything, else it
// asks Authorizer.
type Backend struct {
	*Topics
	*Sink
	*ProducerIDs
	Authorizer kafkaproto.Authorizer
}

// Authorize implements kafkaproto.Authorizer.
func (b Backend) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	return b.Authorizer == nil || b.Authorizer.Authorize(principal, op, topic)
}

// ACL is a changeable kafkaproto.Authorizer that records what it was asked.
// Its zero value allows everything.
type ACL struct {
	mu    sync.Mutex
	allow func(principal string, op kafkaproto.Operation, topic string) bool
	asked []ACLCheck
}

// ACLCheck is one question an ACL was asked, and its answer.
type ACLCheck struct {
	Principal string
	Op        kafkaproto.Operation
	Topic     string
	Allowed   bool
}

// Set replaces the rule; nil allows everything.
func (a *ACL) Set(allow func(principal string, op kafkaproto.Operation, topic string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allow = allow
}

// Authorize implements kafkaproto.Authorizer.
func (a *ACL) Authorize(principal string, op kafkaproto.Operation, topic string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := a.allow == nil || a.allow(principal, op, topic)
	a.asked = append(a.asked, ACLCheck{Principal: principal, Op: op, Topic: topic, Allowed: ok})
	return ok
}

// Checks returns the questions asked so far.
func (a *ACL) Checks() []ACLCheck {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

// Topics is a mutable topic list.
type Topics struct {
	mu         sync.Mutex
	m          map[string]int32
	leaderless map[string]bool
}

// SetLeaderless marks a topic as without leader (or not):
// kafkaproto.TopicAvailability.
func (t *Topics) SetLeaderless(name string, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leaderless == nil {
		t.leaderless = map[string]bool{}
	}
	t.leaderless[name] = on
}

// TopicLeaderless implements kafkaproto.TopicAvailability.
func (t *Topics) TopicLeaderless(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leaderless[name]
}

// NewTopics returns Topics holding the given partition counts.
func NewTopics(partitions map[string]int32) *Topics {
	return &Topics{m: maps.Clone(partitions)}
}

// Set adds or changes a topic.
func (t *Topics) Set(name string, partitions int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[name] = partitions
}

// Topic implements kafkaproto.Topics.
func (t *Topics) Topic(name string) (int32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.m[name]
	return n, ok
}

// AllTopics implements kafkaproto.Topics, sorted by name.
func (t *Topics) AllTopics() []kafkaproto.TopicInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]kafkaproto.TopicInfo, 0, len(t.m))
	for _, name := range slices.Sorted(maps.Keys(t.m)) {
		out = append(out, kafkaproto.TopicInfo{Name: name, Partitions: t.m[name]})
	}
	return out
}

// ProducerIDs hands out 1, 2, 3, ...; Err, when set, is returned instead.
type ProducerIDs struct {
	next atomic.Int64
	Err  error
}

// NextProducerID implements kafkaproto.ProducerIDs.
func (p *ProducerIDs) NextProducerID(context.Context) (int64, error) {
	if p.Err != nil {
		return -1, p.Err
	}
	return p.next.Add(1), nil
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Batch is one batch the sink accepted.
type Batch struct {
	Produce    kafkaproto.PartitionProduce
	BaseOffset int64
}

// Sink is an in-memory log per partition. Offsets start at 0 per partition.
// Like a sink that copies its rows, it keeps copies of the records and
// releases each batch once its write completes (at once unless held), so
// that kept batches do not hold the server's memory budget.
type Sink struct {
	// Reject, when set, is called for each batch; a non-nil error refuses
	// the batch synchronously (e.g. a *kafkaproto.RecordsError).
	Reject func(*kafkaproto.PartitionProduce) error

	mu       sync.Mutex
	logs     map[TopicPartition][]kafkaproto.Record
	batches  []Batch
	hold     bool
	held     []heldWrite
	failAll  error
	failN    int
	failErr  error
	throttle time.Duration
	changed  chan struct{} // closed and replaced on every change
}

type heldWrite struct {
	req *kafkaproto.PartitionProduce
	c   *kafkaproto.Completion
}

// NewSink returns an empty Sink.
func NewSink() *Sink {
	return &Sink{logs: make(map[TopicPartition][]kafkaproto.Record), changed: make(chan struct{})}
}

// Produce implements kafkaproto.Sink.
func (s *Sink) Produce(ctx context.Context, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Reject != nil {
		if err := s.Reject(req); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := kafkaproto.NewCompletion()
	if s.hold {
		s.held = append(s.held, heldWrite{req: req, c: c})
		s.notifyLocked()
		return c, nil
	}
	s.completeLocked(req, c)
	return c, nil
}

func (s *Sink) completeLocked(req *kafkaproto.PartitionProduce, c *kafkaproto.Completion) {
	fail := s.failAll
	if fail == nil && s.failN > 0 {
		s.failN--
		fail = s.failErr
	}
	if fail != nil {
		req.Release()
		c.Complete(kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: fail})
		s.notifyLocked()
		return
	}
	records := cloneRecords(req.Records)
	req.Release()
	kept := *req // after Release: the copy holds no decoder buffers
	kept.Records = records
	tp := TopicPartition{req.Topic, req.Partition}
	base := int64(len(s.logs[tp]))
	s.logs[tp] = append(s.logs[tp], records...)
	s.batches = append(s.batches, Batch{Produce: kept, BaseOffset: base})
	c.Complete(kafkaproto.PartitionResult{BaseOffset: base, LogAppendTime: -1, LogStartOffset: 0, ThrottleTime: s.throttle})
	s.notifyLocked()
}

// cloneRecords deep-copies records, keeping nil keys, values and header
// values nil.
func cloneRecords(recs []kafkaproto.Record) []kafkaproto.Record {
	out := slices.Clone(recs)
	for i := range out {
		r := &out[i]
		r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		r.Headers = slices.Clone(r.Headers)
		for j := range r.Headers {
			r.Headers[j].Value = bytes.Clone(r.Headers[j].Value)
		}
	}
	return out
}

func (s *Sink) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Hold makes later writes stay pending until Release; their batches stay
// unreleased until then.
func (s *Sink) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = true
}

// Release completes the held writes in arrival order and stops holding.
// With failure non-nil they fail with it instead.
func (s *Sink) Release(failure error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = false
	prev := s.failAll
	s.failAll = failure
	for _, h := range s.held {
		s.completeLocked(h.req, h.c)
	}
	s.failAll = prev
	s.held = nil
}

// FailAll makes every later write fail with err (nil restores success).
func (s *Sink) FailAll(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAll = err
}

// Throttle makes later successful writes ask for throttle time d.
func (s *Sink) Throttle(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = d
}

// FailNext makes the next n writes fail with err.
func (s *Sink) FailNext(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failN, s.failErr = n, err
}

// Held is the number of writes waiting for Release.
func (s *Sink) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// Records returns a copy of a partition's log.
func (s *Sink) Records(topic string, partition int32) []kafkaproto.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.logs[TopicPartition{topic, partition}])
}

// Batches returns every accepted batch in acceptance order.
func (s *Sink) Batches() []Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// TotalRecords counts the records over all partitions.
func (s *Sink) TotalRecords() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.logs {
		n += len(l)
	}
	return n
}

// WaitFor blocks until cond holds or ctx ends. cond is called without the
// sink's lock held and may use the accessors; it is re-evaluated after every
// change.
func (s *Sink) WaitFor(ctx context.Context, cond func(*Sink) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
