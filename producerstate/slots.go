package producerstate

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Slots: a producer-partition's state may be committed under one of
// stateSlots keys, its own (slot 0) and alternates whose topic column
// carries "#1", "#2" (no Kafka topic name holds '#', so they never meet a
// real topic's row). The keys hash to other buckets, which Fluss mostly
// leads from other tablet servers. A commit goes to the first slot whose
// bucket is not suspect; when it is not acknowledged within hedgeAfter,
// the same row goes to the next slot as well and the first bucket is
// suspect for a while, so the state commits of every topic do not wait
// for Fluss to notice one dead or paused tablet server (docs/deployment.md,
// faults). A lookup reads every slot and keeps the highest version, as it
// does across generations: a row is the same state wherever it landed,
// and a late or hedged copy with a lower version loses.
const stateSlots = 3

// defaultHedgeAfter is how long a commit waits for its slot before it is
// also written to the next one (Store.hedgeAfter). Commits take a linger
// and a round trip when Fluss is well (milliseconds); a second is a stall.
const defaultHedgeAfter = time.Second

// suspectFor is how long a bucket whose commit stalled is passed over
// when no commit of it was acknowledged meanwhile.
const suspectFor = 30 * time.Second

// slotTopic is the topic column of key slot n.
func slotTopic(topic string, n int) string {
	if n == 0 {
		return topic
	}
	return topic + "#" + strconv.Itoa(n)
}

// suspects are the buckets whose commits stalled: the time each is passed
// over until, unless a commit of it is acknowledged first.
type suspects struct {
	mu    sync.Mutex
	until map[bucketRef]time.Time
}

func (u *suspects) suspect(b bucketRef, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.until == nil {
		u.until = map[bucketRef]time.Time{}
	}
	u.until[b] = now.Add(suspectFor)
}

func (u *suspects) clear(b bucketRef) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.until, b)
}

func (u *suspects) none() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.until) == 0
}

func (u *suspects) is(b bucketRef, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.until[b]
	if ok && !now.Before(t) {
		delete(u.until, b)
		return false
	}
	return ok
}

// slotWrite is one slot's copy of a commit.
type slotWrite struct {
	at bucketRef
	h  Ack
	// done is closed once h is; nil until a hedge needs to select on
	// several copies.
	done <-chan struct{}
}

// hedgedAck is a commit's acknowledgement: it completes with the first
// copy acknowledged, writing the next slot's copy whenever the copies
// written so far stall for hedgeAfter. A copy that fails while another
// is still pending is passed over; the commit fails when every copy it
// wrote failed.
type hedgedAck struct {
	s      *Store
	first  int                                                      // the slot written first
	tried  int                                                      // slots written or refused so far
	write  func(ctx context.Context, n int) (bucketRef, Ack, error) // appends slot n's copy
	copies []slotWrite
	err    error // the last refused write
}

// doneOf is a channel closed once h completes.
func doneOf(h Ack) <-chan struct{} {
	if d, ok := h.(interface{ Done() <-chan struct{} }); ok {
		return d.Done()
	}
	c := make(chan struct{})
	go func() {
		_, _ = h.Wait(context.Background())
		close(c)
	}()
	return c
}

// Wait implements Ack.
func (a *hedgedAck) Wait(ctx context.Context) (int64, error) {
	timer := time.NewTimer(a.s.hedgeAfter)
	defer timer.Stop()
	var lastErr error
	for {
		// Any copy done: the first success wins; failures are passed over
		// while other copies are pending.
		pending := 0
		for i := range a.copies {
			c := &a.copies[i]
			if c.h == nil {
				continue
			}
			select {
			case <-c.done:
				off, err := c.h.Wait(ctx)
				if err == nil {
					a.s.suspects.clear(c.at)
					return off, nil
				}
				lastErr, c.h = err, nil
				continue
			default:
			}
			pending++
		}
		if pending == 0 {
			if !a.hedge(ctx) {
				if lastErr == nil {
					lastErr = a.err
				}
				return -1, lastErr
			}
			timer.Reset(a.s.hedgeAfter)
			continue
		}
		cases := a.wake()
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-cases:
		case <-timer.C:
			for _, c := range a.copies {
				if c.h != nil {
					a.s.suspects.suspect(c.at, a.s.now())
				}
			}
			a.hedge(ctx)
			timer.Reset(a.s.hedgeAfter)
		}
	}
}

// hedge writes the next slot's copy; false when every slot was tried.
func (a *hedgedAck) hedge(ctx context.Context) bool {
	for a.tried < stateSlots {
		n := (a.first + a.tried) % stateSlots
		a.tried++
		at, h, err := a.write(ctx, n)
		if err != nil {
			a.err = err
			continue
		}
		a.copies = append(a.copies, slotWrite{at: at, h: h, done: doneOf(h)})
		if a.tried > 1 {
			a.s.hedged()
		}
		return true
	}
	return false
}

// wake returns a channel closed when any pending copy completes.
func (a *hedgedAck) wake() <-chan struct{} {
	var live []<-chan struct{}
	for _, c := range a.copies {
		if c.h != nil {
			live = append(live, c.done)
		}
	}
	if len(live) == 1 {
		return live[0]
	}
	w := make(chan struct{})
	var once sync.Once
	for _, d := range live {
		go func() {
			select {
			case <-d:
				once.Do(func() { close(w) })
			case <-w:
			}
		}()
	}
	return w
}

// firstSlot is the slot a commit to key slots ats goes to first: the
// first whose bucket is not suspect (slot 0 when all are).
func (s *Store) firstSlot(ats [stateSlots]bucketRef) int {
	now := s.now()
	for n, at := range ats {
		if !s.suspects.is(at, now) {
			return n
		}
	}
	return 0
}
