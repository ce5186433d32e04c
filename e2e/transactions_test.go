package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/transactions"
)

// txnProducer is a franz-go transactional producer of the gateway.
func txnProducer(t *testing.T, seeds []string, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.ProducerLinger(5*time.Millisecond),
		kgo.TransactionTimeout(time.Minute))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// txnRound runs one transaction of records producer/from..to-1 and ends it.
func txnRound(ctx context.Context, cl *kgo.Client, topic, producer string, from, to int, commit kgo.TransactionEndTry) error {
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for i := from; i < to; i++ {
		cl.Produce(ctx, loadRecord(topic, producer, i), nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return cl.EndTransaction(ctx, commit)
}

// TestTransactionsFranzGo: a franz-go transactional producer through a
// real gateway into real Fluss, read back with pyfluss. Committed
// transactions land exactly once, an aborted one never, and a producer
// fenced by a new one with the same transactional id cannot commit.
func TestTransactionsFranzGo(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn", 3))
	topic := "txn-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})
	ctx := testContext(t)
	id := uniqueName("tx")

	cl := txnProducer(t, []string{g.KafkaAddr}, id)
	require.NoError(t, txnRound(ctx, cl, topic, "a", 0, 100, kgo.TryCommit))
	require.NoError(t, txnRound(ctx, cl, topic, "a", 100, 150, kgo.TryAbort))
	require.NoError(t, txnRound(ctx, cl, topic, "a", 150, 200, kgo.TryCommit))

	// A zombie: its transaction is open when a new producer with the same
	// id starts; the new one's InitProducerId aborts it and fences it.
	require.NoError(t, cl.BeginTransaction())
	for i := 200; i < 210; i++ {
		cl.Produce(ctx, loadRecord(topic, "a", i), nil)
	}
	require.NoError(t, cl.Flush(ctx))
	successor := txnProducer(t, []string{g.KafkaAddr}, id)
	require.NoError(t, txnRound(ctx, successor, topic, "a", 210, 220, kgo.TryCommit))
	err := cl.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "the fenced producer's commit")
	assert.True(t, errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch), "got %v", err)

	got := readIDs(t, e, tbl)
	want := map[rowID]int{}
	for _, r := range [][2]int{{0, 100}, {150, 200}, {210, 220}} {
		for i := r[0]; i < r[1]; i++ {
			want[rowID{"a", int64(i)}] = 1
		}
	}
	assert.Equal(t, want, got, "committed rows once each; none of the aborted (100-149) or fenced (200-209) transactions")
	m := g.RequireMetrics(t)
	assert.Positive(t, m.Sum("fluss_gateway_exactly_once_state_loads_total"), "the commits went through the exactly-once path")
	assert.Equal(t, 3.0, m.Sum("fluss_gateway_transactions_total", `outcome="commit"`))
	assert.Equal(t, 1.0, m.Sum("fluss_gateway_transactions_total", `outcome="abort"`))
	assert.Equal(t, 1.0, m.Sum("fluss_gateway_transactions_total", `outcome="fenced"`), "the zombie's transaction")
	assert.Equal(t, 160.0, m.Sum("fluss_gateway_transaction_applied_records_total"))
	assert.Positive(t, m.Sum("fluss_gateway_transaction_staged_batches_total"))
	assert.Positive(t, m.Sum("fluss_gateway_transaction_staged_bytes_total"))
	assert.Equal(t, 3.0, m.Sum("fluss_gateway_transaction_apply_duration_seconds_count"))
}

// TestTransactionsJava: Java kafka-clients' transactional producer
// (internal/gatewaytest/java/TxnMain.java) through a real gateway into real
// Fluss, read back with pyfluss: every committed transaction's records
// once, no aborted one's, and a producer fenced by a second one with the
// same transactional id cannot commit.
func TestTransactionsJava(t *testing.T) {
	ctx, cancel := context.WithTimeout(testContext(t), 5*time.Minute)
	defer cancel()
	cmd, err := gatewaytest.JavaMain(ctx, "TxnMain")
	require.NoError(t, err)
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_java", 3))
	topic := "txn-java-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})

	const transactions, each = 6, 200
	out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], g.KafkaAddr, topic, uniqueName("jtx"), "java",
		strconv.Itoa(transactions), strconv.Itoa(each))...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	want := map[rowID]int{}
	committed, aborted, fenced := 0, 0, ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && (f[0] == "C" || f[0] == "A"):
			from, err1 := strconv.Atoi(f[1])
			to, err2 := strconv.Atoi(f[2])
			require.NoError(t, errors.Join(err1, err2), line)
			if f[0] == "A" {
				aborted++
				continue
			}
			committed++
			for i := from; i <= to; i++ {
				want[rowID{"java", int64(i)}] = 1
			}
		case len(f) >= 1 && (f[0] == "FENCED" || f[0] == "NOT-FENCED"):
			fenced = line
		}
	}
	require.Equal(t, transactions+1, committed+aborted, "output:\n%s", out)
	assert.Equal(t, 2, aborted)
	assert.True(t, strings.HasPrefix(fenced, "FENCED "), "the zombie's commit: %q", fenced)
	got := readIDs(t, e, tbl)
	assert.Equal(t, len(want), len(got), "rows read back")
	assert.Equal(t, want, got, "committed rows once each, none of the aborted or fenced transactions")
}

// TestTransactionsFlinkExactlyOnce: Flink 1.20's KafkaSink with
// DeliveryGuarantee.EXACTLY_ONCE (flink-connector-kafka 3.4.0-1.20,
// internal/gatewaytest/flink/FlinkTxnJob.java), checkpoints every second,
// a task failure at the first record after a completed checkpoint and a
// restart from it: every id lands exactly once, read back with pyfluss.
func TestTransactionsFlinkExactlyOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(testContext(t), 10*time.Minute)
	defer cancel()
	cmd, err := gatewaytest.FlinkTxnJob(ctx)
	require.NoError(t, err)
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_flink", 2))
	topic := "txn-flink-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})

	const records = 30_000
	job := exec.CommandContext(ctx, cmd[0], append(cmd[1:], g.KafkaAddr, topic, uniqueName("flink"), strconv.Itoa(records), "2")...)
	out, err := job.CombinedOutput()
	require.NoError(t, err, "flink job:\n%s", tailString(string(out), 4000))
	require.Contains(t, string(out), "FAILED-ONCE true", "the injected failure happened")
	require.Contains(t, string(out), "DONE")

	got := readIDs(t, e, tbl)
	lost, dup := 0, 0
	for i := range int64(records) {
		switch n := got[rowID{"flink", i}]; {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
		}
	}
	t.Logf("flink exactly once with a restart: %d rows read back for %d ids, %d lost, %d duplicated", len(got), records, lost, dup)
	assert.Zero(t, lost, "lost ids")
	assert.Zero(t, dup, "duplicated rows")
	assert.Len(t, got, records, "no row outside the ids")
}

// tailString is the end of s, at most n bytes.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestTransactionsCrashMidCommit: the gateway in use is killed (SIGKILL,
// at a failpoint) after an EndTxn's commit was decided in Fluss and before
// it was applied or answered; a second instance takes over on the same
// address (as behind one load-balanced bootstrap address). franz-go
// reports the commit's outcome as unknown, and its documented recovery is
// EndTransaction(TryAbort), which re-initializes the producer id: the
// second instance's InitProducerId finds the decided commit unapplied and
// applies it first, as a Kafka coordinator completes a prepared commit.
// Every committed row lands once, nothing of the aborted transaction does.
func TestTransactionsCrashMidCommit(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_crash", 2))
	topic := "txn-crash-" + uniqueName("t")
	bin, err := gatewayBinary()
	require.NoError(t, err)
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)}.config()
	crashing := cfg
	crashing.Env = []string{transactions.EnvFailpoint + "=" + transactions.FailpointTxnCommitDecided}
	first := gatewaytest.StartTestOn(t, bin, crashing, 0)
	ctx := testContext(t)

	cl := txnProducer(t, []string{first.KafkaAddr}, uniqueName("crash"))
	require.NoError(t, txnRound(ctx, cl, topic, "c", 0, 50, kgo.TryAbort), "an abort does not reach the failpoint")
	require.NoError(t, cl.BeginTransaction())
	for i := 50; i < 550; i++ {
		cl.Produce(ctx, loadRecord(topic, "c", i), nil)
	}
	require.NoError(t, cl.Flush(ctx))
	err = cl.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "the gateway died before answering the commit")
	select {
	case <-first.Exited():
	case <-time.After(time.Minute):
		t.Fatal("the gateway did not reach its failpoint")
	}
	assert.Contains(t, first.Logs(), "failpoint: the process kills itself after a commit decision")
	second := gatewaytest.StartTestOn(t, bin, cfg, first.KafkaPort())
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort), "franz-go's recovery from an unknown commit outcome")
	require.NoError(t, txnRound(ctx, cl, topic, "c", 550, 600, kgo.TryCommit), "the producer goes on")
	assert.NotContains(t, second.Logs(), "failpoint")

	got := readIDs(t, e, tbl)
	want := map[rowID]int{}
	for i := 50; i < 600; i++ {
		want[rowID{"c", int64(i)}] = 1
	}
	assert.Equal(t, want, got, "the decided commit applied once by the second instance, the aborted transaction nowhere")
}

// TestTransactionsStagingLimit: a transaction that would stage more than
// kafka.transaction_max_bytes gets MESSAGE_TOO_LARGE for the batch past
// the limit; the producer aborts, and nothing of it is ever readable,
// while its next, smaller transaction commits.
func TestTransactionsStagingLimit(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_limit", 1))
	topic := "txn-limit-" + uniqueName("t")
	bin, err := gatewayBinary()
	require.NoError(t, err)
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)}.config()
	cfg.TransactionMaxBytes = "64KiB"
	g := gatewaytest.StartTest(t, bin, cfg)
	ctx := testContext(t)
	cl := txnProducer(t, []string{g.KafkaAddr}, uniqueName("limit"))

	require.NoError(t, cl.BeginTransaction())
	pad := strings.Repeat("p", 900)
	var refused error
	for i := 0; i < 200 && refused == nil; i++ {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"producer": "big", "seq": %d, "pad": %q}`, i, pad)}
		refused = cl.ProduceSync(ctx, r).FirstErr()
	}
	require.Error(t, refused, "200 KB in one transaction, past 64 KiB")
	assert.ErrorIs(t, refused, kerr.MessageTooLarge)
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort))
	require.NoError(t, txnRound(ctx, cl, topic, "small", 0, 20, kgo.TryCommit))

	got := readIDs(t, e, tbl)
	want := map[rowID]int{}
	for i := range 20 {
		want[rowID{"small", int64(i)}] = 1
	}
	assert.Equal(t, want, got, "only the small transaction")
	assert.Contains(t, g.Logs(), "kafka.transaction_max_bytes")
}

// TestTransactionsCrashMidCommitJava: as TestTransactionsCrashMidCommit,
// with Java kafka-clients 4.1 (internal/gatewaytest/java/TxnCrashMain.java),
// which retries the EndTxn whose connection died: the second instance on
// the same address gets the repeated EndTxn, applies the decided commit
// and answers it; the rows land once.
func TestTransactionsCrashMidCommitJava(t *testing.T) {
	ctx, cancel := context.WithTimeout(testContext(t), 6*time.Minute)
	defer cancel()
	cmd, err := gatewaytest.JavaMain(ctx, "TxnCrashMain")
	require.NoError(t, err)
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_crash_java", 2))
	topic := "txn-crash-java-" + uniqueName("t")
	bin, err := gatewayBinary()
	require.NoError(t, err)
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)}.config()
	crashing := cfg
	crashing.Env = []string{transactions.EnvFailpoint + "=" + transactions.FailpointTxnCommitDecided}
	first := gatewaytest.StartTestOn(t, bin, crashing, 0)

	const records = 500
	java := exec.CommandContext(ctx, cmd[0], append(cmd[1:], first.KafkaAddr, topic, uniqueName("jcrash"), "j", strconv.Itoa(records))...)
	stdin, err := java.StdinPipe()
	require.NoError(t, err)
	stdout, err := java.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	java.Stderr = &stderr
	require.NoError(t, java.Start())
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "java exited before %s: %s", what, stderr.String())
			return l
		case <-ctx.Done():
			t.Fatalf("no %s from java: %s", what, stderr.String())
			return ""
		}
	}
	require.Equal(t, "FLUSHED", next("FLUSHED"))
	_, err = io.WriteString(stdin, "go\n")
	require.NoError(t, err)
	select {
	case <-first.Exited():
	case <-ctx.Done():
		t.Fatal("the gateway did not reach its failpoint")
	}
	gatewaytest.StartTestOn(t, bin, cfg, first.KafkaPort())
	assert.Equal(t, "COMMITTED", next("the first commit"), "the EndTxn retried on the second instance")
	assert.Equal(t, "COMMITTED", next("the second commit"))
	require.NoError(t, java.Wait(), stderr.String())

	got := readIDs(t, e, tbl)
	want := map[rowID]int{}
	for i := range records + 10 {
		want[rowID{"j", int64(i)}] = 1
	}
	assert.Equal(t, want, got, "both transactions once each")
}

// TestTransactionsKafkaJS: kafkajs 2.2.4's transactional producer
// (internal/gatewaytest/node/txn.js; it speaks InitProducerId, AddPartitionsToTxn
// and EndTxn v0-1 only, so a fenced producer gets INVALID_PRODUCER_EPOCH)
// through a real gateway into real Fluss, read back with pyfluss.
func TestTransactionsKafkaJS(t *testing.T) {
	ctx, cancel := context.WithTimeout(testContext(t), 5*time.Minute)
	defer cancel()
	cmd, err := gatewaytest.KafkaJSTxn(ctx)
	require.NoError(t, err)
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_kafkajs", 3))
	topic := "txn-kafkajs-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})

	out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], g.KafkaAddr, topic, uniqueName("kjs"), "kafkajs")...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Equal(t, []string{"C 0 49", "A 50 99", "C 100 149"}, lines[:3], "output:\n%s", out)
	assert.True(t, strings.HasPrefix(lines[3], "FENCED"), "the zombie's commit: %q", lines[3])
	assert.Equal(t, []string{"C 160 169", "D"}, lines[4:])

	got := readIDs(t, e, tbl)
	want := map[rowID]int{}
	for _, r := range [][2]int{{0, 50}, {100, 150}, {160, 170}} {
		for i := r[0]; i < r[1]; i++ {
			want[rowID{"kafkajs", int64(i)}] = 1
		}
	}
	assert.Equal(t, want, got, "committed rows once each, none of the aborted or fenced transactions")
}

// TestTransactionsSweeper: the transactions nobody comes back for are
// finished by another instance's sweeper. A commit decided by an instance
// that then died (failpoint), whose producer never returns, is applied
// (its rows appear, once); a transaction left open by a producer that went
// away is aborted after its timeout (its rows never appear).
func TestTransactionsSweeper(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_sweep", 2))
	topic := "txn-sweep-" + uniqueName("t")
	bin, err := gatewayBinary()
	require.NoError(t, err)
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)}.config()
	crashing := cfg
	crashing.Env = []string{transactions.EnvFailpoint + "=" + transactions.FailpointTxnCommitDecided}
	first := gatewaytest.StartTestOn(t, bin, crashing, 0)
	ctx := testContext(t)

	committer := txnProducer(t, []string{first.KafkaAddr}, uniqueName("sweep"))
	require.NoError(t, committer.BeginTransaction())
	for i := range 300 {
		committer.Produce(ctx, loadRecord(topic, "committed", i), nil)
	}
	require.NoError(t, committer.Flush(ctx))
	require.Error(t, committer.EndTransaction(ctx, kgo.TryCommit), "the gateway died before answering")
	committer.Close() // and never comes back
	select {
	case <-first.Exited():
	case <-time.After(time.Minute):
		t.Fatal("the gateway did not reach its failpoint")
	}

	second := gatewaytest.StartTest(t, bin, cfg)
	abandoned, err := kgo.NewClient(kgo.SeedBrokers(second.KafkaAddr), kgo.TransactionalID(uniqueName("gone")),
		kgo.TransactionTimeout(3*time.Second), kgo.ProducerLinger(5*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, abandoned.BeginTransaction())
	for i := range 10 {
		abandoned.Produce(ctx, loadRecord(topic, "abandoned", i), nil)
	}
	require.NoError(t, abandoned.Flush(ctx))
	abandoned.Close() // without ending the transaction

	require.NoError(t, waitFor(ctx, 2*time.Minute, func() bool {
		return second.RequireMetrics(t).Sum("fluss_gateway_transactions_total", `outcome="timeout"`) >= 1 &&
			second.RequireMetrics(t).Sum("fluss_gateway_transaction_applied_records_total") >= 300
	}), "the sweeper applies the commit and aborts the abandoned transaction:\n%s", second.LogTail())
	assert.Contains(t, second.Logs(), "committed transaction applied by the sweeper")
	assert.Contains(t, second.Logs(), "its producer did not end it within its timeout")

	got := readIDs(t, e, tbl)
	want := map[rowID]int{}
	for i := range 300 {
		want[rowID{"committed", int64(i)}] = 1
	}
	assert.Equal(t, want, got, "the decided commit once, nothing of the abandoned transaction")
}

// TestTransactionsAdminAPIs: DescribeTransactions and ListTransactions (as
// kafka-transactions.sh and Admin clients send them, here through
// franz-go's request routing) report an open transaction, its commit, and
// an unknown id.
func TestTransactionsAdminAPIs(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_admin", 2))
	topic := "txn-admin-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})
	ctx := testContext(t)
	id := uniqueName("admin")
	cl := txnProducer(t, []string{g.KafkaAddr}, id)
	require.NoError(t, cl.BeginTransaction())
	for i := range 10 {
		cl.Produce(ctx, loadRecord(topic, "a", i), nil)
	}
	require.NoError(t, cl.Flush(ctx))

	describe := func(ids ...string) []kmsg.DescribeTransactionsResponseTransactionState {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = ids
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.TransactionStates
	}
	d := describe(id, "never-seen-"+id)
	require.Len(t, d, 2)
	assert.Zero(t, d[0].ErrorCode)
	assert.Equal(t, "Ongoing", d[0].State)
	assert.Equal(t, int32(60_000), d[0].TimeoutMillis)
	assert.Positive(t, d[0].StartTimestamp)
	require.Len(t, d[0].Topics, 1)
	assert.Equal(t, topic, d[0].Topics[0].Topic)
	assert.Equal(t, int16(105), d[1].ErrorCode, "TRANSACTIONAL_ID_NOT_FOUND")

	listed := func(state string) bool {
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters = []string{state}
		shards := cl.RequestSharded(ctx, req)
		for _, sh := range shards {
			if sh.Err != nil {
				continue
			}
			for _, ts := range sh.Resp.(*kmsg.ListTransactionsResponse).TransactionStates {
				if ts.TransactionalID == id && ts.TransactionState == state && ts.ProducerID == d[0].ProducerID {
					return true
				}
			}
		}
		return false
	}
	require.NoError(t, waitFor(ctx, time.Minute, func() bool { return listed("Ongoing") }), "ListTransactions lists the open transaction")

	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	// CompleteCommit once applied and marked (before EndTxn is answered;
	// waited for all the same, as an Admin client would poll).
	require.NoError(t, waitFor(ctx, time.Minute, func() bool {
		d = describe(id)
		return d[0].State == "CompleteCommit"
	}), "the committed transaction: %+v", d)
	require.NoError(t, waitFor(ctx, time.Minute, func() bool { return !listed("Ongoing") }), "no longer listed once committed")
}

// TestTransactionsLargeCommit: one transaction of 3,000 records of about
// 1 KB into a one-bucket table is applied in several batches (an apply
// joins at most 1 MiB); every record lands once.
func TestTransactionsLargeCommit(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_large", 1))
	topic := "txn-large-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})
	ctx := testContext(t)
	cl := txnProducer(t, []string{g.KafkaAddr}, uniqueName("large"))
	require.NoError(t, cl.BeginTransaction())
	pad := strings.Repeat("x", 1000)
	for i := range 3000 {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"producer": "large", "seq": %d, "pad": %q}`, i, pad)}, nil)
	}
	require.NoError(t, cl.Flush(ctx))
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	got := readIDs(t, e, tbl)
	assert.Len(t, got, 3000)
	for i := range 3000 {
		assert.Equal(t, 1, got[rowID{"large", int64(i)}], "seq %d", i)
	}
	assert.Equal(t, 3000.0, g.RequireMetrics(t).Sum("fluss_gateway_transaction_applied_records_total"))
}

// TestTransactionsKafkaTool runs Kafka's own kafka-transactions.sh
// (TransactionsCommand of kafka-tools 4.1.0) against two gateway
// instances while a franz-go producer on the first holds a transaction
// open on partitions 0 and 1 (added by two AddPartitionsToTxn): list,
// describe and describe-producers show it, and find-hanging finds nothing
// hanging on either instance. The second instance knows the transaction
// from the transactions table only (its begin row names partition 0), so
// it must list partition 0 in describe-producers and describe alike, or
// find-hanging would call the transaction hanging there.
func TestTransactionsKafkaTool(t *testing.T) {
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_tool", 2))
	topic := "txn-tool-" + uniqueName("t")
	cfg := gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	ctx := testContext(t)
	tool, err := gatewaytest.KafkaTool(ctx, "org.apache.kafka.tools.TransactionsCommand")
	require.NoError(t, err)
	run := func(g *gatewaytest.Process, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, tool[0], append(tool[1:], append([]string{"--bootstrap-server", g.KafkaAddr}, args...)...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr // the tools' log lines (slf4j-simple)
		out, err := cmd.Output()
		require.NoError(t, err, "kafka-transactions.sh %v:\n%s\n%s", args, out, stderr.String())
		return string(out)
	}
	// rows returns the output's table rows (after the header) as fields.
	rows := func(out string) [][]string {
		var rs [][]string
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 {
				rs = append(rs, f)
			}
		}
		return rs
	}

	id := uniqueName("tool")
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr), kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	require.NoError(t, cl.BeginTransaction())
	for part := range int32(2) {
		for i := range 5 {
			r := loadRecord(topic, "tool", int(part)*5+i)
			r.Partition = part
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
		}
	}
	pid, _, err := cl.ProducerID(ctx)
	require.NoError(t, err)
	spid := strconv.FormatInt(pid, 10)

	// The instance the producer talks to knows both partitions.
	desc := run(a, "describe", "--transactional-id", id)
	assert.Contains(t, desc, "Ongoing")
	assert.Contains(t, desc, topic+"-0")
	assert.Contains(t, desc, topic+"-1")
	for part := range 2 {
		rs := rows(run(a, "describe-producers", "--topic", topic, "--partition", strconv.Itoa(part)))
		require.Len(t, rs, 1, "partition %d: one producer", part)
		assert.Equal(t, spid, rs[0][0], "partition %d", part)
		assert.NotEqual(t, "None", rs[0][len(rs[0])-1], "an open transaction has a start offset")
	}

	// The other instance learns it from the table, at its sweeper's pace.
	require.NoError(t, waitFor(ctx, 2*time.Minute, func() bool {
		rs := rows(run(b, "describe-producers", "--topic", topic, "--partition", "0"))
		return len(rs) == 1 && rs[0][0] == spid
	}), "the second instance lists the producer on partition 0")
	assert.Contains(t, run(b, "describe", "--transactional-id", id), topic+"-0")
	found := false
	for _, r := range rows(run(b, "list")) {
		found = found || (r[0] == id && r[2] == spid && r[3] == "Ongoing")
	}
	assert.True(t, found, "list on the second instance shows the open transaction")
	for _, g := range []*gatewaytest.Process{a, b} {
		assert.Empty(t, rows(run(g, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")),
			"nothing hanging on %s", g.KafkaAddr)
	}

	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	for part := range 2 {
		assert.Empty(t, rows(run(a, "describe-producers", "--topic", topic, "--partition", strconv.Itoa(part))),
			"no open transaction on partition %d after the commit", part)
	}
	got := readIDs(t, e, tbl)
	assert.Len(t, got, 10)
}

// TestTransactionsFlink2Listing: Flink 2.0's KafkaSink EXACTLY_ONCE with
// TransactionNamingStrategy.POOLING (flink-connector-kafka 4.0.1-2.0,
// internal/gatewaytest/flink2/Flink2TxnJob.java), whose recovery lists
// lingering transactions through Admin (describeTopics, DescribeProducers,
// ListTransactions filtered by those producer ids and Ongoing) and aborts
// the ones it owns, other than the restored checkpoint's (which its
// committer commits), by InitProducerId on their ids. Checkpoints every
// second; the first run's process dies (halt, as a lost TaskManager: an
// in-JVM task failure would not do, the 4.0 writer aborts its transaction
// when closed) after a completed checkpoint with its sink's transactions
// open in the gateway; a second run restores that checkpoint. Between the
// runs the gateway's DescribeProducers and ListTransactions show the
// lingering transactions; the second run sends DescribeProducers and
// ListTransactions, its listing finds all of them, those after the
// checkpoint are aborted (fenced by a new claim of their ids, as the
// gateway logs), none is left open, and every id lands exactly once.
func TestTransactionsFlink2Listing(t *testing.T) {
	ctx, cancel := context.WithTimeout(testContext(t), 10*time.Minute)
	defer cancel()
	cmd, err := gatewaytest.Flink2TxnJob(ctx)
	require.NoError(t, err)
	e := newEnv(t)
	tbl := e.createTable(t, loadTable("txn_flink2", 2))
	topic := "txn-flink2-" + uniqueName("t")
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: jsonRoute(topic, tbl)})
	prefix := uniqueName("flink2")
	checkpoints := "file://" + t.TempDir()

	const records = 20_000
	run := func(restore ...string) (string, error) {
		args := append(append([]string(nil), cmd[1:]...), g.KafkaAddr, topic, prefix, strconv.Itoa(records), "2", checkpoints)
		args = append(args, restore...)
		out, err := exec.CommandContext(ctx, cmd[0], args...).CombinedOutput()
		return string(out), err
	}

	// The first run dies after its first completed checkpoint.
	out, err := run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit) && exit.ExitCode() == 3, "the first run halts (exit 3): %v\n%s", err, tailString(out, 4000))
	var restore string
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "HALT-AFTER-CHECKPOINT "); ok {
			restore = rest
		}
	}
	require.NotEmpty(t, restore, "the checkpoint to restore:\n%s", tailString(out, 4000))

	// What the listing strategy will see: the producers with an open
	// transaction on the topic's partitions, and those producers' ongoing
	// transactions, the sink's (ids prefix-<subtask>-<n>).
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.KafkaAddr))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ongoing := func(pids []int64) map[string]int64 {
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters = []string{"Ongoing"}
		req.ProducerIDFilters = pids
		txns := make(map[string]int64)
		for _, sh := range cl.RequestSharded(ctx, req) {
			require.NoError(t, sh.Err)
			resp := sh.Resp.(*kmsg.ListTransactionsResponse)
			require.Zero(t, resp.ErrorCode, "ListTransactions")
			for _, ts := range resp.TransactionStates {
				if strings.HasPrefix(ts.TransactionalID, prefix+"-") {
					txns[ts.TransactionalID] = ts.ProducerID
				}
			}
		}
		return txns
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = topic, []int32{0, 1}
	dp.Topics = append(dp.Topics, dt)
	var pids []int64
	epochs := make(map[int64]int32) // producer id → its epoch at the crash
	for _, sh := range cl.RequestSharded(ctx, dp) {
		require.NoError(t, sh.Err)
		for _, rt := range sh.Resp.(*kmsg.DescribeProducersResponse).Topics {
			for _, rp := range rt.Partitions {
				require.Zero(t, rp.ErrorCode, "DescribeProducers %s-%d: %v", rt.Topic, rp.Partition, rp.ErrorMessage)
				for _, ap := range rp.ActiveProducers {
					pids = append(pids, ap.ProducerID)
					epochs[ap.ProducerID] = ap.ProducerEpoch
				}
			}
		}
	}
	require.NotEmpty(t, pids, "DescribeProducers lists the dead run's producers")
	// ListTransactions answers from the gateway's sweeper (every 5 s), so a
	// transaction begun since its last sweep is listed a little later.
	var lingering map[string]int64
	crashed := time.Now()
	require.NoError(t, waitFor(ctx, 30*time.Second, func() bool {
		lingering = ongoing(pids)
		return len(lingering) > 0
	}), "ListTransactions(producer ids %v, Ongoing) lists the dead run's transactions; unfiltered: %v", pids, ongoing(nil))
	t.Logf("after the crash: active producers %v, lingering transactions %v (listed after %v); restoring %s",
		pids, lingering, time.Since(crashed).Round(time.Millisecond), restore)

	// The second run recovers from the checkpoint and finishes.
	before := g.RequireMetrics(t)
	out, err = run(restore)
	require.NoError(t, err, "the recovered run:\n%s", tailString(out, 8000))
	require.Contains(t, out, "DONE")
	after := g.RequireMetrics(t)
	delta := func(name string, labels ...string) float64 {
		return after.Sum(name, labels...) - before.Sum(name, labels...)
	}
	const requests = "fluss_gateway_kafka_requests_total"
	describeProducers, listTxns := delta(requests, `api="describe_producers"`), delta(requests, `api="list_transactions"`)
	fenced := delta("fluss_gateway_transactions_total", `outcome="fenced"`)
	found := make(map[string]bool)
	precommitted := make(map[string]bool) // the restored checkpoint's transactions: committed, not aborted
	for line := range strings.Lines(out) {
		// ExactlyOnceKafkaWriter: "Aborting lingering transactions from previous execution. Recovered
		// states: [KafkaWriterState{..., precommittedTransactionalIds=[CheckpointTransaction{transactionalId='<id>', ...".
		if _, states, ok := strings.Cut(line, "precommittedTransactionalIds="); ok {
			for _, part := range strings.Split(states, "transactionalId='")[1:] {
				id, _, _ := strings.Cut(part, "'")
				precommitted[id] = true
			}
		}
		// TransactionAbortStrategyImpl.LISTING: "Found N open transactions for subtask S: [id, ...]".
		if _, rest, ok := strings.Cut(line, "Found "); ok {
			if f := strings.Fields(rest); len(f) > 4 && f[1] == "open" && f[2] == "transactions" {
				n, err := strconv.Atoi(f[0])
				require.NoError(t, err, line)
				_, list, _ := strings.Cut(rest, "[")
				list, _, _ = strings.Cut(list, "]")
				ids := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' })
				require.Len(t, ids, n, line)
				for _, id := range ids {
					found[id] = true
				}
				t.Logf("flink: %s", strings.TrimSpace(line))
			}
		}
	}
	t.Logf("recovery: %v DescribeProducers and %v ListTransactions requests, open transactions found by the sink %v, %v transactions fenced; precommitted in the checkpoint: %v",
		describeProducers, listTxns, found, fenced, precommitted)
	assert.Positive(t, describeProducers, "the recovery sent DescribeProducers")
	assert.Positive(t, listTxns, "the recovery sent ListTransactions")
	// The sink's listing must find every lingering transaction it has to
	// abort. One of the checkpoint's may be missing: the committer commits
	// those as the job starts, and one committed before its subtask lists
	// is rightly no longer open (a CI run saw this).
	for id := range lingering {
		if !precommitted[id] {
			assert.True(t, found[id], "the sink's listing found the lingering transaction %s (found %v, lingering %v)", id, found, lingering)
		}
	}
	// And it finds nothing but the dead run's open transactions: those the
	// test saw lingering, or the checkpoint's, which stay open until the
	// committer commits them as the job starts (the test's own listing,
	// taken once the first lingering one shows, need not include them: a
	// CI run's sink found a checkpoint's transaction the test had not
	// listed).
	for id := range found {
		_, ok := lingering[id]
		assert.True(t, ok || precommitted[id], "the sink's listing found %s, which was neither lingering after the crash (%v) nor in the checkpoint (%v)", id, lingering, precommitted)
	}
	// Each lingering transaction whose id is not one of the checkpoint's
	// (which the committer commits) was aborted: a new claim of its id
	// settled it. POOLING reuses an id once its transaction is committed, so
	// an id of the checkpoint may linger at a later epoch and be aborted too;
	// the halting subtask's open transaction began after the restored
	// checkpoint, so at least one abort is due.
	logs := g.Logs()
	aborted := 0
	for id, pid := range lingering {
		line := fmt.Sprintf("transaction aborted: a new producer with the same transactional id started\" component=transactions transactional_id=%s producer_id=%d epoch=%d",
			id, pid, epochs[pid])
		abortedByClaim := strings.Contains(logs, line)
		t.Logf("lingering %s: producer %d epoch %d, id in the checkpoint %v, aborted by a new claim %v",
			id, pid, epochs[pid], precommitted[id], abortedByClaim)
		if !precommitted[id] {
			assert.True(t, abortedByClaim, "the lingering transaction %s (producer %d) was aborted", id, pid)
		}
		if abortedByClaim {
			aborted++
		}
	}
	t.Logf("%d lingering transactions aborted on recovery", aborted)
	assert.Positive(t, aborted, "a lingering transaction after the checkpoint was aborted")
	assert.GreaterOrEqual(t, fenced, float64(aborted), "fenced transactions")
	// ListTransactions answers as of the sweeper's last read (5 s) plus what
	// began on this instance since: a transaction ended just now through
	// a new claim may be listed until the next sweep.
	var left map[string]int64
	assert.NoError(t, waitFor(ctx, 30*time.Second, func() bool { left = ongoing(nil); return len(left) == 0 }),
		"no transaction of the sink is left open: %v", left)

	got := readIDs(t, e, tbl)
	lost, dup := 0, 0
	for i := range int64(records) {
		switch n := got[rowID{"flink2", i}]; {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
		}
	}
	t.Logf("flink 2 exactly once (POOLING, LISTING) across a crash: %d rows read back for %d ids, %d lost, %d duplicated", len(got), records, lost, dup)
	assert.Zero(t, lost, "lost ids")
	assert.Zero(t, dup, "duplicated rows")
	assert.Len(t, got, records, "no row outside the ids")
}
