package kafkaproto

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateHarness counts submissions and lets tests complete them.
type stateHarness struct {
	t        *testing.T
	states   *producerStates
	submits  int
	pending  []*Completion
	autoDone bool
}

func newStateHarness(t *testing.T) *stateHarness {
	return &stateHarness{t: t, states: newProducerStates(100, time.Hour, time.Now), autoDone: true}
}

func (h *stateHarness) admit(epoch int16, seq, n int32) (PartitionWrite, error) {
	return h.states.admit(producerKey{id: 1, topic: "t", partition: 0}, epoch, seq, n, func() (PartitionWrite, error) {
		h.submits++
		c := NewCompletion()
		if h.autoDone {
			c.Complete(PartitionResult{BaseOffset: int64(100 * h.submits)})
		}
		h.pending = append(h.pending, c)
		return c, nil
	})
}

func codeOf(err error) int16 { return errorCode(err) }

func TestProducerStateRules(t *testing.T) {
	t.Parallel()
	t.Run("duplicate returns original write without resubmitting", func(t *testing.T) {
		h := newStateHarness(t)
		w1, err := h.admit(0, 0, 5)
		require.NoError(t, err)
		w2, err := h.admit(0, 5, 5)
		require.NoError(t, err)
		dup, err := h.admit(0, 0, 5)
		require.NoError(t, err)
		assert.Same(t, w1, dup)
		assert.NotSame(t, w2, dup)
		assert.Equal(t, 2, h.submits)
	})
	t.Run("duplicate of an in-flight batch waits for it", func(t *testing.T) {
		h := newStateHarness(t)
		h.autoDone = false
		w1, err := h.admit(0, 0, 3)
		require.NoError(t, err)
		dup, err := h.admit(0, 0, 3)
		require.NoError(t, err)
		assert.Same(t, w1, dup)
		assert.Equal(t, 1, h.submits)
		select {
		case <-dup.Done():
			t.Fatal("duplicate completed before the original")
		default:
		}
		h.pending[0].Complete(PartitionResult{BaseOffset: 42})
		<-dup.Done()
		assert.Equal(t, int64(42), dup.Result().BaseOffset)
	})
	t.Run("gap is out of order", func(t *testing.T) {
		h := newStateHarness(t)
		_, err := h.admit(0, 0, 5)
		require.NoError(t, err)
		_, err = h.admit(0, 7, 1)
		assert.Equal(t, ErrOutOfOrderSequenceNumber.Code, codeOf(err))
		assert.Equal(t, 1, h.submits)
	})
	t.Run("batch older than the window is a duplicate sequence", func(t *testing.T) {
		h := newStateHarness(t)
		for i := range int32(6) {
			_, err := h.admit(0, i, 1)
			require.NoError(t, err)
		}
		_, err := h.admit(0, 0, 1)
		assert.Equal(t, ErrDuplicateSequenceNumber.Code, codeOf(err))
		_, err = h.admit(0, 1, 1) // still in the window of 5
		assert.NoError(t, err)
		assert.Equal(t, 6, h.submits)
	})
	t.Run("stale epoch", func(t *testing.T) {
		h := newStateHarness(t)
		_, err := h.admit(3, 0, 1)
		require.NoError(t, err)
		_, err = h.admit(2, 1, 1)
		assert.Equal(t, ErrInvalidProducerEpoch.Code, codeOf(err))
	})
	t.Run("epoch bump must restart at zero", func(t *testing.T) {
		h := newStateHarness(t)
		_, err := h.admit(0, 0, 4)
		require.NoError(t, err)
		_, err = h.admit(1, 4, 1)
		assert.Equal(t, ErrOutOfOrderSequenceNumber.Code, codeOf(err))
		_, err = h.admit(1, 0, 1)
		assert.NoError(t, err)
		_, err = h.admit(1, 1, 1)
		assert.NoError(t, err)
	})
	t.Run("unknown producer accepts any sequence", func(t *testing.T) {
		h := newStateHarness(t)
		_, err := h.admit(5, 1234, 2)
		require.NoError(t, err)
		_, err = h.admit(5, 1236, 1)
		assert.NoError(t, err)
	})
	t.Run("sequence wraps at MaxInt32", func(t *testing.T) {
		h := newStateHarness(t)
		_, err := h.admit(0, math.MaxInt32-1, 2)
		require.NoError(t, err)
		_, err = h.admit(0, 0, 1)
		assert.NoError(t, err)
	})
	t.Run("failed tail is forgotten so the retry is accepted", func(t *testing.T) {
		h := newStateHarness(t)
		h.autoDone = false
		_, err := h.admit(0, 0, 2)
		require.NoError(t, err)
		h.pending[0].Complete(PartitionResult{BaseOffset: 0})
		_, err = h.admit(0, 2, 2)
		require.NoError(t, err)
		h.pending[1].Complete(PartitionResult{Err: ErrNotEnoughReplicas})
		// Next batch reuses sequence 2 (Java adjusts sequences after a
		// non-retriable failure) with a different size.
		w, err := h.admit(0, 2, 3)
		require.NoError(t, err)
		assert.Equal(t, 3, h.submits)
		h.pending[2].Complete(PartitionResult{BaseOffset: 9})
		<-w.Done()
		assert.Equal(t, int64(9), w.Result().BaseOffset)
	})
	t.Run("retry of a failed batch in the middle is resubmitted", func(t *testing.T) {
		h := newStateHarness(t)
		h.autoDone = false
		_, err := h.admit(0, 0, 2)
		require.NoError(t, err)
		_, err = h.admit(0, 2, 2)
		require.NoError(t, err)
		h.pending[0].Complete(PartitionResult{Err: errors.New("boom")})
		h.pending[1].Complete(PartitionResult{BaseOffset: 5})
		w, err := h.admit(0, 0, 2)
		require.NoError(t, err)
		assert.Equal(t, 3, h.submits)
		assert.Same(t, h.pending[2], w)
	})
	t.Run("sink error leaves no state", func(t *testing.T) {
		h := newStateHarness(t)
		_, err := h.states.admit(producerKey{id: 1, topic: "t"}, 0, 0, 1, func() (PartitionWrite, error) {
			return nil, ErrRequestTimedOut
		})
		require.ErrorIs(t, err, ErrRequestTimedOut)
		_, err = h.admit(0, 0, 1)
		assert.NoError(t, err)
	})
}

func TestProducerStatesBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	s := newProducerStates(3, time.Minute, func() time.Time { return now })
	for i := range int64(5) {
		s.get(producerKey{id: i})
	}
	assert.Equal(t, 3, s.len(), "least recently used states are evicted")
	now = now.Add(2 * time.Minute)
	s.get(producerKey{id: 100})
	assert.Equal(t, 1, s.len(), "expired states are dropped")
}
