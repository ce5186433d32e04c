package kafkaproto

import (
	"container/list"
	"sync"
	"time"
)

type producerKey struct {
	id        int64
	topic     string
	partition int32
}

// producerStates holds the idempotence state of every (producer id,
// partition) seen by this gateway instance, bounded by a count (least
// recently used entries are evicted first) and an idle TTL.
type producerStates struct {
	max int
	ttl time.Duration
	now func() time.Time

	// mu guards m and lru (not the partitionStates themselves).
	mu  sync.Mutex
	m   map[producerKey]*list.Element // values: *partitionState
	lru *list.List                    // front = most recently used
}

func newProducerStates(max int, ttl time.Duration, now func() time.Time) *producerStates {
	return &producerStates{max: max, ttl: ttl, now: now, m: make(map[producerKey]*list.Element), lru: list.New()}
}

// partitionState is the sequence state of one (producer id, partition).
type partitionState struct {
	key      producerKey
	lastUsed time.Time // guarded by producerStates.mu

	// mu serialises admissions for this producer and partition (held while
	// the sink accepts a batch) and guards the fields below.
	mu      sync.Mutex
	known   bool // false until a batch was accepted: any sequence is then fine
	epoch   int16
	lastSeq int32
	batches []seqBatch // oldest first, at most SequenceWindow
}

type seqBatch struct {
	SeqRange
	write PartitionWrite
}

func (s *producerStates) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// get returns the state for key, creating it, and evicts expired or excess
// states.
func (s *producerStates) get(key producerKey) *partitionState {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[key]; ok {
		st := el.Value.(*partitionState)
		if now.Sub(st.lastUsed) <= s.ttl {
			st.lastUsed = now
			s.lru.MoveToFront(el)
			return st
		}
		s.lru.Remove(el)
		delete(s.m, key)
	}
	st := &partitionState{key: key, lastUsed: now}
	s.m[key] = s.lru.PushFront(st)
	for s.lru.Len() > 1 {
		back := s.lru.Back()
		old := back.Value.(*partitionState)
		if s.lru.Len() <= s.max && now.Sub(old.lastUsed) <= s.ttl {
			break
		}
		s.lru.Remove(back)
		delete(s.m, old.key)
	}
	return st
}

// admit applies Kafka's idempotent-producer rules (CheckSequence) to one
// batch and, when the batch is new, calls submit to hand it to the sink. It
// returns the write whose result answers the client: for a duplicate of a
// remembered batch the original write (still in flight or complete), so a
// retried batch gets its original offsets and reaches the sink once. A batch
// whose original write failed is submitted again in its slot.
func (s *producerStates) admit(key producerKey, epoch int16, firstSeq, numRecords int32,
	submit func() (PartitionWrite, error),
) (PartitionWrite, error) {
	st := s.get(key)
	st.mu.Lock()
	defer st.mu.Unlock()

	st.dropFailedTailLocked()
	var window [SequenceWindow]SeqRange
	for i, b := range st.batches {
		window[i] = b.SeqRange
	}
	v := CheckSequence(SeqState{Known: st.known, Epoch: st.epoch, NextSeq: SeqAdd(st.lastSeq, 1), Window: window[:len(st.batches)]},
		epoch, firstSeq, numRecords)
	switch v.Kind {
	case SeqAccept:
	case SeqDuplicate:
		b := &st.batches[v.Batch]
		if !writeFailed(b.write) {
			return b.write, nil
		}
		w, err := submit()
		if err != nil {
			return nil, err
		}
		b.write = w
		return w, nil
	default:
		return nil, v.Err(key.id, key.topic, key.partition)
	}
	w, err := submit()
	if err != nil {
		return nil, err
	}
	if v.Restart {
		st.batches = st.batches[:0]
	}
	st.known, st.epoch, st.lastSeq = true, epoch, v.Last
	if len(st.batches) == SequenceWindow {
		copy(st.batches, st.batches[1:])
		st.batches = st.batches[:SequenceWindow-1]
	}
	st.batches = append(st.batches, seqBatch{SeqRange: SeqRange{First: firstSeq, Last: v.Last}, write: w})
	return w, nil
}

// dropFailedTailLocked forgets the newest batches whose writes failed, so the
// client's retry (or, after a non-retriable failure, its next batch reusing
// the sequence) is accepted as the next in order, as a Kafka broker that never
// appended them would.
func (st *partitionState) dropFailedTailLocked() {
	for n := len(st.batches); n > 0 && writeFailed(st.batches[n-1].write); n = len(st.batches) {
		st.lastSeq = SeqAdd(st.batches[n-1].First, -1)
		st.batches = st.batches[:n-1]
	}
}

func writeFailed(w PartitionWrite) bool {
	select {
	case <-w.Done():
		return w.Result().Err != nil
	default:
		return false
	}
}
