package kafkaproto

// Client quotas on Produce (Kafka's producer_byte_rate, KIP-219): the
// request's record batch bytes are charged to the client's quota as it is
// handled; a client over its quota gets throttle_time_ms in the response,
// which is not delayed (Produce v6+), and the connection reads no further
// request until that time has passed, as a broker mutes a throttled
// channel. Clients back off by themselves too. Produce v3-v5 clients do
// not honour throttle_time_ms: their response is also held until then.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProduceQuota decides how long a client that produced is throttled; the
// rule (entities, rates, limits) is the implementation's. It must be safe
// for concurrent use and cheap: it is called for every Produce request.
type ProduceQuota interface {
	// RecordProduce charges bytes of record batches produced by principal
	// with clientID ("" when the client sent none) and returns how long
	// the client must wait before its next request (0: not throttled).
	// The strings may alias a request buffer: clone them to keep them.
	RecordProduce(principal, clientID string, bytes int) time.Duration
}

// WithProduceQuota throttles producers over their quota (default: none).
// One ProduceQuota may be shared by several Servers (listeners), so that a
// client's quota is per instance, as Kafka's are per broker.
func WithProduceQuota(q ProduceQuota) Option { return func(o *options) { o.quota = q } }

// minThrottledProduce is the first Produce version whose clients wait
// throttle_time_ms themselves, so that the response need not be held.
const minThrottledProduce = 6

// chargeQuota charges a Produce request to the client's quota. A throttled
// request's response carries the throttle time (held until it passes for
// v3-v5), and the connection is muted until then.
func (c *conn) chargeQuota(req *kmsg.ProduceRequest, clientID *string, w *produceWait) {
	q := c.s.quota
	if q == nil {
		return
	}
	n := 0
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			n += len(req.Topics[i].Partitions[j].Records)
		}
	}
	cid := ""
	if clientID != nil {
		cid = *clientID
	}
	d := q.RecordProduce(c.principal(), cid, n)
	if d <= 0 {
		return
	}
	until := time.Now().Add(d)
	c.mutedUntil = until
	w.quotaThrottle = d
	if req.Version < minThrottledProduce {
		w.holdUntil = until
	}
}

// awaitUnmute waits, on the reader, until a throttled connection may be
// read again; false when the connection died.
func (c *conn) awaitUnmute() bool {
	until := c.mutedUntil
	c.mutedUntil = time.Time{}
	return c.waitUntil(until)
}

// waitUntil waits for a quota's throttle time to pass: the reader's mute,
// or the writer's hold of a v3-v5 response. Draining ends the wait (what
// was received is answered without delay); false when the connection died.
func (c *conn) waitUntil(until time.Time) bool {
	d := time.Until(until)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.drainCtx.Done():
	}
	return c.ctx.Err() == nil
}
