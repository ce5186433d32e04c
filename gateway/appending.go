package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
)

// errTableBusy is the cause logged for a table's refused batches.
var errTableBusy = errors.New("batches waiting for Fluss hold the table's share of the memory budget")

// tableAppends bounds, per table, the Kafka batches being appended to it
// at once by the memory they pin: their bytes in the request frame and
// their decoded records (PartitionProduce.MemoryBytes). A batch whose table
// has used up its share of the writer's buffer waits in the writer, and so
// does its connection with its frame. Without this bound the producers of
// one stalled table would hold the whole requests' part of the memory
// budget, and no other connection could be read: the other tables would
// stall too. Past its bound a table's batches are refused at once with a
// retriable error (nothing of them written), so only its producers slow
// down, by their retry back-off.
type tableAppends struct {
	limit int64
	log   *slog.Logger

	mu     sync.Mutex
	held   map[int64]int64      // table id -> bytes of batches being appended
	outage map[int64]*outageLog // table id -> its refusals' log (one per table refused since start)
}

func newTableAppends(limit int64, log *slog.Logger) *tableAppends {
	return &tableAppends{limit: limit, log: log, held: make(map[int64]int64), outage: make(map[int64]*outageLog)}
}

// enter admits a batch of n bytes for table (named path, for the log). A
// batch is always admitted when the table has none being appended, so a
// batch larger than the bound still gets through alone.
func (a *tableAppends) enter(table int64, path string, n int64) bool {
	a.mu.Lock()
	cur := a.held[table]
	if cur > 0 && cur+n > a.limit {
		o := a.outage[table]
		if o == nil {
			o = newOutageLog(a.log.With(slog.String("table", path), slog.Int64("bound_bytes", a.limit)),
				"table is at its share of the memory budget: refusing its batches with a retriable error (Fluss slow or stalled for it)",
				"table below its share of the memory budget again", 0, nil)
			a.outage[table] = o
		}
		a.mu.Unlock()
		o.fail(errTableBusy)
		return false
	}
	a.held[table] = cur + n
	a.mu.Unlock()
	return true
}

// leave ends an append admitted by enter. The table's refusals end (one
// INFO line) once none of its batches is being appended.
func (a *tableAppends) leave(table int64, n int64) {
	a.mu.Lock()
	var o *outageLog
	if a.held[table] -= n; a.held[table] <= 0 {
		delete(a.held, table)
		o = a.outage[table]
	}
	a.mu.Unlock()
	if o != nil {
		o.ok()
	}
}

// enterTable admits req's batch to the appends of its route's table (see
// tableAppends); leave ends it. A refused batch gets REQUEST_TIMED_OUT.
func (s *bridge) enterTable(st *routeState, route *mapping.Route, req *kafkaproto.PartitionProduce) (leave func(), err error) {
	a := s.appending
	if a == nil {
		return func() {}, nil
	}
	table, n := st.tables[route.Table()], req.MemoryBytes()
	if !a.enter(table.ID(), table.Path().String(), n) {
		s.m.tableBusy(route.Name())
		return nil, fmt.Errorf("%w: table %s: its batches waiting for Fluss hold its share of the memory budget (Fluss slow or stalled for it); nothing of this batch was written",
			kafkaproto.ErrRequestTimedOut, table.Path())
	}
	return func() { a.leave(table.ID(), n) }, nil
}
