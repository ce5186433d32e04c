package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// exactlyOnceAcrossCrashes says whether a gateway crash (kill -9, with a
// restart or a failover to a second instance) must leave no duplicate for
// idempotent producers. It holds for routes that do not turn exactly once
// off (the producer states live in Fluss; see docs/exactly-once.md): the
// fault cases use the default route, which says nothing about it;
// -fault.exact-crash=false only counts duplicates (e.g. with
// -fault.exactly-once=false, the merged path). Lost acknowledged records
// always fail.
const exactlyOnceAcrossCrashes = true

var (
	faultRuns = flag.Int("fault.runs", envInt("FAULT_RUNS", 2),
		"runs per fault case (env FAULT_RUNS); 2 for CI, 10 for a thorough check")
	faultRate = flag.Int("fault.rate", envInt("FAULT_RATE", 20000),
		"records per second each fault-test producer sends (env FAULT_RATE)")
	faultExactCrash = flag.Bool("fault.exact-crash", exactlyOnceAcrossCrashes,
		"fail the kill -9 cases on duplicates: exactly once across crashes")
	faultExactlyOnce = flag.String("fault.exactly-once", "",
		"the fault route's exactly_once setting: unset (the default configuration), true, or false (the merged path, duplicates only counted)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

const (
	faultTopic = "load"
	// faultAcks is how many records each producer must see acknowledged
	// before the fault, and again after it: the fault hits a running load,
	// and every producer is shown to have recovered before it stops.
	faultAcks = 2000
	// faultWait bounds each wait for progress, so a stuck run fails instead
	// of hanging (a bound, not a timing assertion).
	faultWait = 2 * time.Minute
)

// faultKind is what happens to the gateway in use mid-load.
type faultKind int

const (
	// sigtermTakeover: SIGTERM, and a new instance on the same port as soon
	// as the port is free, while the old one drains.
	sigtermTakeover faultKind = iota
	// killRestart: kill -9, then a new instance on the same port.
	killRestart
	// killFailover: two instances, both given to the clients as bootstrap;
	// kill -9 the one in use.
	killFailover
)

func (k faultKind) String() string {
	return [...]string{"SIGTERM+takeover", "kill -9+restart", "kill -9+failover"}[k]
}

// exact reports whether the case must leave no duplicate.
func (k faultKind) exact() bool {
	return k == sigtermTakeover || (*faultExactCrash && *faultExactlyOnce != "false")
}

// faultRoute is the load's route: the default configuration (exactly once
// for idempotent producers) unless -fault.exactly-once is set.
func faultRoute(table string) string {
	r := jsonRoute(faultTopic, table)
	if *faultExactlyOnce != "" {
		r += "    exactly_once: " + *faultExactlyOnce + "\n"
	}
	return r
}

// TestFaultSIGTERMTakeover stops the gateway gracefully mid-load and starts
// a second instance on the same port at once; the idempotent producers
// (franz-go, Java) retry what the first did not answer on the second. A
// graceful stop answers every request it has read, so no row may be lost
// or duplicated.
func TestFaultSIGTERMTakeover(t *testing.T) { runFaultCase(t, sigtermTakeover, logShape) }

// TestFaultKillRestart kills the gateway with SIGKILL mid-load and restarts
// it on the same port: no acknowledged row may be lost, and on an
// exactly-once route none may be duplicated (see exactlyOnceAcrossCrashes).
func TestFaultKillRestart(t *testing.T) { runFaultCase(t, killRestart, logShape) }

// TestFaultKillRestartPartitioned is TestFaultKillRestart on a table
// partitioned by the producer column (partitions created by the gateway).
func TestFaultKillRestartPartitioned(t *testing.T) {
	runFaultCase(t, killRestart, partitionedShape)
}

// TestFaultKillFailover runs two gateways behind one bootstrap list and
// kills the one the producers use: they fail over to the other. No
// acknowledged row may be lost, and on an exactly-once route none may be
// duplicated (see exactlyOnceAcrossCrashes).
func TestFaultKillFailover(t *testing.T) { runFaultCase(t, killFailover, logShape) }

// faultShape is the kind of table the load goes to.
type faultShape int

const (
	logShape         faultShape = iota // a 2-bucket log table
	partitionedShape                   // a log table partitioned by producer, 2 buckets each
)

// table returns the run's table and the route's extra YAML lines.
func (s faultShape) table(name string) (table, string) {
	tb := loadTable(name, 2)
	switch s {
	case partitionedShape:
		tb.partition = []string{"producer"}
		tb.columns[0].Type = tb.columns[0].Type.NonNull()
		return tb, "    partition:\n      - column: producer\n"
	}
	return tb, ""
}

func runFaultCase(t *testing.T, kind faultKind, shape faultShape) {
	e := newEnv(t)
	java := javaLoadCommand(t)
	var summary []string
	for run := range *faultRuns {
		// Every run, even after a failed one: the figures are the point.
		t.Run(fmt.Sprintf("run%d", run+1), func(t *testing.T) {
			for _, tl := range faultRun(t, e, kind, shape, run, java) {
				summary = append(summary, fmt.Sprintf("run %d %-5s %s", run+1, tl.client, tl))
			}
		})
	}
	t.Logf("%s, %d rec/s per producer:\n%s", kind, *faultRate, strings.Join(summary, "\n"))
}

// javaLoadCommand compiles the Java load producer; nil (franz-go only) when
// a Java tool is missing outside CI.
func javaLoadCommand(t *testing.T) []string {
	for _, tool := range gatewaytest.JavaTools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed: CI must run the Java client", tool)
			}
			t.Logf("%s not installed: franz-go only", tool)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	args, err := gatewaytest.JavaLoad(ctx)
	require.NoError(t, err)
	return args
}

// faultRun is one run: a fresh table and gateway(s), the producers up to
// faultAcks, the fault, the producers up to faultAcks more, then every row
// read back with pyfluss and counted per id.
func faultRun(t *testing.T, e *env, kind faultKind, shape faultShape, run int, java []string) []tally {
	tb, extra := shape.table(fmt.Sprintf("fault%d_%d_%d", kind, shape, run))
	tbl := e.createTable(t, tb)
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: faultRoute(tbl) + extra}
	bin, err := gatewayBinary()
	require.NoError(t, err)
	g := gatewaytest.StartTestOn(t, bin, cfg.config(), 0)
	seeds := []string{g.KafkaAddr}
	spare := 0
	if kind == killFailover {
		// The second instance's address is in the bootstrap list from the
		// start, but it only starts once the producers use the first: so
		// the first is the one in use for every client.
		spare = freePort(t)
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", spare))
	}

	loads := []load{startFranzLoad(t, "franz", seeds, *faultRate)}
	if java != nil {
		loads = append(loads, startJavaLoad(t, java, "java", seeds, *faultRate))
	}
	awaitAcks(t, loads, nil, g)
	if *faultExactlyOnce != "false" {
		// The default configuration is exact because the gateway took the
		// exactly-once path, not because the fault happened to miss.
		require.Positive(t, g.RequireMetrics(t).Sum("fluss_gateway_exactly_once_state_loads_total"),
			"the idempotent producers' batches did not take the exactly-once path")
	}

	var next *gatewaytest.Process
	atFault := make([]int, len(loads))
	switch kind {
	case sigtermTakeover:
		g.RequireSignal(t, syscall.SIGTERM)
		next = g.SuccessorTest(t)
		g.RequireCleanExit(t)
	case killRestart:
		g.Kill()
		next = g.SuccessorTest(t)
	case killFailover:
		next = gatewaytest.StartTestOn(t, bin, cfg.config(), spare)
		// The first instance carried the load so far, so the kill hits the
		// one in use.
		require.Positive(t, g.RequireMetrics(t).Sum("fluss_gateway_sender_records_total"))
		require.Zero(t, next.RequireMetrics(t).Sum("fluss_gateway_sender_records_total"), "the spare instance got records before the fault")
		g.Kill()
	}
	for i, l := range loads {
		atFault[i] = l.acked()
	}
	awaitAcks(t, loads, atFault, next)
	var tallies []tally
	for _, l := range loads {
		tallies = append(tallies, l.stop(t))
	}
	next.RequireStop(t)

	countReadBack(t, e, tbl, tallies)
	for _, tl := range tallies {
		t.Logf("%s: %s", tl.client, tl)
		assert.Zero(t, tl.lost, "%s: acknowledged rows lost", tl.client)
		if kind.exact() {
			assert.Zero(t, tl.dupRows, "%s: duplicated rows", tl.client)
		}
	}
	return tallies
}

// countReadBack reads a load table back out of Fluss and fills in each
// tally's read-back figures; a row that no producer sent fails the test.
func countReadBack(t *testing.T, e *env, tbl string, tallies []tally) {
	t.Helper()
	got := readIDs(t, e, tbl)
	for i := range tallies {
		tallies[i].count(got)
	}
	for id := range got {
		require.True(t, slices.ContainsFunc(tallies, func(tl tally) bool { return tl.client == id.producer && id.seq < tl.sent }),
			"row %v read back that no producer sent", id)
	}
}

// awaitAcks waits until every load has faultAcks acknowledgements (or its
// ackStep) more than from[i] (nil: 0), failing the run if one stalls.
func awaitAcks[L progress](t *testing.T, loads []L, from []int, g *gatewaytest.Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), faultWait)
	defer cancel()
	for i, l := range loads {
		want := faultAcks
		if s, ok := any(l).(interface{ ackStep() int }); ok {
			want = s.ackStep()
		}
		if from != nil {
			want += from[i]
		}
		for l.acked() < want {
			if err := l.failure(); err != nil {
				t.Fatalf("%s: %v", l.name(), err)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %d of %d records acknowledged in %s; gateway log tail:\n%s", l.name(), l.acked(), want, faultWait, g.LogTail())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// tally is one producer's figures in one run; lost, dupRows and
// unackedWritten come from the read-back.
type tally struct {
	client         string
	sent           int64
	acked          map[int64]bool
	failed         int
	lost           int // acknowledged, not read back
	dupRows        int // rows read back beyond the first of their id
	dupIDs         int // ids read back more than once
	unackedWritten int // read back although not acknowledged (failed, or answered by no one)
}

func (tl *tally) count(got map[rowID]int) {
	for seq := range tl.acked {
		if got[rowID{tl.client, seq}] == 0 {
			tl.lost++
		}
	}
	for id, n := range got {
		if id.producer != tl.client {
			continue
		}
		if n > 1 {
			tl.dupIDs++
			tl.dupRows += n - 1
		}
		if !tl.acked[id.seq] {
			tl.unackedWritten++
		}
	}
}

func (tl tally) String() string {
	return fmt.Sprintf("sent %d, acked %d, failed %d: lost %d, duplicated %d rows (%d ids), written unacknowledged %d",
		tl.sent, len(tl.acked), tl.failed, tl.lost, tl.dupRows, tl.dupIDs, tl.unackedWritten)
}

// progress is what awaitAcks watches of a producer.
type progress interface {
	name() string
	acked() int
	failure() error // non-nil once the producer itself broke
}

// load is a producer sending (producer, seq) rows at a steady rate.
type load interface {
	progress
	// stop ends sending, waits for every record's outcome and returns the
	// figures (without the read-back ones).
	stop(t *testing.T) tally
}

// franzLoad is an in-process franz-go producer with its defaults
// (idempotent, acks=all).
type franzLoad struct {
	topic    string
	client   string
	rate     int // records per second
	cl       *kgo.Client
	cancel   context.CancelFunc
	loopDone chan struct{}
	inflight sync.WaitGroup

	mu         sync.Mutex
	sent       int64
	ok         map[int64]bool
	failed     int
	maxLatency time.Duration       // longest wait for an outcome since takeMaxLatency
	pending    map[int64]time.Time // records without an outcome yet, by seq: when each was sent
	oldest     int64               // no record below this seq is pending
}

func startFranzLoad(t *testing.T, client string, seeds []string, rate int) *franzLoad {
	return startFranzLoadOn(t, faultTopic, client, seeds, rate)
}

// startFranzLoadOn is startFranzLoad writing to topic.
func startFranzLoadOn(t *testing.T, topic, client string, seeds []string, rate int) *franzLoad {
	l := &franzLoad{topic: topic, client: client, rate: rate, cl: newProducer(t, seeds[0], kgo.SeedBrokers(seeds...)),
		loopDone: make(chan struct{}), ok: make(map[int64]bool), pending: make(map[int64]time.Time)}
	ctx, cancel := context.WithCancel(t.Context())
	l.cancel = cancel
	t.Cleanup(cancel)
	go l.loop(ctx, t.Context())
	return l
}

func (l *franzLoad) loop(ctx, recordCtx context.Context) {
	defer close(l.loopDone)
	burst := max(1, l.rate/100)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for seq := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range burst {
			s := int64(seq)
			l.inflight.Add(1)
			sent := time.Now()
			l.mu.Lock()
			l.pending[s] = sent
			l.mu.Unlock()
			// recordCtx, not ctx: stopping the loop must not fail records
			// already handed over.
			l.cl.Produce(recordCtx, loadRecord(l.topic, l.client, seq), func(_ *kgo.Record, err error) {
				defer l.inflight.Done()
				l.mu.Lock()
				defer l.mu.Unlock()
				l.maxLatency = max(l.maxLatency, time.Since(sent))
				delete(l.pending, s)
				if err != nil {
					l.failed++
					return
				}
				l.ok[s] = true
			})
			seq++
			l.mu.Lock()
			l.sent = int64(seq)
			l.mu.Unlock()
		}
	}
}

func (l *franzLoad) name() string { return l.client }

func (l *franzLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ok)
}

func (l *franzLoad) failure() error { return nil }

// takeMaxLatency returns the longest time a record waited for its outcome
// since the last call.
func (l *franzLoad) takeMaxLatency() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.maxLatency
	l.maxLatency = 0
	return d
}

// oldestPending returns when the oldest record without an outcome was
// sent, false if every record has one.
func (l *franzLoad) oldestPending() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ; l.oldest < l.sent; l.oldest++ {
		if at, ok := l.pending[l.oldest]; ok {
			return at, true
		}
	}
	return time.Time{}, false
}

// awaitOutcomes waits until every record l sent before at has its outcome,
// so that the longest wait of a fault counts the records it held.
func (l *franzLoad) awaitOutcomes(t *testing.T, at time.Time, g *gatewaytest.Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), faultWait)
	defer cancel()
	for {
		sent, ok := l.oldestPending()
		if !ok || !sent.Before(at) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: a record sent at %s has no outcome after %s; gateway log tail:\n%s",
				l.client, sent.UTC().Format("15:04:05.000"), faultWait, g.LogTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (l *franzLoad) stop(t *testing.T) tally {
	l.cancel()
	<-l.loopDone
	ctx, cancel := context.WithTimeout(t.Context(), faultWait)
	defer cancel()
	require.NoError(t, l.cl.Flush(ctx), "%s: flush", l.client)
	l.inflight.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return tally{client: l.client, sent: l.sent, acked: l.ok, failed: l.failed}
}

// javaProc is a program of internal/gatewaytest/java in a child JVM that
// reports on stdout, line by line, and stops once its stdin ends.
type javaProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer  // read once the process has exited
	done   chan struct{} // stdout read to its end
}

// start runs command with args, hands its stdout to read (which returns at
// its end) and kills the process when the test ends.
func (p *javaProc) start(t *testing.T, command, args []string, read func(io.Reader)) {
	p.done = make(chan struct{})
	p.cmd = exec.Command(command[0], append(slices.Clone(command[1:]), args...)...)
	p.cmd.Stderr = &p.stderr
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		_ = p.cmd.Wait()
	})
	go func() {
		defer close(p.done)
		read(stdout)
	}()
}

// javaLoad is the Java client (gatewaytest.JavaLoad) in a child JVM with
// its defaults (idempotent, acks=all), reporting each outcome on stdout.
type javaLoad struct {
	javaProc
	client string

	mu         sync.Mutex
	ok         map[int64]bool
	failed     int
	maxSeq     int64
	maxLatency time.Duration // longest wait for an outcome since takeMaxLatency
	closed     bool          // "D" seen
	firstErr   string
	readErr    error
}

func startJavaLoad(t *testing.T, command []string, client string, seeds []string, rate int) *javaLoad {
	l := &javaLoad{client: client, ok: make(map[int64]bool), maxSeq: -1}
	l.start(t, command, []string{strings.Join(seeds, ","), faultTopic, client, strconv.Itoa(rate)}, l.read)
	return l
}

func (l *javaLoad) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		kind, rest, _ := strings.Cut(line, " ")
		seqText, rest, _ := strings.Cut(rest, " ")
		waitText, msg, _ := strings.Cut(rest, " ")
		l.mu.Lock()
		switch kind {
		case "D":
			l.closed = true
		case "A", "F":
			seq, err := strconv.ParseInt(seqText, 10, 64)
			if err != nil {
				l.readErr = fmt.Errorf("line %q: %w", line, err)
				break
			}
			waited, err := strconv.ParseInt(waitText, 10, 64)
			if err != nil {
				l.readErr = fmt.Errorf("line %q: %w", line, err)
				break
			}
			l.maxSeq = max(l.maxSeq, seq)
			l.maxLatency = max(l.maxLatency, time.Duration(waited)*time.Microsecond)
			if kind == "A" {
				l.ok[seq] = true
			} else {
				l.failed++
				if l.firstErr == "" {
					l.firstErr = msg
				}
			}
		default:
			l.readErr = fmt.Errorf("unexpected line %q", line)
		}
		l.mu.Unlock()
	}
	if err := sc.Err(); err != nil {
		l.mu.Lock()
		l.readErr = err
		l.mu.Unlock()
	}
}

func (l *javaLoad) name() string { return l.client }

// takeMaxLatency returns the longest time a record waited for its outcome
// since the last call.
func (l *javaLoad) takeMaxLatency() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.maxLatency
	l.maxLatency = 0
	return d
}

// failures returns how many records have failed so far.
func (l *javaLoad) failures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

func (l *javaLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ok)
}

func (l *javaLoad) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readErr != nil {
		return l.readErr
	}
	select {
	case <-l.done:
		return fmt.Errorf("java producer ended early; stderr:\n%s", l.stderr.String())
	default:
		return nil
	}
}

func (l *javaLoad) stop(t *testing.T) tally {
	require.NoError(t, l.stdin.Close())
	select {
	case <-l.done:
	case <-time.After(faultWait):
		t.Fatalf("%s: java producer did not finish within %s", l.client, faultWait)
	}
	err := l.cmd.Wait()
	require.NoError(t, err, "%s: java producer; stderr:\n%s", l.client, l.stderr.String())
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NoError(t, l.readErr)
	require.True(t, l.closed, "%s: java producer did not report closing", l.client)
	if l.failed > 0 {
		t.Logf("%s: %d records failed, first: %s", l.client, l.failed, l.firstErr)
	}
	// Every record sent has an outcome line, so the highest seq is the last sent.
	return tally{client: l.client, sent: l.maxSeq + 1, acked: l.ok, failed: l.failed}
}
