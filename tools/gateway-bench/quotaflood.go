package main

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
)

// -quota-flood checks the quotas' isolation goal: a principal flooding at
// -flood-factor × its producer_byte_rate leaves the other principals'
// throughput ≥ 0.9× and p99 ≤ 1.5× their figures without the flood. Two
// calm SASL PLAIN principals offer -calm-rate records/s of ≈-calm-size-byte
// JSON values (lz4) for -window; in the flood runs the principal "flood",
// whose quota is -quota-rate, offers -flood-factor × that in random
// (incompressible) uncompressed values from -flood-warmup before the
// window, so that its 10-s burst allowance is spent and the window sees it
// steadily throttled. Baseline and flood runs alternate, -repeats times.

// The principals of the quota bench; each writes its own topic and table.
var (
	calmUsers = []string{"calm1", "calm2"}
	floodUser = "flood"
)

// floodSample is one run of the quota bench.
type floodSample struct {
	flood    bool
	repeat   int
	calmRate float64 // records/s acked, both calm principals together
	p50, p99 float64 // ms, the worse of the calm principals
	// The flood's bytes charged to its quota in the window, per second
	// (fluss_gateway_kafka_quota_produce_bytes_total), and the throttle
	// time it was given in the window, per second.
	floodBytes, floodThrottle float64
	floodDropped              int64 // records its client refused: the offer beyond its buffer
	// Cores (CPU seconds per wall second) during the window.
	gwCores, flussCores, benchCores float64
	// machineCores is every core's busy time on the machine per second:
	// the rest of it is other work (the machine is shared).
	machineCores float64
}

// quotaEnv is what every run of the quota bench uses.
type quotaEnv struct {
	o         *options
	c         *fluss.Client
	g         *gatewaytest.Process
	tables    map[string]*fluss.TableInfo // by user; the topic is the user
	gen       *generator
	calmN     int // records per calm principal per run
	floodPool []byte
}

func runQuotaFlood(ctx context.Context, o *options, c *fluss.Client, db string, setupStart time.Time) error {
	e := &quotaEnv{o: o, c: c, tables: map[string]*fluss.TableInfo{}}
	e.calmN = int(o.calmRate / float64(len(calmUsers)) * o.window.Seconds())
	e.gen = newGenerator(payloadLenFor(o.calmSize, e.calmN), 0)
	var routes, users strings.Builder
	for _, u := range append(slices.Clone(calmUsers), floodUser) {
		w := workloadJSON
		if u == floodUser {
			w = workloadRaw
		}
		info, err := createTable(ctx, c, fluss.TablePath{Database: db, Table: "quota_" + u}, o.descriptor(w))
		if err != nil {
			return err
		}
		e.tables[u] = info
		routes.WriteString(w.route(u, info.Path))
		if users.Len() > 0 {
			users.WriteString(", ")
		}
		fmt.Fprintf(&users, "{username: %s, password: %s-pw}", u, u)
	}
	// Random bytes: compression cannot shrink what the quota counts.
	e.floodPool = make([]byte, 1<<20+o.calmSize)
	_, _ = crand.Read(e.floodPool)

	dir, err := os.MkdirTemp("", "gateway-bench-quota-")
	if err != nil {
		return err
	}
	succeeded := false
	defer func() {
		if succeeded && !o.keep {
			os.RemoveAll(dir)
		}
	}()
	cfg := gatewayConfig(o.bootstrap, o.explicitWriterSettings(), routes.String())
	cfg.ListenerSASL = "{mechanisms: [PLAIN], users: [" + users.String() + "]}"
	cfg.Quotas = fmt.Sprintf(`{principals: {"User:%s": {producer_byte_rate: %d}}}`, floodUser, o.quotaRate)
	g, err := launchGatewayCfg(ctx, o, dir, cfg)
	if err != nil {
		return err
	}
	defer g.Kill()
	e.g = g

	fmt.Printf("gateway-bench -quota-flood: %s, %d CPUs, load average %s; Fluss %s (tablet server pids %v); gateway %s (pid %d); database %s; setup %.1fs\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage(), o.bootstrap, o.flussPIDs, g.KafkaAddr, g.Pid(), db, time.Since(setupStart).Seconds())
	fmt.Printf("calm: %s, one franz-go client each (idempotent, acks=all, lz4, linger %s), %.0f records/s of ≈%d-byte JSON together, %d records each per run (%s)\n",
		strings.Join(calmUsers, ", "), o.kafkaLinger, o.calmRate, o.calmSize, e.calmN, o.window)
	fmt.Printf("flood: %s, quota %d B/s, offers %.1f× = %.0f B/s of %d-byte random values (uncompressed) from %s before the window; baseline runs have no flood\n",
		floodUser, o.quotaRate, o.floodFactor, o.floodFactor*float64(o.quotaRate), o.calmSize, o.floodWarmup)
	// The first run pays for the gateway's first writes to each table (its
	// p99 was 30× the next ones'): a short one, not counted.
	t0 := time.Now()
	if _, err := measureQuotaRun(ctx, e, false, max(1, e.calmN/4)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	fmt.Printf("(warm-up: a quarter of a baseline run, not counted: %.1fs)\n", time.Since(t0).Seconds())
	fmt.Printf("\n%-6s %-8s %9s %8s %8s %12s %10s %8s %7s %7s %7s %7s\n",
		"repeat", "run", "calm r/s", "p50 ms", "p99 ms", "flood B/s", "flood/Q", "thr s/s", "gw cpu", "fluss", "bench", "machine")
	var samples []*floodSample
	for r := range o.repeats {
		order := []bool{false, true}
		if r%2 == 1 { // alternate which goes first
			slices.Reverse(order)
		}
		for _, flood := range order {
			if err := ctx.Err(); err != nil {
				return err
			}
			s, err := measureQuotaRun(ctx, e, flood, e.calmN)
			if err != nil {
				return fmt.Errorf("repeat %d: %w", r+1, err)
			}
			s.repeat = r
			samples = append(samples, s)
			printFloodSample(o, s)
		}
	}
	if err := g.Stop(time.Minute); err != nil {
		return err
	}
	printFloodSummary(o, samples)
	if n, first := g.Warnings(); n > 0 {
		fmt.Printf("gateway logged %d WARN/ERROR lines (log %s); first: %s\n", n, g.LogPath, first)
	} else {
		fmt.Println("gateway logged no WARN/ERROR lines")
	}
	fmt.Println("verification: after every run each principal's table's end offsets grew by exactly the records acked: OK")
	succeeded = true
	return nil
}

// measureQuotaRun has each calm principal produce n records at its rate,
// with the flood running from -flood-warmup before when flood is set, and
// verifies every table.
func measureQuotaRun(ctx context.Context, e *quotaEnv, flood bool, n int) (*floodSample, error) {
	o := e.o
	before := map[string]int64{}
	for u, t := range e.tables {
		n, err := flussEndOffset(ctx, e.c, t)
		if err != nil {
			return nil, err
		}
		before[u] = n
	}
	acked := map[string]int64{}
	stopFlood := func() (int64, error) { return 0, nil }
	var dropped func() int64
	if flood {
		f, err := startFlood(ctx, e)
		if err != nil {
			return nil, err
		}
		stopFlood, dropped = f.stop, f.dropped.Load
		select {
		case <-time.After(o.floodWarmup):
		case <-ctx.Done():
			_, _ = f.stop()
			return nil, ctx.Err()
		}
	}
	s := &floodSample{flood: flood}
	window, err := startWindow(e)
	if err != nil {
		_, _ = stopFlood()
		return nil, err
	}
	droppedBefore := int64(0)
	if dropped != nil {
		droppedBefore = dropped()
	}
	results := make([]franzResult, len(calmUsers))
	errs := make([]error, len(calmUsers))
	var wg sync.WaitGroup
	for i, u := range calmUsers {
		codec, _ := kafkaCodec("lz4")
		wg.Go(func() {
			results[i], errs[i] = produceFranz(ctx, franzRun{
				seed:      e.g.KafkaAddr,
				producers: 1,
				opts:      append(tunedOpts(o, codec), saslPlain(u)),
				topics:    []string{u},
				records:   n,
				rate:      o.calmRate / float64(len(calmUsers)),
				record:    franzRecordFunc(workloadJSON, e.gen),
			})
		})
	}
	wg.Wait()
	if dropped != nil {
		s.floodDropped = dropped() - droppedBefore
	}
	werr := window.end(s)
	floodAcked, ferr := stopFlood()
	if err := errors.Join(append(errs, werr, ferr)...); err != nil {
		return nil, err
	}
	for i, u := range calmUsers {
		r := results[i]
		acked[u] = int64(r.acked)
		s.calmRate += float64(r.acked) / r.secs
		s.p50, s.p99 = max(s.p50, ms(r.p50)), max(s.p99, ms(r.p99))
	}
	acked[floodUser] = floodAcked
	if err := e.g.Alive(); err != nil {
		return nil, err
	}
	for u, t := range e.tables {
		n, err := flussEndOffset(ctx, e.c, t)
		if err != nil {
			return nil, err
		}
		if n-before[u] != acked[u] {
			return nil, fmt.Errorf("VERIFICATION FAILED: %s's table %s grew by %d, %d records acked", u, t.Path, n-before[u], acked[u])
		}
	}
	return s, nil
}

func saslPlain(user string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism())
}

// window is the start of a measurement window: the flood's quota counters
// and the processes' CPU.
type window struct {
	e                         *quotaEnv
	start                     time.Time
	floodBytes, floodThrottle float64
	gw, fl, self, machine     time.Duration
}

var floodLabel = `principal="User:` + floodUser + `"`

func startWindow(e *quotaEnv) (*window, error) {
	m, err := e.g.Scrape()
	if err != nil {
		return nil, fmt.Errorf("gateway metrics: %w", err)
	}
	return &window{
		e: e, start: time.Now(),
		floodBytes:    m.Sum("fluss_gateway_kafka_quota_produce_bytes_total", floodLabel),
		floodThrottle: m.Sum("fluss_gateway_kafka_quota_throttle_seconds_total", floodLabel),
		gw:            sumCPU([]int{e.g.Pid()}), fl: sumCPU(e.o.flussPIDs), self: sumCPU([]int{os.Getpid()}),
		machine: machineBusy(),
	}, nil
}

// end fills s with the flood's rates and the cores used since w started.
func (w *window) end(s *floodSample) error {
	m, err := w.e.g.Scrape()
	if err != nil {
		return fmt.Errorf("gateway metrics: %w", err)
	}
	secs := time.Since(w.start).Seconds()
	s.floodBytes = (m.Sum("fluss_gateway_kafka_quota_produce_bytes_total", floodLabel) - w.floodBytes) / secs
	s.floodThrottle = (m.Sum("fluss_gateway_kafka_quota_throttle_seconds_total", floodLabel) - w.floodThrottle) / secs
	cores := func(d time.Duration) float64 { return d.Seconds() / secs }
	s.gwCores = cores(sumCPU([]int{w.e.g.Pid()}) - w.gw)
	s.flussCores = cores(sumCPU(w.e.o.flussPIDs) - w.fl)
	s.benchCores = cores(sumCPU([]int{os.Getpid()}) - w.self)
	s.machineCores = cores(machineBusy() - w.machine)
	return nil
}

// flood is the flooding principal's producer: it offers its rate with
// TryProduce, so that what its client cannot buffer is dropped rather than
// sent late (a producer with block.ms=0), and counts what was acked.
type flood struct {
	cl      *kgo.Client
	cancel  context.CancelFunc
	done    chan struct{}
	acked   atomic.Int64
	dropped atomic.Int64
	mu      sync.Mutex
	err     error
}

func startFlood(ctx context.Context, e *quotaEnv) (*flood, error) {
	o := e.o
	// One second of quota buffered at most: the flush after the window
	// stays short.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.g.KafkaAddr), kgo.ClientID("gateway-bench-flood"), saslPlain(floodUser),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(o.kafkaLinger), kgo.MaxBufferedBytes(max(int(o.quotaRate), 4*o.calmSize)),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		return nil, fmt.Errorf("flood client: %w", err)
	}
	fctx, cancel := context.WithCancel(ctx)
	f := &flood{cl: cl, cancel: cancel, done: make(chan struct{})}
	rate := o.floodFactor * float64(o.quotaRate) / float64(o.calmSize) // records/s
	go func() {
		defer close(f.done)
		start := time.Now()
		for k := int64(0); fctx.Err() == nil; k++ {
			if d := time.Until(start.Add(time.Duration(float64(k) / rate * float64(time.Second)))); d > 0 {
				select {
				case <-time.After(d):
				case <-fctx.Done():
					return
				}
			}
			off := int(k*int64(o.calmSize)) % (len(e.floodPool) - o.calmSize)
			rec := &kgo.Record{Topic: floodUser, Value: e.floodPool[off : off+o.calmSize]}
			// ctx, not fctx: cancelling a record's context fails it once buffered.
			cl.TryProduce(ctx, rec, func(_ *kgo.Record, err error) {
				switch {
				case err == nil:
					f.acked.Add(1)
				case errors.Is(err, kgo.ErrMaxBuffered):
					f.dropped.Add(1)
				default:
					f.mu.Lock()
					f.err = errors.Join(f.err, err)
					f.mu.Unlock()
				}
			})
		}
	}()
	return f, nil
}

// stop ends the offer, flushes what the client buffered and returns the
// records acked.
func (f *flood) stop() (int64, error) {
	f.cancel()
	<-f.done
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := f.cl.Flush(fctx)
	f.cl.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		return f.acked.Load(), fmt.Errorf("flush the flood: %w", err)
	}
	if f.err != nil {
		return f.acked.Load(), fmt.Errorf("flood records failed: %w", f.err)
	}
	return f.acked.Load(), nil
}

func printFloodSample(o *options, s *floodSample) {
	run, fb, fq, thr := "baseline", "-", "-", "-"
	if s.flood {
		run = "flood"
		fb = thousands(s.floodBytes)
		fq = fmt.Sprintf("%.2f", s.floodBytes/float64(o.quotaRate))
		thr = fmt.Sprintf("%.2f", s.floodThrottle)
	}
	fmt.Printf("%-6d %-8s %9.0f %8.1f %8.1f %12s %10s %8s %7.2f %7.2f %7.2f %7.2f\n",
		s.repeat+1, run, s.calmRate, s.p50, s.p99, fb, fq, thr, s.gwCores, s.flussCores, s.benchCores, s.machineCores)
}

// printFloodSummary prints the medians and the goal's ratios, each the
// median of the per-repeat ratios (a baseline and a flood run back to back).
func printFloodSummary(o *options, samples []*floodSample) {
	med := func(flood bool, f func(*floodSample) float64) float64 {
		var v []float64
		for _, s := range samples {
			if s.flood == flood {
				v = append(v, f(s))
			}
		}
		return median(v)
	}
	ratio := func(f func(*floodSample) float64) (float64, float64, float64) {
		pairs := map[int][2]float64{}
		for _, s := range samples {
			p := pairs[s.repeat]
			if s.flood {
				p[1] = f(s)
			} else {
				p[0] = f(s)
			}
			pairs[s.repeat] = p
		}
		var v []float64
		for _, p := range pairs {
			if p[0] > 0 {
				v = append(v, p[1]/p[0])
			}
		}
		return median(v), slices.Min(v), slices.Max(v)
	}
	rate := func(s *floodSample) float64 { return s.calmRate }
	p50 := func(s *floodSample) float64 { return s.p50 }
	p99 := func(s *floodSample) float64 { return s.p99 }
	cores := func(s *floodSample) float64 { return s.gwCores + s.flussCores + s.benchCores }
	machine := func(s *floodSample) float64 { return s.machineCores }
	fmt.Printf("\nmedians of %d alternated repeats (ratios: median of the per-repeat flood/baseline ratios [min–max]):\n\n", o.repeats)
	fmt.Println("| | baseline | with the flood | flood / baseline, per repeat | of the medians | goal (per repeat) |")
	fmt.Println("|---|---|---|---|---|---|")
	tr, trMin, trMax := ratio(rate)
	pr, prMin, prMax := ratio(p99)
	p5, p5Min, p5Max := ratio(p50)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Printf("| calm records/s | %s | %s | %.3f [%.3f–%.3f] | %.3f | ≥ 0.90: %s |\n", thousands(med(false, rate)), thousands(med(true, rate)),
		tr, trMin, trMax, med(true, rate)/med(false, rate), verdict(tr >= 0.9))
	fmt.Printf("| calm p50 ms | %.1f | %.1f | %.2f [%.2f–%.2f] | %.2f | |\n", med(false, p50), med(true, p50), p5, p5Min, p5Max, med(true, p50)/med(false, p50))
	fmt.Printf("| calm p99 ms | %.1f | %.1f | %.2f [%.2f–%.2f] | %.2f | ≤ 1.50: %s |\n", med(false, p99), med(true, p99),
		pr, prMin, prMax, med(true, p99)/med(false, p99), verdict(pr <= 1.5))
	fmt.Printf("| cores: gateway + Fluss + producers | %.2f | %.2f | | | |\n", med(false, cores), med(true, cores))
	fmt.Printf("| cores busy on the machine | %.2f | %.2f | | | |\n", med(false, machine), med(true, machine))
	fb := med(true, func(s *floodSample) float64 { return s.floodBytes })
	fmt.Printf("\nflood: %s B/s charged to its quota in the window, %.2f× its quota of %s B/s (offered %.1f×); throttled %.2f s per s; %s records dropped by its client per run (median)\n",
		thousands(fb), fb/float64(o.quotaRate), thousands(float64(o.quotaRate)), o.floodFactor,
		med(true, func(s *floodSample) float64 { return s.floodThrottle }),
		thousands(med(true, func(s *floodSample) float64 { return float64(s.floodDropped) })))
}
