package mapping

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// Route is one compiled route. Its spec is fixed; after Routes.Bind it also
// carries the converter for its table and, in dlq mode, the dead-letter
// builder. A Route is immutable and safe for concurrent use.
type Route struct {
	spec    RouteSpec
	pattern *regexp.Regexp
	parts   []timePartition

	conv *Converter
	dlq  *DLQ
}

// timePartition is a partition column filled from the record timestamp.
type timePartition struct {
	column string
	format timeFormat
	loc    *time.Location
}

// Name returns the route's name.
func (r *Route) Name() string { return r.spec.Name }

// Spec returns a copy of the route's configuration.
func (r *Route) Spec() RouteSpec { return r.spec }

// Table returns the route's target table.
func (r *Route) Table() fluss.TablePath { return r.spec.Table }

// Converter returns the route's converter, or nil before Bind.
func (r *Route) Converter() *Converter { return r.conv }

// DLQ returns the dead-letter builder for dlq mode, or nil.
func (r *Route) DLQ() *DLQ { return r.dlq }

// Routes is an immutable set of routes: exact topics first, then patterns
// in configuration order. Build a new Routes to change it and swap the
// pointer (copy-on-write); every method is safe for concurrent use.
type Routes struct {
	exact    map[string]*Route
	patterns []*Route
	all      []*Route
}

// NewRoutes compiles route specs: fills defaults (RouteSpec.WithDefaults),
// checks them (ValidateSpecs: every problem, joined, each a *SpecError) and
// compiles patterns and timestamp formats. It does not look at tables; see
// Bind.
func NewRoutes(specs []RouteSpec) (*Routes, error) {
	if err := ValidateSpecs(specs); err != nil {
		return nil, err
	}
	rs := &Routes{exact: make(map[string]*Route, len(specs))}
	for i := range specs {
		r, err := compileRoute(specs[i].WithDefaults())
		if err != nil {
			return nil, err
		}
		if r.pattern == nil {
			rs.exact[r.spec.Topic] = r
		} else {
			rs.patterns = append(rs.patterns, r)
		}
		rs.all = append(rs.all, r)
	}
	return rs, nil
}

// compileRoute compiles a spec that ValidateSpecs accepted.
func compileRoute(s RouteSpec) (*Route, error) {
	r := &Route{spec: s}
	fail := func(err error) (*Route, error) {
		return nil, fmt.Errorf("route %q: %w", s.Name, err)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile("^(?:" + s.Pattern + ")$")
		if err != nil {
			return fail(err)
		}
		r.pattern = re
	}
	for _, p := range s.Partition {
		if p.From != PartitionFromTimestamp {
			continue
		}
		f, err := parseTimeFormat(p.Format)
		if err != nil {
			return fail(err)
		}
		loc, err := time.LoadLocation(p.TimeZone)
		if err != nil {
			return fail(err)
		}
		r.parts = append(r.parts, timePartition{column: p.Column, format: f, loc: loc})
	}
	return r, nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// splitPath splits "a.b.c" or "$.a.b.c" into object keys.
func splitPath(p string) ([]string, error) {
	rest := strings.TrimPrefix(p, "$.")
	parts := strings.Split(rest, ".")
	if rest == "" || slices.Contains(parts, "") {
		return nil, fmt.Errorf("%q is not a JSON path of object keys (a.b.c or $.a.b.c)", p)
	}
	return parts, nil
}

// Resolve returns the route for a topic: the exact route if there is one,
// else the first pattern route whose pattern matches the whole name.
func (rs *Routes) Resolve(topic string) (*Route, bool) {
	if rs == nil {
		return nil, false
	}
	if r, ok := rs.exact[topic]; ok {
		return r, true
	}
	for _, r := range rs.patterns {
		if r.pattern.MatchString(topic) {
			return r, true
		}
	}
	return nil, false
}

// All returns every route in configuration order. The slice must not be
// modified.
func (rs *Routes) All() []*Route { return rs.all }

// Tables returns every table the routes write to, including dead-letter
// tables, sorted and without duplicates: the tables to fetch with
// GetTableInfo before Bind.
func (rs *Routes) Tables() []fluss.TablePath {
	var out []fluss.TablePath
	for _, r := range rs.all {
		out = append(out, r.spec.Table)
		if r.spec.Errors.Mode == ErrorsDLQ {
			out = append(out, r.spec.Errors.DLQTable)
		}
	}
	slices.SortFunc(out, func(a, b fluss.TablePath) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// Bind checks every route against its table (and dead-letter table) and
// returns a new Routes whose routes carry converters. infos must hold the
// TableInfo of every table in Tables. All problems are returned, joined;
// each is a *RouteError naming the route, the table and the column. The
// receiver is not changed.
func (rs *Routes) Bind(infos map[fluss.TablePath]*fluss.TableInfo, opts ...Option) (*Routes, error) {
	o := newOptions(opts)
	out := &Routes{exact: make(map[string]*Route, len(rs.exact))}
	var errs []error
	rows := &rowsPool{} // every converter of this generation
	for _, r := range rs.all {
		nr := *r
		info := infos[r.spec.Table]
		if info == nil {
			errs = append(errs, &RouteError{Route: r.spec.Name, Table: r.spec.Table, Problem: "table not found"})
			continue
		}
		conv, err := newConverter(&nr, info, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		conv.rows = rows
		nr.conv = conv
		if r.spec.Errors.Mode == ErrorsDLQ {
			dinfo := infos[r.spec.Errors.DLQTable]
			if dinfo == nil {
				errs = append(errs, &RouteError{Route: r.spec.Name, Table: r.spec.Errors.DLQTable, Problem: "dead-letter table not found"})
				continue
			}
			d, err := NewDLQ(dinfo)
			if err != nil {
				errs = append(errs, &RouteError{Route: r.spec.Name, Table: r.spec.Errors.DLQTable, Problem: "dead-letter table", Err: err})
				continue
			}
			nr.dlq = d
		}
		if nr.pattern == nil {
			out.exact[nr.spec.Topic] = &nr
		} else {
			out.patterns = append(out.patterns, &nr)
		}
		out.all = append(out.all, &nr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
