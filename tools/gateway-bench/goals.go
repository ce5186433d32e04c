package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// The -goals mode measures the exactly-once path's goals (docs/benchmarks.md,
// "Exactly once at the price of at least once") in one command: each
// comparison is its own pair of gateway runs (or the -flink comparison),
// alternated -repeats times in a fresh database each, and at the end one
// table gives each goal's median ratio, its spread over the repeats, the
// bound and whether it is met. The runs print their own lines as they go,
// so every figure behind a ratio is in the output.

// goalGroups are the comparisons -goals knows, in the order they run.
var goalGroups = []string{"eo", "tables", "producers", "java", "flink"}

func parseGoals(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if s == "all" {
		return slices.Clone(goalGroups), nil
	}
	var out []string
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		if !slices.Contains(goalGroups, g) {
			return nil, fmt.Errorf("-goals: unknown comparison %q (all, or some of %s)", g, strings.Join(goalGroups, ","))
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

// goal is one bound of the issue and the figures measured for it, one per
// repeat (a ratio of two runs alternated, or an absolute figure).
type goal struct {
	name    string
	figures []float64
	unit    string  // "×" for ratios, else the absolute figure's unit
	bound   float64 // the goal
	atMost  bool    // the figure must be ≤ bound (else ≥)
}

func (g goal) met() bool {
	m := median(g.figures)
	if g.atMost {
		return m <= g.bound
	}
	return m >= g.bound
}

// formatGoalTable is the goals as Markdown: median, spread, bound, met.
func formatGoalTable(goals []goal) string {
	var b strings.Builder
	b.WriteString("| goal | median | spread | bound | met |\n|---|---|---|---|---|\n")
	for _, g := range goals {
		if len(g.figures) == 0 {
			fmt.Fprintf(&b, "| %s | n/a | | %s | not measured |\n", g.name, boundText(g))
			continue
		}
		verdict := "**not met**"
		if g.met() {
			verdict = "met"
		}
		fmt.Fprintf(&b, "| %s | %s | %s–%s | %s | %s |\n", g.name, figure(median(g.figures), g.unit),
			figure(slices.Min(g.figures), g.unit), figure(slices.Max(g.figures), g.unit), boundText(g), verdict)
	}
	return b.String()
}

func figure(v float64, unit string) string {
	if unit == "×" {
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

func boundText(g goal) string {
	op := "≥"
	if g.atMost {
		op = "≤"
	}
	return op + " " + figure(g.bound, g.unit)
}

// variant is one side of a comparison: the options it changes.
type variant struct {
	name string
	set  func(*options)
}

// alternate runs each variant -repeats times, the order reversed every
// other repeat, each in a database and gateway of its own; results[i][r]
// is variant i's runs in repeat r.
func alternate(ctx context.Context, o *options, c *fluss.Client, vs []variant) ([][][]*runResult, error) {
	results := make([][][]*runResult, len(vs))
	for r := range o.repeats {
		order := make([]int, len(vs))
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			v := vs[i]
			vo := *o
			v.set(&vo)
			fmt.Printf("\n=== -goals: %s, repeat %d of %d\n", v.name, r+1, o.repeats)
			err := inDatabase(ctx, &vo, c, func(db string) error {
				rs, err := runPlanned(ctx, &vo, c, db, time.Now())
				results[i] = append(results[i], rs)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("%s, repeat %d: %w", v.name, r+1, err)
			}
		}
	}
	return results, nil
}

// ratios is f(a)/f(b) for each repeat's last run (the warm round).
func ratios(a, b [][]*runResult, f func(*runResult) float64) []float64 {
	var out []float64
	for r := range min(len(a), len(b)) {
		x, y := f(last(a[r])), f(last(b[r]))
		if y > 0 {
			out = append(out, x/y)
		}
	}
	return out
}

func last(rs []*runResult) *runResult { return rs[len(rs)-1] }

func gwPerM(r *runResult) float64    { return cpuPerMillion(r.gwCPU, r.records) }
func flussPerM(r *runResult) float64 { return cpuPerMillion(r.flussCPU, r.records) }
func p99(r *runResult) float64       { return ms(r.p99) }
func rate(r *runResult) float64      { return r.rate() }

// runGoals is -goals: the chosen comparisons, then the goal table.
func runGoals(ctx context.Context, o *options, c *fluss.Client) error {
	if len(o.flussPIDs) == 0 {
		fmt.Println("(no -fluss-pids or -fluss-cluster: the tablet-server goals are not measured)")
	}
	// Every side writes json rows into fresh 1-table runs unless it says
	// otherwise; no Go-writer baseline (the goals compare the gateway).
	base := func(vo *options) {
		vo.baseline, vo.javaWriter, vo.rounds, vo.rate = false, false, 1, 0
		vo.runs = []runSpec{{workload: workloadJSON, topics: 1, codec: "lz4"}}
	}
	var goals []goal
	for _, group := range o.goals {
		var (
			gs  []goal
			err error
		)
		switch group {
		case "eo":
			gs, err = goalsExactlyOnce(ctx, o, c, base)
		case "tables":
			gs, err = goalsTables(ctx, o, c, base)
		case "producers":
			gs, err = goalsProducers(ctx, o, c, base)
		case "java":
			gs, err = goalsJava(ctx, o, c, base)
		case "flink":
			gs, err = goalsFlink(ctx, o, c)
		}
		if err != nil {
			return fmt.Errorf("-goals %s: %w", group, err)
		}
		goals = append(goals, gs...)
	}
	fmt.Printf("\n=== -goals: %s; medians of %d alternated repeats (spread: lowest–highest); %d CPUs, load average %s\n\n",
		strings.Join(o.goals, ","), o.repeats, runtime.NumCPU(), loadAverage())
	fmt.Print(formatGoalTable(goals))
	return nil
}

// goalsExactlyOnce: the default route against exactly_once: false, 1 KB
// JSON, at saturation and at 20,000 records/s.
func goalsExactlyOnce(ctx context.Context, o *options, c *fluss.Client, base func(*options)) ([]goal, error) {
	side := func(name, eo string, rate float64) variant {
		return variant{name: name, set: func(vo *options) {
			base(vo)
			vo.exactlyOnce, vo.rate, vo.payloadLen = eo, rate, payloadLenFor(1024, vo.records)
		}}
	}
	sat, err := alternate(ctx, o, c, []variant{side("default route, saturation", "", 0), side("exactly_once: false, saturation", "false", 0)})
	if err != nil {
		return nil, err
	}
	at, err := alternate(ctx, o, c, []variant{side("default route, 20,000 rec/s", "", 20_000), side("exactly_once: false, 20,000 rec/s", "false", 20_000)})
	if err != nil {
		return nil, err
	}
	gs := []goal{
		{name: "default / `exactly_once: false`: saturation records/s", figures: ratios(sat[0], sat[1], rate), unit: "×", bound: 0.95},
		{name: "the same at 20,000 rec/s: gateway CPU per record", figures: ratios(at[0], at[1], gwPerM), unit: "×", bound: 1.15, atMost: true},
	}
	if len(o.flussPIDs) > 0 {
		gs = append(gs, goal{name: "the same: tablet-server CPU per record", figures: ratios(at[0], at[1], flussPerM), unit: "×", bound: 1.3, atMost: true})
	}
	return append(gs, goal{name: "the same: p99", figures: ratios(at[0], at[1], p99), unit: "×", bound: 1.2, atMost: true}), nil
}

// goalsTables: 500 topics into 500 tables against 1, 8 producers, three
// rounds (the first into the freshly created tables), with the Go memory
// limit a 164 MiB container gives unless -gateway-gomemlimit says another.
func goalsTables(ctx context.Context, o *options, c *fluss.Client, base func(*options)) ([]goal, error) {
	side := func(tables int) variant {
		return variant{name: fmt.Sprintf("%d tables, 3 rounds", tables), set: func(vo *options) {
			base(vo)
			vo.runs = []runSpec{{workload: workloadJSON, topics: tables, codec: "none"}}
			vo.producers, vo.rounds = 8, 3
			if !o.set["gateway-gomemlimit"] {
				vo.goMemLimit = "147MiB"
			}
		}}
	}
	rs, err := alternate(ctx, o, c, []variant{side(500), side(1)})
	if err != nil {
		return nil, err
	}
	var rss, first []float64
	for _, runs := range rs[0] {
		peak := int64(0)
		for _, r := range runs {
			peak = max(peak, r.gwRSS)
		}
		rss = append(rss, float64(peak)/(1<<20))
		first = append(first, runs[0].rate()/last(runs).rate())
	}
	return []goal{
		{name: "500 tables / 1 table: records/s (third round)", figures: ratios(rs[0], rs[1], rate), unit: "×", bound: 0.8},
		{name: "500 tables / 1 table: gateway CPU per record (third round)", figures: ratios(rs[0], rs[1], gwPerM), unit: "×", bound: 1.5, atMost: true},
		{name: "500 tables: peak RSS over the three rounds", figures: rss, unit: "MiB", bound: 164, atMost: true},
		{name: "500 tables: first round into the new tables / third round, records/s", figures: first, unit: "×", bound: 0.8},
	}, nil
}

// goalsProducers: 200 producers against 10, together offering 20,000
// records/s.
func goalsProducers(ctx context.Context, o *options, c *fluss.Client, base func(*options)) ([]goal, error) {
	side := func(n int) variant {
		return variant{name: fmt.Sprintf("%d producers, 20,000 rec/s", n), set: func(vo *options) {
			base(vo)
			vo.producers, vo.rate = n, 20_000
		}}
	}
	rs, err := alternate(ctx, o, c, []variant{side(200), side(10)})
	if err != nil {
		return nil, err
	}
	return []goal{{name: "200 producers / 10 at 20,000 rec/s: gateway CPU per record", figures: ratios(rs[0], rs[1], gwPerM), unit: "×", bound: 1.5, atMost: true}}, nil
}

// javaGoalRows is the least rows of a Java writer comparison.
const javaGoalRows = 2_000_000

// goalsJava: the gateway as shipped against Fluss's Java append writer on
// the same rows, 200 B and 1 KB; each run writes through both (the Java
// writer right after the gateway).
func goalsJava(ctx context.Context, o *options, c *fluss.Client, base func(*options)) ([]goal, error) {
	var gs []goal
	for _, size := range []int{200, 1024} {
		label := map[int]string{200: "200 B", 1024: "1 KB"}[size]
		v := variant{name: "gateway then Java writer, " + label + " rows", set: func(vo *options) {
			base(vo)
			// The JVM's start and JIT are in its CPU: 2,000,000 rows at
			// least, as the Java writer comparisons have always run, keep
			// them a small part of it.
			vo.records = max(vo.records, javaGoalRows)
			vo.javaWriter, vo.payloadLen = true, payloadLenFor(size, vo.records)
		}}
		rs, err := alternate(ctx, o, c, []variant{v})
		if err != nil {
			return nil, err
		}
		var gw, fl []float64
		for _, runs := range rs[0] {
			r := last(runs)
			if r.java == nil {
				return nil, errors.New("the Java writer did not run")
			}
			gw = append(gw, gwPerM(r)/cpuPerMillion(r.java.cpu, r.java.rows))
			if j := cpuPerMillion(r.java.flussCPU, r.java.rows); j > 0 {
				fl = append(fl, flussPerM(r)/j)
			}
		}
		limit := 1.0
		if size > 200 {
			limit = 1.3
		}
		gs = append(gs, goal{name: "gateway / Java writer, " + label + " rows: gateway CPU per row", figures: gw, unit: "×", bound: limit, atMost: true})
		if len(o.flussPIDs) > 0 {
			gs = append(gs, goal{name: "the same, " + label + " rows: tablet-server CPU per row", figures: fl, unit: "×", bound: 1.2, atMost: true})
		}
	}
	return gs, nil
}

// goalsFlink: the default route against a Kafka broker plus a Flink job
// into the same kind of table, at 20,000 records/s with tails for the
// time to a readable row (the -flink comparison, its own alternation).
func goalsFlink(ctx context.Context, o *options, c *fluss.Client) ([]goal, error) {
	vo := *o
	vo.rate, vo.exactlyOnce = 20_000, ""
	fmt.Printf("\n=== -goals: default route against Kafka + Flink, 20,000 rec/s, %d repeats\n", o.repeats)
	var samples []*flinkSample
	err := inDatabase(ctx, &vo, c, func(db string) error {
		var err error
		samples, err = runFlinkCompare(ctx, &vo, c, db, time.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	var gw, fl []*flinkSample
	for _, s := range samples {
		if s.target == targetGateway {
			gw = append(gw, s)
		} else {
			fl = append(fl, s)
		}
	}
	pair := func(f func(*flinkSample) float64) []float64 {
		var out []float64
		for i := range min(len(gw), len(fl)) {
			if y := f(fl[i]); y > 0 {
				out = append(out, f(gw[i])/y)
			}
		}
		return out
	}
	gs := []goal{{name: "default / Kafka + Flink, 20,000 rec/s: CPU per row of every process", figures: pair(func(s *flinkSample) float64 {
		return s.perM(s.producers + s.path + s.fluss)
	}), unit: "×", bound: 0.5, atMost: true}}
	if len(o.flussPIDs) > 0 {
		gs = append(gs, goal{name: "the same: tablet-server CPU per row", figures: pair(func(s *flinkSample) float64 { return s.perM(s.fluss) }),
			unit: "×", bound: 1.2, atMost: true})
	}
	return append(gs, goal{name: "the same: p50 produce → readable in Fluss", figures: pair(func(s *flinkSample) float64 { return s.readP50 }),
		unit: "×", bound: 0.2, atMost: true}), nil
}
