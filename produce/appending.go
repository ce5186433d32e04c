package produce

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/outage"
)

// errTableBusy is the cause logged for a table's refused batches.
var errTableBusy = errors.New("batches waiting for Fluss hold the table's share of the memory budget")

// TableAppends bounds, per table, the Kafka batches being appended to it
// at once by the memory they pin: their bytes in the request frame and
// their decoded records (PartitionProduce.MemoryBytes). A batch whose table
// has used up its share of the writer's buffer waits in the writer, and so
// does its connection with its frame. Without this bound the producers of
// one stalled table would hold the whole requests' part of the memory
// budget, and no other connection could be read: the other tables would
// stall too. Past its bound a table's batches are refused at once with a
// retriable error (nothing of them written), so only its producers slow
// down, by their retry back-off.
type TableAppends struct {
	limit int64
	log   *slog.Logger

	mu     sync.Mutex
	held   map[int64]int64       // table id -> bytes of batches being appended
	outage map[int64]*outage.Log // table id -> its refusals' log (one per table refused since start)
}

func NewTableAppends(limit int64, log *slog.Logger) *TableAppends {
	return &TableAppends{limit: limit, log: log, held: make(map[int64]int64), outage: make(map[int64]*outage.Log)}
}

// enter admits a batch of n bytes for table (named path, for the log). A
// batch is always admitted when the table has none being appended, so a
// batch larger than the bound still gets through alone.
func (a *TableAppends) enter(table int64, path string, n int64) bool {
	a.mu.Lock()
	cur := a.held[table]
	if cur > 0 && cur+n > a.limit {
		o := a.outage[table]
		if o == nil {
			o = outage.New(a.log.With(slog.String("table", path), slog.Int64("bound_bytes", a.limit)),
				"table is at its share of the memory budget: refusing its batches with a retriable error (Fluss slow or stalled for it)",
				"table below its share of the memory budget again", 0, nil)
			a.outage[table] = o
		}
		a.mu.Unlock()
		o.Fail(errTableBusy)
		return false
	}
	a.held[table] = cur + n
	a.mu.Unlock()
	return true
}

// leave ends an append admitted by enter. The table's refusals end (one
// INFO line) once none of its batches is being appended.
func (a *TableAppends) leave(table int64, n int64) {
	a.mu.Lock()
	var o *outage.Log
	if a.held[table] -= n; a.held[table] <= 0 {
		delete(a.held, table)
		o = a.outage[table]
	}
	a.mu.Unlock()
	if o != nil {
		o.OK()
	}
}

// enterTable admits req's batch to the appends of its route's table (see
// tableAppends); leave ends it. A refused batch gets REQUEST_TIMED_OUT.
func (s *Path) enterTable(st *Bound, route *mapping.Route, req *kafkaproto.PartitionProduce) (leave func(), err error) {
	a := s.Appending
	if a == nil {
		return func() {}, nil
	}
	table, n := st.Tables[route.Table()], req.MemoryBytes()
	if !a.enter(table.ID(), table.Path().String(), n) {
		s.m.tableBusy(route.Name())
		return nil, fmt.Errorf("%w: table %s: its batches waiting for Fluss hold its share of the memory budget (Fluss slow or stalled for it); nothing of this batch was written",
			kafkaproto.ErrRequestTimedOut, table.Path())
	}
	return func() { a.leave(table.ID(), n) }, nil
}
