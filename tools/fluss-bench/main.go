// Command fluss-bench measures the gateway's Fluss write path (accumulator +
// sender + fluss.Client) against a real Fluss cluster, and the same workload
// through pyfluss (the Python binding of the Rust client) as the baseline.
//
//	go run ./tools/fluss-bench -bootstrap 127.0.0.1:9123 -rows 1000000 \
//	    -python "$(scripts/pyfluss-venv.sh)"
//
// Workload: tables of (id BIGINT, producer INT, payload STRING(40)), 4
// buckets each, acks=all; 1 and 4 tables; Go writes with one producer
// goroutine per table, fire-and-forget then Flush, with idempotence on;
// pyfluss appends rows (or 1024-row Arrow batches) round-robin over the
// tables from one thread, then flushes (tools/pyfluss/pyfluss_bench.py, found
// under the module root at run time). Each run prints rows/s; the ratios
// compare Go (ARROW tables, row append) with pyfluss row append and with
// pyfluss Arrow batches.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/sender"
)

// pyScriptRelPath is the pyfluss baseline, relative to the module root.
const pyScriptRelPath = "tools/pyfluss/pyfluss_bench.py"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fluss-bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name   string
	tables int
	rows   int
	secs   float64
}

func (r result) rate() float64 { return float64(r.rows) / r.secs }

func run() error {
	bootstrap := flag.String("bootstrap", os.Getenv("FLUSS_BOOTSTRAP"), "Fluss bootstrap host:port (default env FLUSS_BOOTSTRAP)")
	rows := flag.Int("rows", 1_000_000, "rows per run")
	tableCounts := flag.String("tables", "1,4", "comma-separated table counts")
	python := flag.String("python", "", "python with pyfluss (scripts/pyfluss-venv.sh prints it); empty: skip the baseline")
	batchSize := flag.Int("batch-size", 2<<20, "batch size in bytes (Go and pyfluss)")
	flag.Parse()
	if *bootstrap == "" {
		return errors.New("set -bootstrap or FLUSS_BOOTSTRAP")
	}
	var pyScript string
	if *python != "" {
		root, err := gatewaytest.ModuleRoot()
		if err != nil {
			return fmt.Errorf("find %s: %w", pyScriptRelPath, err)
		}
		pyScript = filepath.Join(root, pyScriptRelPath)
		if _, err := os.Stat(pyScript); err != nil {
			return err
		}
	}
	ctx := context.Background()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(*bootstrap, ",")})
	if err != nil {
		return err
	}
	defer c.Close()
	db := "bench_" + randHex()
	if err := c.CreateDatabase(ctx, db, false); err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(dctx, db, true, true); err != nil {
			fmt.Fprintln(os.Stderr, "drop database:", err)
		}
	}()

	var counts []int
	for _, s := range strings.Split(*tableCounts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -tables %q", *tableCounts)
		}
		counts = append(counts, n)
	}
	var results []result
	seq := 0
	newTables := func(n int, format fluss.LogFormat) ([]fluss.TablePath, error) {
		var paths []fluss.TablePath
		for range n {
			seq++
			p := fluss.TablePath{Database: db, Table: fmt.Sprintf("t%d", seq)}
			d := &fluss.TableDescriptor{Schema: schema, BucketCount: 4,
				Properties: map[string]string{fluss.PropLogFormat: string(format)}}
			if err := c.CreateTable(ctx, p, d, false); err != nil {
				return nil, err
			}
			if err := c.WaitForTableLeaders(ctx, p); err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
		return paths, nil
	}
	for _, n := range counts {
		for _, format := range []fluss.LogFormat{fluss.LogFormatArrow, fluss.LogFormatIndexed} {
			paths, err := newTables(n, format)
			if err != nil {
				return err
			}
			r, err := goRun(ctx, c, paths, *rows, *batchSize)
			if err != nil {
				return fmt.Errorf("go %s %d tables: %w", format, n, err)
			}
			r.name = "go row append, " + string(format) + " table"
			results = append(results, r)
			report(r)
		}
		if *python == "" {
			continue
		}
		for _, mode := range []string{"row", "arrow"} {
			paths, err := newTables(n, fluss.LogFormatArrow)
			if err != nil {
				return err
			}
			r, err := pyRun(ctx, *python, pyScript, *bootstrap, paths, *rows, mode, *batchSize)
			if err != nil {
				return fmt.Errorf("pyfluss %s %d tables: %w", mode, n, err)
			}
			results = append(results, r)
			report(r)
		}
	}
	fmt.Println()
	for _, n := range counts {
		goArrow := find(results, "go row append, ARROW table", n)
		for _, base := range []string{"pyfluss row append", "pyfluss arrow batches (1024 rows)"} {
			if b := find(results, base, n); b != nil && goArrow != nil {
				fmt.Printf("%d table(s): go row append (ARROW) / %s = %.2f\n", n, base, goArrow.rate()/b.rate())
			}
		}
	}
	return nil
}

func report(r result) {
	fmt.Printf("%-40s %d table(s): %9d rows in %7.3fs = %10.0f rows/s\n", r.name, r.tables, r.rows, r.secs, r.rate())
}

func find(rs []result, name string, tables int) *result {
	for i := range rs {
		if rs[i].name == name && rs[i].tables == tables {
			return &rs[i]
		}
	}
	return nil
}

var schema = fluss.Schema{Columns: []fluss.Column{
	{Name: "id", Type: fluss.BigInt().NonNull()},
	{Name: "producer", Type: fluss.Int()},
	{Name: "payload", Type: fluss.String()},
}}

func randHex() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// goRun writes rows through the writer (accumulator and sender), one producer
// goroutine per table, and times it from the first append to Flush.
func goRun(ctx context.Context, c *fluss.Client, paths []fluss.TablePath, rows, batchSize int) (result, error) {
	cfg := accumulator.DefaultConfig()
	cfg.BatchSize, cfg.BufferMemory = batchSize, 256<<20
	acc, err := accumulator.New(cfg)
	if err != nil {
		return result{}, err
	}
	snd, err := sender.New(sender.DefaultConfig(), acc, c, sender.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return result{}, err
	}
	var tables []*accumulator.Table
	for _, p := range paths {
		info, err := c.TableInfo(ctx, p)
		if err != nil {
			return result{}, err
		}
		sch := info.Descriptor.Schema
		spec := accumulator.TableSpec{ID: info.TableID, Path: p, NumBuckets: info.Descriptor.BucketCount}
		if info.Descriptor.LogFormat() == fluss.LogFormatArrow {
			codec := info.Descriptor.ArrowCompression()
			spec.NewLogBuilder = func() (accumulator.LogBuilder, error) {
				return fluss.NewArrowLogBuilder(&sch, info.SchemaID, codec, 3)
			}
		} else {
			spec.NewLogBuilder = func() (accumulator.LogBuilder, error) {
				return fluss.NewIndexedLogBuilder(&sch, info.SchemaID)
			}
		}
		t, err := acc.AddTable(spec)
		if err != nil {
			return result{}, err
		}
		tables = append(tables, t)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- snd.Run(ctx) }()

	payload := []byte(strings.Repeat("x", 40))
	per := rows / len(tables)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(tables))
	for p, t := range tables {
		wg.Go(func() {
			row := fluss.Row{{}, fluss.IntDatum(int64(p)), fluss.BytesDatum(payload)}
			for i := range per {
				row[0] = fluss.IntDatum(int64(p)<<32 | int64(i))
				if _, err := acc.Append(ctx, t, accumulator.NoPartition, accumulator.StickyBucket, fluss.WriteAppend, nil, row); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return result{}, err
	}
	flushErr := acc.Flush(ctx)
	secs := time.Since(start).Seconds()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := snd.Close(cctx); err != nil {
		return result{}, err
	}
	if err := <-runErr; err != nil {
		return result{}, err
	}
	if flushErr != nil {
		return result{}, flushErr
	}
	return result{tables: len(tables), rows: per * len(tables), secs: secs}, nil
}

func pyRun(ctx context.Context, python, script, bootstrap string, paths []fluss.TablePath, rows int, mode string, batchSize int) (result, error) {
	var names []string
	for _, p := range paths {
		names = append(names, p.String())
	}
	cmd := exec.CommandContext(ctx, python, script, "--bootstrap", bootstrap, "--tables", strings.Join(names, ","),
		"--rows", strconv.Itoa(rows), "--mode", mode, "--batch-size", strconv.Itoa(batchSize))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("run %s: %w", python, err)
	}
	var r struct {
		Rows    int     `json:"rows"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return result{}, fmt.Errorf("pyfluss output %q: %w", out, err)
	}
	name := "pyfluss row append"
	if mode == "arrow" {
		name = "pyfluss arrow batches (1024 rows)"
	}
	return result{name: name, tables: len(paths), rows: r.Rows, secs: r.Seconds}, nil
}
