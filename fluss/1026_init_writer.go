package fluss

// INIT_WRITER (1026), version 0. Any tablet server.
//
// Returns a cluster-wide writer id (allocated through ZooKeeper) for
// idempotent writes. With an authorizer the server requires WRITE on one of
// the listed tables.
//
// Kafka producers call InitProducerId at start and after fatal sequence
// errors, so this is on a hot path during incidents: the client keeps asking
// the tablet server that last answered, with no metadata request, and only
// looks for another when that one cannot be reached. A coordinator outage
// therefore does not touch InitWriter at all.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// InitWriter obtains a new writer id for writing to the given tables.
//
// It asks the tablet server it last succeeded on. When that server cannot
// be reached (an error answer from it is returned as is), it tries the
// tablet servers metadata listed, then bootstrap addresses that are tablet
// servers, and only when none is known one cluster metadata request. The
// whole call is bounded by DialTimeout + RequestTimeout (and ctx): when no
// tablet server can be reached it returns promptly with a retriable error.
func (c *Client) InitWriter(ctx context.Context, tables ...TablePath) (int64, error) {
	req := &pb.InitWriterRequest{}
	for _, t := range tables {
		req.TablePath = append(req.TablePath, pbTablePath(t))
	}
	budget := c.cfg.DialTimeout + c.cfg.RequestTimeout
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	failed := ""
	if addr := c.initAddr.Load(); addr != nil {
		id, err := c.initWriterOn(bctx, *addr, req)
		if err == nil {
			return id, nil
		}
		c.initAddr.CompareAndSwap(addr, nil)
		if answered(err) || bctx.Err() != nil {
			return 0, initWriterError(ctx, budget, err)
		}
		failed = *addr
	}
	errs := []error{}
	tried := map[string]bool{failed: true}
	try := func(addr string) (int64, bool, error) {
		if tried[addr] {
			return 0, false, nil
		}
		tried[addr] = true
		id, err := c.initWriterOn(bctx, addr, req)
		if err == nil {
			c.initAddr.Store(&addr)
			return id, true, nil
		}
		errs = append(errs, err)
		if answered(err) || bctx.Err() != nil {
			return 0, true, err
		}
		return 0, false, nil
	}
	// known tablet servers first, then bootstrap addresses that turn out
	// to be tablet servers, then what one metadata request names
	candidates := func() []string {
		snap := c.meta.Load()
		out := make([]string, 0, len(snap.servers))
		for _, id := range snap.serverIDs() {
			out = append(out, snap.servers[id].Addr())
		}
		return out
	}
	for _, addr := range candidates() {
		if id, done, err := try(addr); done {
			return id, initWriterError(ctx, budget, err)
		}
	}
	for _, addr := range c.cfg.Bootstrap {
		if tried[addr] {
			continue
		}
		cn, err := c.connTo(bctx, addr)
		if err != nil || cn.serverType != serverTypeTabletServer {
			continue
		}
		if id, done, err := try(addr); done {
			return id, initWriterError(ctx, budget, err)
		}
	}
	if bctx.Err() == nil {
		if err := c.refreshCluster(bctx); err != nil {
			errs = append(errs, err)
		}
		for _, addr := range candidates() {
			if id, done, err := try(addr); done {
				return id, initWriterError(ctx, budget, err)
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("metadata lists no tablet server"))
	}
	return 0, initWriterError(ctx, budget, fmt.Errorf("%w: no tablet server reachable: %w", ErrConnectionClosed, errors.Join(errs...)))
}

// initWriterOn sends INIT_WRITER to one tablet server.
func (c *Client) initWriterOn(ctx context.Context, addr string, req *pb.InitWriterRequest) (int64, error) {
	cn, err := c.connTo(ctx, addr)
	if err != nil {
		return 0, err
	}
	var resp pb.InitWriterResponse
	if err := cn.call(ctx, apiInitWriter, req, &resp, 0); err != nil {
		return 0, fmt.Errorf("on tablet server %s: %w", addr, err)
	}
	return resp.GetWriterId(), nil
}

// answered reports whether err is the server's own answer (an error code),
// which another tablet server would give as well.
func answered(err error) bool {
	var fe *Error
	return errors.As(err, &fe)
}

// initWriterError wraps err for the caller. The expiry of InitWriter's own
// budget, while the caller's ctx is alive, becomes ErrRequestTimeout
// (retriable) rather than a context error, which reads as the caller giving
// up.
func initWriterError(ctx context.Context, budget time.Duration, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("init_writer: %w: no tablet server answered within %s (%v)", ErrRequestTimeout, budget, err)
	}
	return fmt.Errorf("init_writer: %w", err)
}
