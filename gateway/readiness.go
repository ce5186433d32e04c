package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/outage"
	"github.com/fluss-kafka/gateway/produce"
)

// writeReadiness is the Fluss half of /readyz: whether the gateway can write.
// A probe (flussProbe) runs every interval; the gateway is ready while
// the last probe succeeded, or failed for less than grace since the last
// success, so a blip (a leader election, one slow metadata answer) does not
// take the instance out of its load balancer, while a dead coordinator does
// within grace plus one interval. Before the first success it is not ready.
type writeReadiness struct {
	probe    func(ctx context.Context) error
	interval time.Duration
	grace    time.Duration
	timeout  time.Duration // bounds one probe
	now      func() time.Time
	outage   *outage.Log

	mu      sync.Mutex // guards the fields below
	okOnce  bool
	lastOK  time.Time
	lastErr error
}

// errNotProbedYet is the readiness before the first probe finished.
var errNotProbedYet = errors.New("fluss not checked yet")

func newReadiness(probe func(context.Context) error, interval, grace time.Duration, outage *outage.Log, now func() time.Time) *writeReadiness {
	if now == nil {
		now = time.Now
	}
	// A probe that takes longer than the grace would hide a dead cluster
	// for its whole timeout; one that gives up too soon would call a slow
	// answer a failure.
	timeout := min(max(grace, time.Second), 5*time.Second)
	return &writeReadiness{probe: probe, interval: interval, grace: grace, timeout: timeout, now: now, outage: outage, lastErr: errNotProbedYet}
}

// run probes every interval until ctx ends.
func (r *writeReadiness) run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		r.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// check runs one probe and records its outcome.
func (r *writeReadiness) check(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, r.timeout)
	err := r.probe(pctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // stopping: not a Fluss failure
	}
	r.observe(err)
}

// observe records a probe outcome.
func (r *writeReadiness) observe(err error) {
	r.mu.Lock()
	if err == nil {
		r.okOnce, r.lastOK, r.lastErr = true, r.now(), nil
	} else {
		r.lastErr = err
	}
	r.mu.Unlock()
	if err == nil {
		r.outage.OK()
	} else {
		r.outage.Fail(err)
	}
}

// err is nil when ready, else why not.
func (r *writeReadiness) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.lastErr == nil:
		return nil
	case !r.okOnce:
		return r.lastErr
	case r.now().Sub(r.lastOK) <= r.grace:
		return nil // within grace
	}
	return fmt.Errorf("%w (failing for %s)", r.lastErr, r.now().Sub(r.lastOK).Round(time.Second))
}

// clusterProbe is what the readiness probe asks of the Fluss client.
type clusterProbe interface {
	RefreshMetadata(ctx context.Context, tables ...fluss.TablePath) error
	TabletServers(ctx context.Context) ([]fluss.ServerNode, error)
	Reach(ctx context.Context, addr string) error
}

// flussProbe checks that the gateway can write: cluster and bucket-leader
// metadata of the routes' tables can be fetched now (so it is fresh; any
// server answers it), and this instance reaches (opens a connection to)
// some tablet server the cluster lists. Reaching, not a request's answer:
// while one server is paused, Fluss holds the others' answers too for up
// to tens of seconds (writes waiting for the paused follower back their
// connections up), which every instance sees alike; measured, a ping on
// the pooled connections of one of two instances went unanswered by both
// live servers for 11 s.
// The coordinator is not asked: writes go on while it is down (measured:
// acknowledgements paused for 0.5 s while it was killed and restarted),
// and every instance sees its death alike, so making them unready for it
// would stop every topic that still works. A tablet server that does not answer leaves the instance
// ready as long as another one does, whichever buckets it leads: a
// crashed or paused server looks the same from every instance until Fluss
// moves its leaders, and making every instance unready for it would turn
// one server's fault into an outage of every topic (its own topics'
// batches fail with retriable errors meanwhile, as a bucket without leader
// does). After a few faults Fluss may have all of a table's leaders on one
// server, so whether the routed tables' leaders answer says nothing about
// this instance. This instance alone failing to reach any tablet server is
// its own trouble, so that does.
func flussProbe(c clusterProbe, state func() *produce.Bound) func(context.Context) error {
	return func(ctx context.Context) error {
		st := state()
		var tables []fluss.TablePath
		if st != nil {
			tables = st.Routes.Tables()
		}
		if err := c.RefreshMetadata(ctx, tables...); err != nil {
			return fmt.Errorf("fluss metadata: %w", err)
		}
		if st == nil {
			return nil
		}
		servers, err := c.TabletServers(ctx)
		if err != nil {
			return fmt.Errorf("fluss tablet servers: %w", err)
		}
		if len(servers) == 0 {
			return errors.New("fluss lists no tablet server")
		}
		// At once: a server whose host is gone holds its dial until the
		// probe's deadline, which must not starve the others'.
		var (
			mu   sync.Mutex
			down []string
			wg   sync.WaitGroup
		)
		for _, n := range servers {
			wg.Go(func() {
				if err := c.Reach(ctx, n.Addr()); err != nil {
					mu.Lock()
					down = append(down, fmt.Sprintf("%s: %v", n.Addr(), err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(down)
		if len(down) == len(servers) {
			return fmt.Errorf("no fluss tablet server reachable: %s", strings.Join(down, "; "))
		}
		return nil
	}
}
