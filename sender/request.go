package sender

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
)

// request is one ProduceLog/PutKv call: one table on one tablet server.
type request struct {
	server  int32
	table   *accumulator.Table
	batches []*batch
	// per batch, captured at drain time by the loop
	writerID        []int64
	seq             []int32
	lastAckedAtSend []int32
	// joined: the batch goes in the records entry of the batch before it
	// (fresh sealed batches of one bucket: see joinFresh).
	joined []bool
	// Requests to one (server, table) are built concurrently but queued on
	// the connection in drain order, so a bucket's batch sequences reach the
	// server in order: after is closed once the previous request was queued
	// (nil for none), and queued is closed once this one is.
	after, queued chan struct{}
}

// add appends b, drained with its bucket's lastAcked, to the request.
func (req *request) add(b *batch, lastAcked int32, joined bool) {
	req.batches = append(req.batches, b)
	req.writerID = append(req.writerID, b.writerID)
	req.seq = append(req.seq, b.sequence)
	req.lastAckedAtSend = append(req.lastAckedAtSend, lastAcked)
	req.joined = append(req.joined, joined)
}

type response struct {
	req      *request
	results  []fluss.BucketResult
	err      error
	buildErr []error
	latency  time.Duration
	sent     bool
	// Per batch: the records entry it went in (-1: not built), and the
	// records of that entry before it (its offset from the entry's base).
	entry  []int
	before []int64
	// entryBatches counts each entry's batches.
	entryBatches []int
}

type built struct {
	data []byte
	err  error
}

// buildAll builds the request's batches, the ones not built yet (the
// first attempt: encoding and compression, the costly part) in parallel
// on up to GOMAXPROCS goroutines, so that a request of several buckets
// does not compress them one after the other on one core. Retries only
// re-patch their header.
func buildAll(req *request) []built {
	out := make([]built, len(req.batches))
	fresh := 0
	for _, b := range req.batches {
		if !b.Built() {
			fresh++
		}
	}
	if fresh < 2 {
		for i, b := range req.batches {
			out[i].data, out[i].err = b.Build(req.writerID[i], req.seq[i])
		}
		return out
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, b := range req.batches {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i].data, out[i].err = b.Build(req.writerID[i], req.seq[i])
		})
	}
	wg.Wait()
	return out
}

// send builds the request's batches (outside every lock), writes them
// after the previous request of its (server, table) was queued, and posts
// the answer to the loop.
func (s *Sender) send(ctx context.Context, req *request) {
	defer s.wg.Done()
	var once sync.Once
	queued := func() { once.Do(func() { close(req.queued) }) }
	defer queued() // never leave the next request waiting
	n := len(req.batches)
	resp := &response{req: req, buildErr: make([]error, n), entry: make([]int, n), before: make([]int64, n)}
	buckets := make([]fluss.BucketRecords, 0, n)
	var parts [][][]byte // per entry, its batches' bytes when it has several
	datas := buildAll(req)
	entry := -1       // the records entry of the current bucket's batches
	var inEntry int64 // records in that entry so far
	for i, b := range req.batches {
		if !req.joined[i] {
			entry = -1
		}
		resp.entry[i] = -1
		data, err := datas[i].data, datas[i].err
		if err != nil {
			resp.buildErr[i] = err
			continue
		}
		if entry >= 0 {
			if parts[entry] == nil {
				parts[entry] = [][]byte{buckets[entry].Records}
			}
			parts[entry] = append(parts[entry], data)
			resp.entry[i], resp.before[i] = entry, inEntry
			inEntry += int64(b.Records())
			resp.entryBatches[entry]++
			continue
		}
		entry, inEntry = len(buckets), int64(b.Records())
		resp.entry[i] = entry
		resp.entryBatches = append(resp.entryBatches, 1)
		parts = append(parts, nil)
		buckets = append(buckets, fluss.BucketRecords{
			PartitionID: b.PartitionID(), Bucket: b.Bucket(), Records: data,
			// Fluss 1.0 wire: the count the rows were bucketed with; a server
			// that knows another count for the partition answers
			// INVALID_BUCKET_ROUTING instead of storing misrouted rows.
			RoutingBucketCount: b.Queue().RoutingBuckets(),
		})
	}
	for e, ps := range parts {
		if ps != nil {
			// Batches are self-delimiting: an entry of several is their
			// bytes one after the other (a new buffer: each batch keeps
			// its own for a resend).
			buckets[e].Records = bytes.Join(ps, nil)
		}
	}
	if len(buckets) > 0 && req.after != nil {
		select {
		case <-req.after:
		case <-ctx.Done():
		}
	}
	if len(buckets) > 0 {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout+s.cfg.RequestTimeoutOverhead)
		start := time.Now()
		api := "produce_log"
		var pw *fluss.PendingWrite
		if req.table.IsKv() {
			api = "put_kv"
			pw, resp.err = s.tr.SendPutKv(rctx, req.server, &fluss.PutKvRequest{
				TableID:       req.table.ID(),
				Acks:          s.cfg.Acks,
				Timeout:       s.cfg.RequestTimeout,
				TargetColumns: req.table.TargetColumns(),
				Buckets:       buckets,
			})
		} else {
			pw, resp.err = s.tr.SendProduceLog(rctx, req.server, &fluss.ProduceLogRequest{
				TableID: req.table.ID(),
				Acks:    s.cfg.Acks,
				Timeout: s.cfg.RequestTimeout,
				Buckets: buckets,
			})
		}
		queued() // queued, or failed to be: the next request may go
		if resp.err == nil {
			resp.results, resp.err = pw.Wait(rctx)
		}
		if resp.err != nil {
			resp.err = fmt.Errorf("%s to tablet server %d: %w", api, req.server, resp.err)
		}
		resp.latency = time.Since(start)
		resp.sent = true
		if resp.err != nil && rctx.Err() != nil && ctx.Err() == nil {
			// Our own per-request deadline, not the caller giving up: a
			// request timeout (retriable; the outcome is unknown).
			resp.err = fmt.Errorf("%w: no answer from tablet server %d within %v (%v)",
				fluss.ErrRequestTimeout, req.server, s.cfg.RequestTimeout+s.cfg.RequestTimeoutOverhead, resp.err)
		}
		cancel()
	}
	s.post(event{resp: resp})
}
