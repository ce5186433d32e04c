package sender

import (
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
	// Requests to one (server, table) are built concurrently but queued on
	// the connection in drain order, so a bucket's batch sequences reach the
	// server in order: after is closed once the previous request was queued
	// (nil for none), and queued is closed once this one is.
	after, queued chan struct{}
}

type response struct {
	req      *request
	results  []fluss.BucketResult
	err      error
	buildErr []error
	latency  time.Duration
	sent     bool
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
	resp := &response{req: req, buildErr: make([]error, len(req.batches))}
	buckets := make([]fluss.BucketRecords, 0, len(req.batches))
	datas := buildAll(req)
	for i, b := range req.batches {
		data, err := datas[i].data, datas[i].err
		if err != nil {
			resp.buildErr[i] = err
			continue
		}
		buckets = append(buckets, fluss.BucketRecords{
			PartitionID: b.PartitionID(), Bucket: b.Bucket(), Records: data,
			// Fluss 1.0 wire: the count the rows were bucketed with; a server
			// that knows another count for the partition answers
			// INVALID_BUCKET_ROUTING instead of storing misrouted rows.
			RoutingBucketCount: b.Queue().RoutingBuckets(),
		})
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
