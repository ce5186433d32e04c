package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flussdb"
	"github.com/fluss-kafka/gateway/internal/flusstest"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/producerstate"
)

// The faults here hit Fluss, not the gateway: a replicated cluster of its
// own (3 tablet servers, every table with 3 replicas), two gateway
// instances with the default configuration that reach each tablet server
// through a TCP proxy the test controls (flusstest.ClientProxies, for the
// network partition), idempotent producers (franz-go, Java) through the default
// route, franz-go and Java transactional producers, a topic on a server no
// fault touches, and a seeded schedule of faults in a row. Every row is
// read back with pyfluss and counted.
var (
	flussFaultSchedule = flag.String("flussfault.schedule", envString("FLUSS_FAULT_SCHEDULE", "short"),
		"fault schedule of TestFlussFaults (env FLUSS_FAULT_SCHEDULE): short (CI, one of each fault), long (make test-fluss-faults), or a list such as pause-data,crash-state")
	flussFaultSeed = flag.Uint64("flussfault.seed", uint64(envInt("FLUSS_FAULT_SEED", 1)),
		"seed of the long schedule's order and victims (env FLUSS_FAULT_SEED); a run is repeated by its seed")
	flussFaultSession = flag.String("flussfault.session-timeout", envString("FLUSS_FAULT_SESSION_TIMEOUT", "10s"),
		"zookeeper.client.session-timeout of the test cluster, Fluss's failure detection (env FLUSS_FAULT_SESSION_TIMEOUT; Fluss's default is 60s)")
	flussFaultSettings = flag.String("flussfault.server-settings", os.Getenv("FLUSS_FAULT_SERVER_SETTINGS"),
		"more server.yaml settings of the test cluster, key=value,key=value (env FLUSS_FAULT_SERVER_SETTINGS), e.g. log.replica.max-lag-time=10s")
	flussFaultRate = flag.Int("flussfault.rate", envInt("FLUSS_FAULT_RATE", 5000),
		"records per second each producer sends in TestFlussFaults (env FLUSS_FAULT_RATE)")
	flussFaultInstances = flag.Int("flussfault.instances", envInt("FLUSS_FAULT_INSTANCES", 1),
		"gateway instances of TestFlussFaults (env FLUSS_FAULT_INSTANCES): the franz-go producers use the first, the Java ones the last; 1 by default; with 2, runs before the fix of a writer id taken for a sequence gap read rows back twice (docs/deployment.md, two instances)")
	flussFaultRace = flag.Bool("flussfault.race", envString("FLUSS_FAULT_RACE", "1") != "0",
		"run the gateway built with the race detector in TestFlussFaults (env FLUSS_FAULT_RACE=0 for the plain build, whose latencies are the product's: the race build costs several times the CPU)")
)

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

const (
	steadyTopic       = "steady"
	txnTopic          = "txns"
	flussFaultServers = 3
	flussFaultBuckets = 6 // two leaders per tablet server
	// flussFaultDown is how long a crashed server stays down before it is
	// started again (Fluss then waits for its old ZooKeeper session to
	// expire before it registers).
	flussFaultDown = 5 * time.Second
	// flussFaultPause is how long a paused server stays stopped: past the
	// gateway's default Fluss request timeout (30s).
	flussFaultPause = 35 * time.Second
)

// flussFault is one kind of fault the schedule draws.
type flussFault int

const (
	// crashDataLeader: SIGKILL of the server leading a bucket of the
	// load's table, started again flussFaultDown later.
	crashDataLeader flussFault = iota
	// crashStateLeader: SIGKILL of the server leading a bucket of the
	// gateway's producer-state table.
	crashStateLeader
	// pauseDataLeader: SIGSTOP of the server leading a bucket of the load's
	// table for flussFaultPause (a long GC pause), then SIGCONT.
	pauseDataLeader
	// partitionDataLeader: the network between the gateway and the server
	// leading a bucket of the load's table cut for flussFaultPause (its
	// proxy holds every byte, and new connections reach nothing), then
	// healed. The servers still see each other: Fluss keeps the leader.
	partitionDataLeader
	// crashCoordinator: SIGKILL of the coordinator, started again on its
	// address flussFaultDown later.
	crashCoordinator
	// stopCluster: every tablet server and the coordinator stopped
	// (SIGTERM) one after the other under load, all started again
	// flussFaultDown later.
	stopCluster
	// crashCluster: SIGKILL of the coordinator and every tablet server at
	// once (a power loss), all started again flussFaultDown later. Not in
	// the short or long schedule: Fluss 0.9.1 loses acknowledged rows in
	// it (docs/deployment.md); run by name to see it.
	crashCluster
)

func (f flussFault) String() string {
	return [...]string{"crash data leader", "crash producer-state leader", "pause data leader",
		"partition data leader", "crash coordinator", "stop whole cluster", "crash whole cluster"}[f]
}

// flussFaultNames are the faults' names in a schedule given as a list.
var flussFaultNames = map[string]flussFault{"crash-data": crashDataLeader, "crash-state": crashStateLeader,
	"pause-data": pauseDataLeader, "partition-data": partitionDataLeader, "crash-coordinator": crashCoordinator,
	"stop-cluster": stopCluster, "crash-cluster": crashCluster}

// flussFaultPlan returns the faults in the order they happen: every
// kind once (short), twelve in an order drawn by the seed (long), or the listed ones
// (e.g. "pause-data,crash-data").
func flussFaultPlan(schedule string, seed uint64) ([]flussFault, error) {
	all := []flussFault{crashDataLeader, pauseDataLeader, partitionDataLeader, crashStateLeader, crashCoordinator, stopCluster}
	switch schedule {
	case "short":
		return all, nil
	case "long":
		// Each fault twice (and more drawn up to twelve), in an order drawn by the seed.
		r := rand.New(rand.NewPCG(seed, seed))
		out := append(slices.Clone(all), all...)
		for range 12 - len(out) {
			out = append(out, all[r.IntN(len(all))])
		}
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out, nil
	}
	var out []flussFault
	for name := range strings.SplitSeq(schedule, ",") {
		f, ok := flussFaultNames[name]
		if !ok {
			return nil, fmt.Errorf("fault schedule %q: want short, long or a list of crash-data, crash-state, pause-data, partition-data, crash-coordinator, stop-cluster, crash-cluster", schedule)
		}
		out = append(out, f)
	}
	return out, nil
}

// TestFlussFaults runs the schedule against a fresh replicated cluster: no
// acknowledged row may be lost, none duplicated, and /readyz stays 200;
// each fault's stall (the longest a franz-go record waited, and the
// longest time no producer got an acknowledgement) is logged.
func TestFlussFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server Fluss cluster and stalls it on purpose")
	}
	plan, err := flussFaultPlan(*flussFaultSchedule, *flussFaultSeed)
	require.NoError(t, err)
	settings := []flusstest.Option{flusstest.TabletServers(flussFaultServers),
		flusstest.ServerSetting("default.replication.factor", fmt.Sprint(flussFaultServers)),
		flusstest.ServerSetting("zookeeper.client.session-timeout", *flussFaultSession),
		flusstest.ClientProxies()}
	if *flussFaultSettings != "" {
		for kv := range strings.SplitSeq(*flussFaultSettings, ",") {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, "server setting %q: want key=value", kv)
			settings = append(settings, flusstest.ServerSetting(k, v))
		}
	}
	cluster := flusstest.StartCluster(t, settings...)
	e := &env{flussdb.NewOn(t, cluster.Bootstrap(), "faults")}
	tbl := e.createTable(t, loadTable("load", flussFaultBuckets))
	// steady is a topic no fault touches: one replica, on a server never
	// hit. Its throughput during a fault shows whether the others' stall
	// holds it back inside the gateway (shared memory, connections).
	steadyTable := loadTable("steady", 1)
	steadyTable.properties = map[string]string{fluss.PropReplicationFactor: "1"}
	steadyTbl := e.createTable(t, steadyTable)
	txnTbl := e.createTable(t, loadTable("txn", 2))
	java := javaLoadCommand(t)

	bin, err := gatewaytest.Binary(*flussFaultRace)
	require.NoError(t, err)
	// The gateway alone goes through the proxies; the test's own client and
	// pyfluss reach the servers directly.
	cfg := gatewayConfig{Bootstrap: cluster.ClientBootstrap(), Routes: jsonRoute(faultTopic, tbl) + jsonRoute(steadyTopic, steadyTbl) + jsonRoute(txnTopic, txnTbl)}.config()
	// FLUSS_FAULT_GATEWAY_LOG=debug:FILE keeps a debug log of the gateway in FILE, to see where a stall went.
	keepLog := ""
	if v := os.Getenv("FLUSS_FAULT_GATEWAY_LOG"); v != "" {
		cfg.LogLevel, keepLog, _ = strings.Cut(v, ":")
	}
	// Two instances, as behind a load balancer: the franz-go producers
	// through the first, the Java ones through the second. Each sweeper
	// applies the other's commits left unapplied past their grace, which
	// a fault makes them, so two instances apply one commit at once.
	gs := make([]*gatewaytest.Process, *flussFaultInstances)
	for i := range gs {
		gs[i] = gatewaytest.StartTest(t, bin, cfg)
		if keepLog != "" {
			t.Cleanup(func() { _ = os.WriteFile(fmt.Sprintf("%s.%d", keepLog, i), []byte(gs[i].Logs()), 0o644) })
		}
	}
	g, gJava := gs[0], gs[len(gs)-1]
	franz := startFranzLoad(t, "franz", []string{g.KafkaAddr}, *flussFaultRate)
	loads := []load{franz}
	var javaL *javaLoad
	if java != nil {
		javaL = startJavaLoad(t, java, "java", []string{gJava.KafkaAddr}, *flussFaultRate)
		loads = append(loads, javaL)
	}
	steady := startFranzLoadOn(t, steadyTopic, "steady", []string{g.KafkaAddr}, *flussFaultRate)
	txn := startTxnLoad(t, txnTopic, []string{g.KafkaAddr})
	txns := []*txnLog{txn.txnLog}
	var jtxn *javaTxnLoad
	if java != nil {
		jtxn = startJavaTxnLoad(t, txnTopic, []string{gJava.KafkaAddr})
		txns = append(txns, jtxn.txnLog)
	}
	// Every producer still running must make progress after each fault:
	// the loads, the untouched topic and the transactions.
	running := func() []progress {
		var all []progress
		for _, tl := range txns {
			all = append(all, tl)
		}
		if steady != nil {
			all = append(all, steady)
		}
		for _, l := range loads {
			all = append(all, l)
		}
		return all
	}
	awaitAcks(t, running(), nil, g)
	require.Positive(t, g.RequireMetrics(t).Sum("fluss_gateway_exactly_once_state_loads_total"),
		"the idempotent producers' batches did not take the exactly-once path")
	steadyLeader := leaderOf(t.Context(), t, e, steadyTbl, fluss.NoPartition, 0)
	// The steady topic's own rate without a fault, over as long as a fault.
	steadyBase := ackRate(t.Context(), steady, 10*time.Second)
	var report []string

	// finishSteady stops the untouched topic's producer and counts its rows.
	finishSteady := func() {
		tls := []tally{steady.stop(t)}
		steady = nil
		countReadBack(t, e, steadyTbl, tls)
		tl := tls[0]
		report = append(report, fmt.Sprintf("%-5s %s (untouched topic, %.0f rec/s without a fault)", tl.client, tl, steadyBase))
		assert.Zero(t, tl.lost, "untouched topic: acknowledged rows lost")
		assert.Zero(t, tl.dupRows, "untouched topic: duplicated rows")
	}
	victims := rand.New(rand.NewPCG(*flussFaultSeed, 0x5eed))
	watch := watchProgress(t, loads, gs...)
	for i, fault := range plan {
		ok := t.Run(fmt.Sprintf("%02d_%s", i+1, strings.ReplaceAll(fault.String(), " ", "_")), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			server := int32(-1) // the coordinator
			wholeCluster := fault == stopCluster || fault == crashCluster
			if fault != crashCoordinator && !wholeCluster {
				// The untouched topic's server is spared while its
				// producer runs; after a whole-cluster stop ended it, the
				// restarted cluster may lead every bucket from there.
				avoid := steadyLeader
				if steady == nil {
					avoid = -1
				}
				server = faultVictim(ctx, t, e, fault, tbl, avoid, victims)
			}
			if wholeCluster && steady != nil {
				// Its one replica goes down too, and in a crash Fluss
				// may lose acknowledged rows of a table with one replica
				// (docs/deployment.md, durability). Its figures end here.
				finishSteady()
			}
			all := running()
			from := make([]int, len(all))
			for i, l := range all {
				from[i] = l.acked()
			}
			logFrom := make([]int, len(gs))
			for i, gi := range gs {
				logFrom[i] = len(gi.Logs())
			}
			franz.takeMaxLatency()
			javaFailedFrom := 0
			if javaL != nil {
				javaL.takeMaxLatency()
				javaFailedFrom = javaL.failures()
			}
			steadyFrom := 0
			if steady != nil {
				steadyFrom = steady.acked()
				steady.takeMaxLatency()
			}
			latFrom := make([]latencies, len(gs))
			for i, gi := range gs {
				latFrom[i] = scrapeLatencies(t, gi)
			}
			watch.begin()
			start := time.Now()
			switch fault {
			case crashDataLeader, crashStateLeader:
				require.NoError(t, cluster.SignalTabletServer(ctx, server, flusstest.Crash))
				sleepCtx(ctx, flussFaultDown)
				require.NoError(t, cluster.StartTabletServer(ctx, server))
			case crashCoordinator:
				require.NoError(t, cluster.SignalCoordinator(ctx, flusstest.Crash))
				sleepCtx(ctx, flussFaultDown)
				require.NoError(t, cluster.StartCoordinator(ctx))
			case stopCluster, crashCluster:
				sig := flusstest.Stop
				if fault == crashCluster {
					sig = flusstest.Crash
				}
				for id := range int32(flussFaultServers) {
					require.NoError(t, cluster.SignalTabletServer(ctx, id, sig))
				}
				require.NoError(t, cluster.SignalCoordinator(ctx, sig))
				sleepCtx(ctx, flussFaultDown)
				require.NoError(t, cluster.StartCoordinator(ctx))
				for id := range int32(flussFaultServers) {
					require.NoError(t, cluster.StartTabletServer(ctx, id))
				}
			case partitionDataLeader:
				require.NoError(t, cluster.Partition(server))
				sleepCtx(ctx, flussFaultPause)
				require.NoError(t, cluster.Heal(server))
			case pauseDataLeader:
				require.NoError(t, cluster.SignalTabletServer(ctx, server, flusstest.Pause))
				sleepCtx(ctx, flussFaultPause)
				require.NoError(t, cluster.SignalTabletServer(ctx, server, flusstest.Resume))
			}
			healedAt := time.Now()
			healed := healedAt.Sub(start)
			steadyFigure := "untouched topic stopped"
			if steady != nil {
				steadyFigure = fmt.Sprintf("untouched topic at %.2fx its rate", float64(steady.acked()-steadyFrom)/healed.Seconds()/steadyBase)
			}
			awaitAcks(t, all, from, g)
			// The fault's figures count every record it held: the next
			// fault starts once each record sent before the heal has its
			// outcome.
			franz.awaitOutcomes(t, healedAt, g)
			if steady != nil {
				steady.awaitOutcomes(t, healedAt, g)
			}
			st := watch.end()
			latency := franz.takeMaxLatency()
			// The Java producer's outcomes seen while the fault lasted; a
			// record fails at its delivery timeout (120 s), so failures
			// may surface during a later fault.
			javaFigure := ""
			if javaL != nil {
				javaFigure = fmt.Sprintf(", java record waited up to %.1fs (%d failed)", javaL.takeMaxLatency().Seconds(), javaL.failures()-javaFailedFrom)
			}
			if steady != nil {
				steadyFigure += fmt.Sprintf(", its records waited up to %.1fs", steady.takeMaxLatency().Seconds())
			}
			who := "coordinator"
			if wholeCluster {
				who = "every server"
			}
			if server >= 0 {
				who = fmt.Sprintf("server %d", server)
			}
			line := fmt.Sprintf("%-28s %s: healed after %4.1fs, franz-go record waited up to %5.1fs%s, no ack at all for %5.1fs (from %4.1fs after the fault), %s, /readyz not 200 in %d of %d samples",
				fault, who, healed.Seconds(), latency.Seconds(), javaFigure, st.stall.Seconds(), st.stallStart.Sub(start).Seconds(), steadyFigure, st.unready, st.samples)
			for i, gi := range gs {
				line += fmt.Sprintf("; instance %d: %s", i, scrapeLatencies(t, gi).since(latFrom[i]))
				logs := gi.Logs()[logFrom[i]:]
				if st.unready > 0 {
					line += fmt.Sprintf("; why (instance %d): %s", i, firstLine(logs, "fluss not writable"))
				}
				t.Logf("instance %d's warnings during the fault (fault at %s):\n%s", i, start.UTC().Format("15:04:05.000"), warnings(logs, 20))
			}
			t.Log(line)
			report = append(report, line)
			// Every instance sees a fault of the shared cluster alike: none
			// may leave its load balancer for it, unless no server is left.
			if !wholeCluster {
				assert.Zero(t, st.unready, "/readyz was not 200 during a fault of the Fluss cluster")
			}
		})
		if !ok {
			break
		}
	}
	watch.stop()

	var tallies []tally
	for _, l := range loads {
		tallies = append(tallies, l.stop(t))
	}
	if steady != nil {
		finishSteady()
	}
	txn.stop()
	if jtxn != nil {
		jtxn.stop()
	}
	// What the exactly-once path did, per instance: a duplicate's cause
	// shows in these (a new writer id replays under another sequence).
	for i, gi := range gs {
		if m, err := gi.Scrape(); err == nil {
			report = append(report, fmt.Sprintf("instance %d: writer ids %v, state loads %v, recoveries %.0f, window answers %.0f, commits hedged %.0f", i,
				m.Series("fluss_gateway_exactly_once_writer_ids_total"), m.Series("fluss_gateway_exactly_once_state_loads_total"),
				m.Sum("fluss_gateway_exactly_once_recoveries_total"), m.Sum("fluss_gateway_exactly_once_window_answers_total"),
				m.Sum("fluss_gateway_exactly_once_commits_hedged_total")))
		}
	}
	for _, gi := range gs {
		gi.RequireStop(t)
	}
	txnRows := readIDs(t, e, txnTbl)
	for _, tl := range txns {
		require.NoError(t, tl.failure(), "%s: the transactional producer broke", tl.producer)
		txnTally := tl.count(txnRows)
		report = append(report, fmt.Sprintf("%-5s %s", tl.producer, txnTally))
		assert.Zero(t, txnTally.lost, "%s transactions: committed rows lost", tl.producer)
		assert.Zero(t, txnTally.duplicated, "%s transactions: rows duplicated", tl.producer)
		assert.Zero(t, txnTally.abortedVisible, "%s transactions: rows of aborted transactions visible", tl.producer)
		assert.Zero(t, txnTally.torn, "%s transactions: read back in part", tl.producer)
		assert.Positive(t, txnTally.committed, "%s: no transaction committed", tl.producer)
	}
	countReadBack(t, e, tbl, tallies)
	if slices.ContainsFunc(tallies, func(tl tally) bool { return tl.dupRows > 0 }) {
		t.Logf("where duplicated rows lie (bucket@offset of each copy):\n%s", duplicateSites(t, e.scanLog(t, tbl), 20))
	}
	for _, tl := range tallies {
		report = append(report, fmt.Sprintf("%-5s %s", tl.client, tl))
		assert.Zero(t, tl.lost, "%s: acknowledged rows lost", tl.client)
		assert.Zero(t, tl.dupRows, "%s: duplicated rows", tl.client)
	}
	t.Logf("schedule %s (seed %d), session timeout %s, settings %q, %d rec/s per producer:\n%s",
		*flussFaultSchedule, *flussFaultSeed, *flussFaultSession, *flussFaultSettings, *flussFaultRate, strings.Join(report, "\n"))
}

// faultVictim picks the tablet server a fault hits: the leader of a random
// bucket of the load's table, or of the producer-state table's newest
// partition, that is not avoid.
func faultVictim(ctx context.Context, t *testing.T, e *env, fault flussFault, tbl string, avoid int32, r *rand.Rand) int32 {
	t.Helper()
	partition := fluss.NoPartition
	if fault == crashStateLeader {
		tbl = producerstate.DefaultTable.String()
		parts, err := e.Client.ListPartitionInfos(ctx, producerstate.DefaultTable)
		require.NoError(t, err, "list the producer-state table's partitions")
		require.NotEmpty(t, parts, "the producer-state table has no partition")
		partition = slices.MaxFunc(parts, func(a, b fluss.PartitionInfo) int { return int(a.ID - b.ID) }).ID
	}
	buckets := leaders(ctx, t, e, tbl, partition)
	for _, b := range r.Perm(len(buckets)) {
		if buckets[b] != avoid {
			return buckets[b]
		}
	}
	t.Fatalf("every bucket of %s is led by tablet server %d, which the fault must spare", tbl, avoid)
	return -1
}

// leaderOf returns the tablet server leading one bucket of table ("db.t").
func leaderOf(ctx context.Context, t *testing.T, e *env, tbl string, partition int64, bucket int32) int32 {
	t.Helper()
	return leaders(ctx, t, e, tbl, partition)[bucket]
}

// leaders returns the leader of each bucket of table ("db.t") or of one of
// its partitions, from fresh metadata, waiting for elections.
func leaders(ctx context.Context, t *testing.T, e *env, tbl string, partition int64) []int32 {
	t.Helper()
	c := e.Client
	db, name, _ := strings.Cut(tbl, ".")
	path := fluss.TablePath{Database: db, Table: name}
	c.InvalidateTableInfo(path)
	info, err := c.TableInfo(ctx, path)
	require.NoError(t, err, "table info of %s", path)
	if partition == fluss.NoPartition {
		c.InvalidateTableMetadata(info.TableID)
	} else {
		c.InvalidatePartitionMetadata(info.TableID, partition)
	}
	out := make([]int32, info.Descriptor.BucketCount)
	for b := range out {
		var leader fluss.ServerNode
		require.NoError(t, waitFor(ctx, time.Minute, func() bool {
			leader, err = c.BucketLeader(ctx, info.TableID, partition, int32(b))
			return err == nil
		}), "leader of %s bucket %d: %v", path, b, err)
		out[b] = leader.ID
	}
	return out
}

// ackRate returns the records per second l got acknowledged over d.
func ackRate(ctx context.Context, l load, d time.Duration) float64 {
	from, start := l.acked(), time.Now()
	sleepCtx(ctx, d)
	return float64(l.acked()-from) / time.Since(start).Seconds()
}

// warnings returns the first n WARN and ERROR lines of a gateway log.
func warnings(text string, n int) string {
	var out []string
	for line := range strings.Lines(text) {
		if len(out) < n && (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}

// firstLine returns the first line of text holding substr ("" if none).
func firstLine(text, substr string) string {
	for line := range strings.Lines(text) {
		if strings.Contains(line, substr) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// progressWatch samples the loads' acknowledgements and the gateway's
// /readyz while faults run: the longest time no acknowledgement arrived
// is a fault's stall.
type progressWatch struct {
	stopped chan struct{}
	done    chan struct{}

	mu        sync.Mutex
	on        bool
	last      time.Time // the last time the acknowledgements grew
	lastAcked int
	st        faultStats
}

// faultStats is what one fault did to the producers and to readiness.
type faultStats struct {
	stall      time.Duration // longest time without a new acknowledgement
	stallStart time.Time
	samples    int // /readyz answers taken
	unready    int // of them not 200
}

// watchProgress follows the loads' acknowledgements and samples every
// instance's /readyz once a second.
func watchProgress(t *testing.T, loads []load, gs ...*gatewaytest.Process) *progressWatch {
	w := &progressWatch{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		acks := time.NewTicker(20 * time.Millisecond)
		defer acks.Stop()
		ready := time.NewTicker(time.Second)
		defer ready.Stop()
		client := &http.Client{Timeout: 900 * time.Millisecond}
		for {
			select {
			case <-w.stopped:
				return
			case now := <-acks.C:
				n := 0
				for _, l := range loads {
					n += l.acked()
				}
				w.mu.Lock()
				if n > w.lastAcked {
					w.lastAcked, w.last = n, now
				} else if w.on && now.Sub(w.last) > w.st.stall {
					w.st.stall, w.st.stallStart = now.Sub(w.last), w.last
				}
				w.mu.Unlock()
			case <-ready.C:
				for _, g := range gs {
					ok := readyzOK(client, g.AdminURL)
					w.mu.Lock()
					if w.on {
						w.st.samples++
						if !ok {
							w.st.unready++
						}
					}
					w.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func readyzOK(client *http.Client, adminURL string) bool {
	resp, err := client.Get(adminURL + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// begin starts one fault's figures.
func (w *progressWatch) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on, w.st = true, faultStats{}
}

// end returns the figures since begin.
func (w *progressWatch) end() faultStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	return w.st
}

func (w *progressWatch) stop() {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
	<-w.done
}

// TestFlussFaultPlan: the short schedule is every fault once; a long one is
// the same for the same seed, and draws every fault.
func TestFlussFaultPlan(t *testing.T) {
	short, err := flussFaultPlan("short", 7)
	require.NoError(t, err)
	assert.ElementsMatch(t, []flussFault{crashDataLeader, crashStateLeader, pauseDataLeader, partitionDataLeader, crashCoordinator, stopCluster}, short)
	a, err := flussFaultPlan("long", 1)
	require.NoError(t, err)
	b, err := flussFaultPlan("long", 1)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	for _, f := range short {
		assert.Contains(t, a, f)
	}
	listed, err := flussFaultPlan("pause-data,crash-data", 1)
	require.NoError(t, err)
	assert.Equal(t, []flussFault{pauseDataLeader, crashDataLeader}, listed)
	_, err = flussFaultPlan("forever", 1)
	assert.ErrorContains(t, err, "want short, long or a list")
}

// duplicateSites lists up to limit ids read back more than once, each with
// the bucket and log offset of every copy, so a failed run points at the
// batches to look for in the gateway's debug log.
func duplicateSites(t *testing.T, rows []scannedRow, limit int) string {
	t.Helper()
	type site struct {
		bucket int32
		offset int64
	}
	seen := map[rowID][]site{}
	var order []rowID
	for _, r := range rows {
		id := rowID{str(t, r.Row, "producer"), num(t, r.Row, "seq")}
		if len(seen[id]) == 1 {
			order = append(order, id)
		}
		seen[id] = append(seen[id], site{r.Bucket, r.Offset})
	}
	var b strings.Builder
	for i, id := range order {
		if i == limit {
			fmt.Fprintf(&b, "... and %d more ids\n", len(order)-limit)
			break
		}
		fmt.Fprintf(&b, "%s/%d:", id.producer, id.seq)
		for _, s := range seen[id] {
			fmt.Fprintf(&b, " %d@%d", s.bucket, s.offset)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestDuplicateSites(t *testing.T) {
	row := func(producer string, seq int64, bucket int32, offset int64) scannedRow {
		return scannedRow{Bucket: bucket, Offset: offset, Row: map[string]json.RawMessage{
			"producer": json.RawMessage(fmt.Sprintf("%q", producer)), "seq": json.RawMessage(fmt.Sprint(seq))}}
	}
	rows := []scannedRow{row("franz", 1, 0, 10), row("franz", 2, 0, 11), row("java", 1, 2, 5), row("franz", 1, 3, 40), row("franz", 1, 3, 41)}
	assert.Equal(t, "franz/1: 0@10 3@40 3@41\n", duplicateSites(t, rows, 20))
	assert.Equal(t, "... and 1 more ids\n", duplicateSites(t, rows, 0))
}

// latencies are an instance's cumulative Kafka Produce and exactly-once
// commit times, to show where a fault's waits went.
type latencies struct {
	produceSum, produceCount, commitSum, commitCount float64
}

func scrapeLatencies(t *testing.T, g *gatewaytest.Process) latencies {
	m := g.RequireMetrics(t)
	return latencies{
		produceSum:   m.Sum("fluss_gateway_kafka_request_duration_seconds_sum", `api="produce"`),
		produceCount: m.Sum("fluss_gateway_kafka_request_duration_seconds_count", `api="produce"`),
		commitSum:    m.Sum("fluss_gateway_exactly_once_commit_duration_seconds_sum"),
		commitCount:  m.Sum("fluss_gateway_exactly_once_commit_duration_seconds_count"),
	}
}

// since gives the mean Produce answer time and producer-state commit time
// between from and l.
func (l latencies) since(from latencies) string {
	mean := func(sum, n float64) string {
		if n <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f ms", 1000*sum/n)
	}
	return fmt.Sprintf("Produce answered in %s on average (%.0f requests), state commits %s (%.0f)",
		mean(l.produceSum-from.produceSum, l.produceCount-from.produceCount), l.produceCount-from.produceCount,
		mean(l.commitSum-from.commitSum, l.commitCount-from.commitCount), l.commitCount-from.commitCount)
}
