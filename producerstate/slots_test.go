package producerstate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAck is one copy's acknowledgement, completed by the test.
type fakeAck struct {
	done   chan struct{}
	offset int64
	err    error
}

func newFakeAck() *fakeAck { return &fakeAck{done: make(chan struct{})} }

func (f *fakeAck) Done() <-chan struct{} { return f.done }

func (f *fakeAck) Wait(ctx context.Context) (int64, error) {
	select {
	case <-f.done:
		return f.offset, f.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

func (f *fakeAck) complete(offset int64, err error) {
	f.offset, f.err = offset, err
	close(f.done)
}

// slotWriter records which slots a hedgedAck wrote, each copy a fakeAck.
type slotWriter struct {
	mu     sync.Mutex
	slots  []int
	acks   map[int]*fakeAck
	wrote  chan int
	refuse map[int]bool
}

func newSlotWriter() *slotWriter {
	return &slotWriter{acks: map[int]*fakeAck{}, wrote: make(chan int, stateSlots), refuse: map[int]bool{}}
}

func (w *slotWriter) write(_ context.Context, n int) (bucketRef, Ack, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refuse[n] {
		return bucketRef{}, nil, errors.New("refused")
	}
	a := newFakeAck()
	w.slots = append(w.slots, n)
	w.acks[n] = a
	w.wrote <- n
	return bucketRef{TableID: 1, PartitionID: 2, Bucket: int32(10 + n)}, a, nil
}

func (w *slotWriter) ack(n int) *fakeAck {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acks[n]
}

// commitWith starts a hedgedAck as Store.Commit does: its first copy in
// slot first, written at once.
func commitWith(t *testing.T, s *Store, w *slotWriter, first int) *hedgedAck {
	t.Helper()
	a := &hedgedAck{s: s, write: w.write, first: first, tried: 1}
	at, h, err := w.write(t.Context(), first)
	require.NoError(t, err)
	a.copies = append(a.copies, slotWrite{at: at, h: h, done: doneOf(h)})
	<-w.wrote
	return a
}

func hedgeStore(after time.Duration) (*Store, *int) {
	hedges := 0
	s := &Store{now: time.Now, hedgeAfter: after}
	s.OnHedge(func() { hedges++ })
	return s, &hedges
}

func TestCommitAcknowledgedInItsSlotIsNotHedged(t *testing.T) {
	s, hedges := hedgeStore(time.Hour)
	w := newSlotWriter()
	a := commitWith(t, s, w, 0)
	w.ack(0).complete(42, nil)
	off, err := a.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(42), off)
	assert.Equal(t, []int{0}, w.slots)
	assert.Zero(t, *hedges)
	assert.True(t, s.suspects.none())
}

func TestStalledCommitIsHedgedToTheNextSlot(t *testing.T) {
	s, hedges := hedgeStore(20 * time.Millisecond)
	w := newSlotWriter()
	a := commitWith(t, s, w, 0)
	res := make(chan error, 1)
	go func() {
		_, err := a.Wait(t.Context())
		res <- err
	}()
	// Slot 0 stalls: its copy goes to slot 1, which answers.
	require.Equal(t, 1, <-w.wrote)
	w.ack(1).complete(7, nil)
	require.NoError(t, <-res)
	w.mu.Lock()
	assert.Equal(t, []int{0, 1}, w.slots[:2]) // a busy machine may have hedged to slot 2 as well
	w.mu.Unlock()
	assert.GreaterOrEqual(t, *hedges, 1)
	// Slot 0's bucket is passed over by the next commit of it, until it
	// acknowledges a commit again.
	ats := [stateSlots]bucketRef{{1, 2, 10}, {1, 2, 11}, {1, 2, 12}}
	assert.NotEqual(t, 0, s.firstSlot(ats))
	w.ack(0).complete(3, nil) // the stalled copy lands late: harmless, lower or equal version
	b := commitWith(t, s, newSlotWriter(), 0)
	b.copies[0].h.(*fakeAck).complete(5, nil)
	_, err := b.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, s.firstSlot(ats), "an acknowledged commit clears its bucket")
}

func TestSuspectBucketExpires(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &Store{now: func() time.Time { return now }}
	b := bucketRef{1, 2, 10}
	s.suspects.suspect(b, now)
	assert.Equal(t, 1, s.firstSlot([stateSlots]bucketRef{b, {1, 2, 11}, {1, 2, 12}}))
	now = now.Add(suspectFor)
	assert.Equal(t, 0, s.firstSlot([stateSlots]bucketRef{b, {1, 2, 11}, {1, 2, 12}}))
}

func TestFailedCopyTriesTheNextSlotAtOnce(t *testing.T) {
	s, _ := hedgeStore(time.Hour)
	w := newSlotWriter()
	a := commitWith(t, s, w, 2)
	res := make(chan error, 1)
	go func() {
		_, err := a.Wait(t.Context())
		res <- err
	}()
	w.ack(2).complete(-1, errors.New("no leader"))
	// The next slot after 2 is 0, written without waiting for the hedge.
	require.Equal(t, 0, <-w.wrote)
	w.ack(0).complete(9, nil)
	require.NoError(t, <-res)
	assert.Equal(t, []int{2, 0}, w.slots)
}

func TestCommitFailsWhenEveryCopyFails(t *testing.T) {
	s, _ := hedgeStore(time.Hour)
	w := newSlotWriter()
	w.refuse[2] = true
	a := commitWith(t, s, w, 0)
	res := make(chan error, 1)
	go func() {
		_, err := a.Wait(t.Context())
		res <- err
	}()
	w.ack(0).complete(-1, errors.New("first"))
	require.Equal(t, 1, <-w.wrote)
	w.ack(1).complete(-1, errors.New("second"))
	err := <-res
	require.Error(t, err)
	assert.ErrorContains(t, err, "second")
	assert.Equal(t, []int{0, 1}, w.slots)
}

func TestHedgedCommitWaitsForAnyCopy(t *testing.T) {
	s, hedges := hedgeStore(10 * time.Millisecond)
	w := newSlotWriter()
	a := commitWith(t, s, w, 0)
	res := make(chan int64, 1)
	go func() {
		off, err := a.Wait(t.Context())
		assert.NoError(t, err)
		res <- off
	}()
	// Every slot stalls; then the first copy answers after all.
	require.Equal(t, 1, <-w.wrote)
	require.Equal(t, 2, <-w.wrote)
	w.ack(0).complete(11, nil)
	assert.Equal(t, int64(11), <-res)
	assert.Equal(t, 2, *hedges)
}

func TestSlotTopicsNeverMeetARealTopic(t *testing.T) {
	assert.Equal(t, "orders", slotTopic("orders", 0))
	assert.Equal(t, "orders#2", slotTopic("orders", 2))
	// Kafka topic names hold [a-zA-Z0-9._-] only.
	assert.NotContains(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", "#")
}
