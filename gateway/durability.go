package gateway

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// durabilityWarnings names the routes whose table (or dead-letter table)
// keeps one copy of each row. With replication factor 1, acks=all towards
// Fluss waits for the leader alone: a tablet server crash can truncate rows
// the producer already saw acknowledged (Fluss truncates the log end to
// the local high watermark on restart). The factor is the table's
// table.replication.factor property, which Fluss fills from the cluster's
// default.replication.factor (itself 1 by default) when the table is
// created.
func durabilityWarnings(routes *mapping.Routes, infos map[fluss.TablePath]*fluss.TableInfo) []durabilityWarning {
	var out []durabilityWarning
	for _, r := range routes.All() {
		tables := []fluss.TablePath{r.Table()}
		if d := r.DLQ(); d != nil {
			tables = append(tables, d.Table())
		}
		for _, path := range tables {
			info := infos[path]
			if info == nil {
				continue
			}
			if rf, known := replicationFactor(info); !known || rf < 2 {
				out = append(out, durabilityWarning{route: r.Name(), table: path, rf: rf, known: known})
			}
		}
	}
	return out
}

// durabilityWarning is a route whose table keeps a single copy of a row.
type durabilityWarning struct {
	route string
	table fluss.TablePath
	rf    int
	known bool // the table states its factor
}

// durabilityMessage is the log message of every durabilityWarning; the
// route, table and factor are its attributes.
const durabilityMessage = "table keeps one copy of each row: a tablet server crash can lose acknowledged rows"

func (w durabilityWarning) String() string {
	if !w.known {
		return fmt.Sprintf("route %q: table %s does not state %s; with the cluster default of 1 a tablet server crash can lose acknowledged rows",
			w.route, w.table, fluss.PropReplicationFactor)
	}
	return fmt.Sprintf("route %q: table %s has replication factor %d: acks=all waits for one copy only, so a tablet server crash can lose acknowledged rows (use %s >= 2)",
		w.route, w.table, w.rf, fluss.PropReplicationFactor)
}

func (w durabilityWarning) attrs() []any {
	rf := "unstated"
	if w.known {
		rf = strconv.Itoa(w.rf)
	}
	return []any{slog.String("table", w.table.String()), slog.String("replication_factor", rf)}
}

// maxListed bounds the per-table and per-route lines a load logs: past
// it, one line counts the rest (a gateway with 500 routes logged 500
// warnings at every load, reload and added column).
const maxListed = 10

// logDurability logs the warnings once per table, naming its routes, for
// at most maxListed tables; one more line counts the tables past them.
func logDurability(log *slog.Logger, ws []durabilityWarning) {
	var tables []fluss.TablePath
	byTable := map[fluss.TablePath][]durabilityWarning{}
	for _, w := range ws {
		if _, ok := byTable[w.table]; !ok {
			tables = append(tables, w.table)
		}
		byTable[w.table] = append(byTable[w.table], w)
	}
	for i, t := range tables {
		if i == maxListed {
			rest, routes := tables[i:], 0
			for _, t := range rest {
				routes += len(byTable[t])
			}
			log.Warn(durabilityMessage+" (and more tables)", slog.Int("tables", len(rest)), slog.Int("routes", routes),
				slog.String("first", rest[0].String()), slog.String("last", rest[len(rest)-1].String()))
			return
		}
		group := byTable[t]
		routes := make([]string, 0, len(group))
		for _, w := range group {
			routes = append(routes, w.route)
		}
		log.Warn(durabilityMessage, append(group[0].attrs(), slog.Any("routes", routes))...)
	}
}

// replicationFactor reads a table's replication factor from its
// properties.
func replicationFactor(info *fluss.TableInfo) (int, bool) {
	v, ok := info.Descriptor.Properties[fluss.PropReplicationFactor]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, false
	}
	return n, true
}
