package mapping

import (
	"sync"
	"sync/atomic"
)

// Rows is the conversion state of one batch of records: one Converted per
// record, each keeping its row, key and arenas warm from earlier batches,
// so that converting a batch allocates nothing in steady state.
type Rows struct {
	// Converted has one element per record of the batch.
	Converted []Converted
}

// maxPooledRows bounds the Rows kept for reuse: a rare huge batch must not
// pin its row buffers.
const maxPooledRows = 4096

// rowsPool keeps a converter's Rows between batches. spare keeps one
// through garbage collections, which empty a sync.Pool (and an item Put on
// another P is out of reach of a Get here): a route fed by one connection
// then never starts cold. A Converted takes any number of columns, so the
// converters of one Routes.Bind share one pool: with a spare per route,
// 500 routes kept 500 spares (24 MiB in a heap profile at 500 tables).
type rowsPool struct {
	spare atomic.Pointer[Rows]
	pool  sync.Pool // *Rows
}

// GetRows returns conversion state for n records, reused when some was
// given back with PutRows.
func (c *Converter) GetRows(n int) *Rows {
	r := c.rows.spare.Swap(nil)
	if r == nil {
		r, _ = c.rows.pool.Get().(*Rows)
	}
	if r == nil {
		r = &Rows{}
	}
	if cap(r.Converted) < n {
		r.Converted = append(r.Converted[:cap(r.Converted)], make([]Converted, n-cap(r.Converted))...)
	}
	r.Converted = r.Converted[:n]
	return r
}

// PutRows gives r back for a later batch of the route. Nothing may use r,
// nor the rows and keys it handed out, afterwards.
func (c *Converter) PutRows(r *Rows) {
	if r == nil || cap(r.Converted) > maxPooledRows {
		return
	}
	if !c.rows.spare.CompareAndSwap(nil, r) {
		c.rows.pool.Put(r)
	}
}
