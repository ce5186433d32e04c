package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// -txn measures transactional producers against the same producer without
// transactions (issue 20's goal: ≥ 0.7× the throughput): one Java
// kafka-clients producer (internal/gatewaytest/java/TxnBench.java) sends
// -records values of about -txn-value-bytes into a fresh 4-bucket table per
// run, in transactions of -txn-size records (txn), or idempotently, flushed
// as often (plain) or once at the end (stream), the order reversed every
// other round, -repeats rounds; medians.

// txnRun is one run's result.
type txnRun struct {
	mode       string
	rate       float64 // records per second, as the producer timed them
	gatewayCPU time.Duration
	flussCPU   time.Duration
}

func runTxnCompare(ctx context.Context, o *options, c *fluss.Client, db string) error {
	cmd, err := gatewaytest.JavaMain(ctx, "TxnBench")
	if err != nil {
		return err
	}
	modes := []string{"stream", "plain", "txn"}
	var routes strings.Builder
	var tables []*fluss.TableInfo
	d := &fluss.TableDescriptor{Schema: fluss.Schema{Columns: []fluss.Column{
		{Name: "producer", Type: fluss.String()}, {Name: "seq", Type: fluss.BigInt()}, {Name: "payload", Type: fluss.String()},
	}}, BucketCount: o.buckets}
	for i := range o.repeats * len(modes) {
		name := fmt.Sprintf("txn_%d", i)
		t, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: name}, d)
		if err != nil {
			return err
		}
		tables = append(tables, t)
		fmt.Fprintf(&routes, "  - topic: %s\n    table: %s\n", name, t.Path)
	}
	dir, err := os.MkdirTemp("", "gwbench-txn-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	g, err := launchGatewayIn(ctx, o, dir, o.explicitWriterSettings(), routes.String())
	if err != nil {
		return err
	}
	defer g.Stop(time.Minute)
	fmt.Printf("gateway-bench -txn: %d records of ~%d bytes per run, transactions of %d, %d rounds, Java kafka-clients %s, gateway %s\n",
		o.records, o.txnValueBytes, o.txnSize, o.repeats, gatewaytest.JavaVersion, g.KafkaAddr)
	results := map[string][]txnRun{}
	run := 0
	for round := range o.repeats {
		order := slices.Clone(modes)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, mode := range order {
			t := tables[run]
			run++
			gwBefore, flussBefore := sumCPU([]int{g.Pid()}), sumCPU(o.flussPIDs)
			out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], g.KafkaAddr, t.Path.Table, mode,
				fmt.Sprint(o.records), fmt.Sprint(o.txnSize), fmt.Sprint(o.txnValueBytes))...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s run: %w\n%s", mode, err, tail(string(out), 3000))
			}
			r := txnRun{mode: mode, gatewayCPU: sumCPU([]int{g.Pid()}) - gwBefore, flussCPU: sumCPU(o.flussPIDs) - flussBefore}
			var n int
			var secs float64
			for _, line := range strings.Split(string(out), "\n") {
				if _, err := fmt.Sscanf(line, "records=%d secs=%f", &n, &secs); err == nil {
					break
				}
			}
			if n != o.records || secs <= 0 {
				return fmt.Errorf("%s run printed no result:\n%s", mode, tail(string(out), 3000))
			}
			if err := verify(ctx, c, []*fluss.TableInfo{t}, []int64{int64(o.records)}); err != nil {
				return err
			}
			r.rate = float64(n) / secs
			results[mode] = append(results[mode], r)
			fmt.Printf("round %d %-5s %9.0f rec/s  gateway %6.2f CPU-s/M  fluss %6.2f CPU-s/M\n", round+1, mode, r.rate,
				perMillion(r.gatewayCPU, o.records), perMillion(r.flussCPU, o.records))
		}
	}
	med := func(mode string, f func(txnRun) float64) float64 {
		var v []float64
		for _, r := range results[mode] {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rate := func(r txnRun) float64 { return r.rate }
	gw := func(r txnRun) float64 { return perMillion(r.gatewayCPU, o.records) }
	fl := func(r txnRun) float64 { return perMillion(r.flussCPU, o.records) }
	fmt.Printf("medians: stream %.0f rec/s, plain %.0f rec/s, txn %.0f rec/s: txn/plain %.2f, txn/stream %.2f (goal ≥ 0.70)\n",
		med("stream", rate), med("plain", rate), med("txn", rate), med("txn", rate)/med("plain", rate), med("txn", rate)/med("stream", rate))
	fmt.Printf("gateway CPU-s per M records: stream %.2f, plain %.2f, txn %.2f (%.2f× plain); fluss: stream %.2f, plain %.2f, txn %.2f (%.2f× plain)\n",
		med("stream", gw), med("plain", gw), med("txn", gw), med("txn", gw)/med("plain", gw),
		med("stream", fl), med("plain", fl), med("txn", fl), med("txn", fl)/med("plain", fl))
	return nil
}

func perMillion(d time.Duration, records int) float64 { return d.Seconds() * 1e6 / float64(records) }
