package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// txnLog is what a transactional producer running transactions of txnSize
// records (rows of producer, seq k*txnSize...) in a loop, every fourth one
// aborted, has done: each transaction's outcome. A transaction whose end
// fails has an unknown outcome: the read-back must then show all of it or
// none.
type txnLog struct {
	producer string

	mu       sync.Mutex
	outcomes []txnOutcome // per transaction k
	ended    []time.Time  // when transaction k's end returned
	errs     int
	lastErr  error
	broken   error // the producer could not go on: its loop ended
}

// end records the outcome of the next transaction.
func (l *txnLog) end(o txnOutcome, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, o)
	l.ended = append(l.ended, time.Now())
	if err != nil {
		l.errs++
		l.lastErr = err
	}
}

// txnLoad is a franz-go transactional producer (txnLog).
type txnLoad struct {
	*txnLog
	topic, id string
	seeds     []string
	cancel    context.CancelFunc
	done      chan struct{}

	clMu sync.Mutex
	cl   *kgo.Client
}

type txnOutcome int

const (
	txnCommitted txnOutcome = iota
	txnAborted
	txnUnknown // the end failed: committed or aborted, never in part
)

const txnSize = 50

func startTxnLoad(t *testing.T, topic string, seeds []string) *txnLoad {
	l := &txnLoad{txnLog: &txnLog{producer: "txn"}, topic: topic, id: uniqueName("faults-txn"), seeds: seeds, done: make(chan struct{})}
	var err error
	l.cl, err = l.newClient()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	l.cancel = cancel
	t.Cleanup(func() {
		cancel()
		<-l.done
		l.clMu.Lock()
		if l.cl != nil {
			l.cl.Close()
		}
		l.clMu.Unlock()
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
		l.clMu.Lock()
		cl := l.cl
		l.clMu.Unlock()
		// Not ctx: a transaction started is ended, also when the loop stops.
		endCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		err := txnRound(endCtx, cl, l.topic, l.producer, k*txnSize, (k+1)*txnSize, end)
		cancel()
		outcome := txnCommitted
		switch {
		case err != nil:
			outcome = txnUnknown
		case end == kgo.TryAbort:
			outcome = txnAborted
		}
		l.end(outcome, err)
		if err != nil {
			// The client may be left in a failed state: a new one with
			// the same transactional id aborts whatever is open and
			// fences the old one.
			l.clMu.Lock()
			l.cl.Close()
			l.cl, err = l.newClient()
			l.clMu.Unlock()
			if err != nil {
				l.mu.Lock()
				l.broken = err
				l.mu.Unlock()
				return
			}
		}
	}
}

func (l *txnLog) name() string { return l.producer }

// acked counts the records of committed transactions.
func (l *txnLog) acked() int {
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
func (l *txnLog) ackStep() int { return 5 * txnSize }

func (l *txnLog) failure() error {
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

func (l *txnLog) count(got map[rowID]int) txnTally {
	l.mu.Lock()
	defer l.mu.Unlock()
	var tl txnTally
	for k, o := range l.outcomes {
		seen := 0
		for i := k * txnSize; i < (k+1)*txnSize; i++ {
			n := got[rowID{l.producer, int64(i)}]
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

// javaTxnLoad is the Java client's transactional producer looping
// transactions (internal/gatewaytest/java/TxnLoadMain.java) as a txnLog.
type javaTxnLoad struct {
	*txnLog
	javaProc
}

func startJavaTxnLoad(t *testing.T, topic string, seeds []string) *javaTxnLoad {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	command, err := gatewaytest.JavaMain(ctx, "TxnLoadMain")
	cancel()
	require.NoError(t, err)
	l := &javaTxnLoad{txnLog: &txnLog{producer: "jtxn"}}
	l.start(t, command, []string{strings.Join(seeds, ","), topic, l.producer, uniqueName("faults-jtxn"), strconv.Itoa(txnSize)}, l.read)
	return l
}

// read turns the program's lines into outcomes: "C k" committed, "X k"
// aborted, "E k error" ended in error, "R error" a failed restart, "D" done.
func (l *javaTxnLoad) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		num, msg, _ := strings.Cut(rest, " ")
		switch kind {
		case "C", "X", "E":
			k, err := strconv.Atoi(num)
			l.mu.Lock()
			next := len(l.outcomes)
			l.mu.Unlock()
			if err != nil || k != next {
				l.fail(fmt.Errorf("TxnLoadMain ended transaction %q, want %d", num, next))
				return
			}
			switch kind {
			case "C":
				l.end(txnCommitted, nil)
			case "X":
				l.end(txnAborted, nil)
			default:
				l.end(txnUnknown, errors.New(msg))
			}
		case "R":
			l.mu.Lock()
			l.errs++
			l.lastErr = errors.New(rest)
			l.mu.Unlock()
		case "D":
			return
		}
	}
	l.fail(errors.New("TxnLoadMain's output ended before it said done"))
}

func (l *javaTxnLoad) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken == nil {
		l.broken = err
	}
}

// stop ends the loop after the transaction under way and waits for the
// process; a failure shows in failure().
func (l *javaTxnLoad) stop() {
	_ = l.stdin.Close()
	<-l.done
	if err := l.cmd.Wait(); err != nil {
		l.fail(fmt.Errorf("TxnLoadMain: %w; stderr: %s", err, tailString(l.stderr.String(), 2000)))
	}
}
