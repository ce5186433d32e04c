package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnLoad is a franz-go transactional producer running transactions of
// txnSize records (producer "txn", seq k*txnSize...) in a loop, every
// fourth one aborted. A transaction whose end fails has an unknown outcome:
// the read-back must then show all of it or none.
type txnLoad struct {
	topic, id string
	seeds     []string
	cancel    context.CancelFunc
	done      chan struct{}

	mu       sync.Mutex
	cl       *kgo.Client
	outcomes []txnOutcome // per transaction k
	ended    []time.Time  // when transaction k's end returned
	errs     int
	lastErr  error
	broken   error // no new client could be made: the loop ended
}

type txnOutcome int

const (
	txnCommitted txnOutcome = iota
	txnAborted
	txnUnknown // the end failed: committed or aborted, never in part
)

const txnSize = 50

func startTxnLoad(t *testing.T, topic string, seeds []string) *txnLoad {
	l := &txnLoad{topic: topic, id: uniqueName("faults-txn"), seeds: seeds, done: make(chan struct{})}
	var err error
	l.cl, err = l.newClient()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	l.cancel = cancel
	t.Cleanup(func() {
		cancel()
		<-l.done
		l.mu.Lock()
		if l.cl != nil {
			l.cl.Close()
		}
		l.mu.Unlock()
	})
	go l.loop(ctx)
	return l
}

func (l *txnLoad) newClient() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(l.seeds...), kgo.TransactionalID(l.id), kgo.ProducerLinger(5*time.Millisecond),
		kgo.TransactionTimeout(2*time.Minute))
}

func (l *txnLoad) loop(ctx context.Context) {
	defer close(l.done)
	for k := 0; ctx.Err() == nil; k++ {
		end := kgo.TryCommit
		if k%4 == 3 {
			end = kgo.TryAbort
		}
		l.mu.Lock()
		cl := l.cl
		l.mu.Unlock()
		// Not ctx: a transaction started is ended, also when the loop stops.
		endCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		err := txnRound(endCtx, cl, l.topic, "txn", k*txnSize, (k+1)*txnSize, end)
		cancel()
		outcome := txnCommitted
		switch {
		case err != nil:
			outcome = txnUnknown
		case end == kgo.TryAbort:
			outcome = txnAborted
		}
		l.mu.Lock()
		l.outcomes = append(l.outcomes, outcome)
		l.ended = append(l.ended, time.Now())
		if err != nil {
			// The client may be left in a failed state: a new one with
			// the same transactional id aborts whatever is open and
			// fences the old one.
			l.errs++
			l.lastErr = err
			l.cl.Close()
			if l.cl, err = l.newClient(); err != nil {
				l.broken = err
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
	}
}

func (l *txnLoad) name() string { return "txn" }

// acked counts the records of committed transactions.
func (l *txnLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, o := range l.outcomes {
		if o == txnCommitted {
			n += txnSize
		}
	}
	return n
}

// ackStep is the progress awaitAcks waits for: five committed transactions
// (each commit is a round of its own, far slower than records).
func (l *txnLoad) ackStep() int { return 5 * txnSize }

func (l *txnLoad) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// stop ends the loop after the transaction under way.
func (l *txnLoad) stop() {
	l.cancel()
	<-l.done
}

// txnTally is the read-back of a txnLoad.
type txnTally struct {
	committed, aborted, unknown int      // transactions by outcome
	lost                        int      // rows of committed transactions not read back
	duplicated                  int      // rows read back more than once
	abortedVisible              int      // rows of aborted transactions read back
	torn                        int      // transactions read back in part
	unknownCommitted            int      // unknown outcome, read back whole
	wrong                       []string // the transactions above, with when their end returned
}

func (l *txnLoad) count(got map[rowID]int) txnTally {
	l.mu.Lock()
	defer l.mu.Unlock()
	var tl txnTally
	for k, o := range l.outcomes {
		seen := 0
		for i := k * txnSize; i < (k+1)*txnSize; i++ {
			n := got[rowID{"txn", int64(i)}]
			if n > 0 {
				seen++
			}
			if n > 1 {
				tl.duplicated += n - 1
			}
		}
		switch o {
		case txnCommitted:
			tl.committed++
			tl.lost += txnSize - seen
		case txnAborted:
			tl.aborted++
			tl.abortedVisible += seen
		case txnUnknown:
			tl.unknown++
			if seen == txnSize {
				tl.unknownCommitted++
			}
		}
		if seen != 0 && seen != txnSize {
			tl.torn++
		}
		if (o == txnCommitted && seen != txnSize) || (o == txnAborted && seen > 0) || (seen != 0 && seen != txnSize) {
			tl.wrong = append(tl.wrong, fmt.Sprintf("txn %d (%v, ended %s): %d of %d rows read back", k, o, l.ended[k].UTC().Format("15:04:05.000"), seen, txnSize))
		}
	}
	return tl
}

func (tl txnTally) String() string {
	s := fmt.Sprintf("transactions committed %d, aborted %d, ended in error %d (%d of them visible whole): lost %d, duplicated %d, aborted visible %d, torn %d",
		tl.committed, tl.aborted, tl.unknown, tl.unknownCommitted, tl.lost, tl.duplicated, tl.abortedVisible, tl.torn)
	for _, w := range tl.wrong {
		s += "\n  " + w
	}
	return s
}

func (o txnOutcome) String() string { return [...]string{"committed", "aborted", "ended in error"}[o] }
