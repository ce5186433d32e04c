package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fluss-kafka/gateway/fluss"
)

// partitionSource is what partition resolution needs from Fluss.
type partitionSource interface {
	EnsurePartition(ctx context.Context, path fluss.TablePath, spec fluss.PartitionSpec) (int64, error)
}

// partitionCache resolves partition names to ids, creating partitions that
// do not exist yet. Ids are cached per table id, so a re-created table does
// not reuse stale ones.
type partitionCache struct {
	src partitionSource

	mu  sync.RWMutex // guards ids
	ids map[partitionKey]int64
}

type partitionKey struct {
	tableID int64
	name    string
}

// forget drops the cached id of a partition that Fluss says is gone.
func (c *partitionCache) forget(tableID, partitionID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, id := range c.ids {
		if k.tableID == tableID && id == partitionID {
			delete(c.ids, k)
		}
	}
}

func newPartitionCache(src partitionSource) *partitionCache {
	return &partitionCache{src: src, ids: make(map[partitionKey]int64)}
}

// cached returns the partition id of name in the table when it is known,
// without calling Fluss.
func (c *partitionCache) cached(tableID int64, name string) (int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.ids[partitionKey{tableID, name}]
	return id, ok
}

// id returns the partition id of name in the table, creating the partition
// when it does not exist. It may block on Fluss, honouring ctx.
func (c *partitionCache) id(ctx context.Context, info *fluss.TableInfo, name string) (int64, error) {
	k := partitionKey{info.TableID, name}
	c.mu.RLock()
	id, ok := c.ids[k]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}
	keys := info.Descriptor.PartitionKeys
	values := strings.Split(name, fluss.PartitionSeparator)
	if len(values) != len(keys) {
		return 0, fmt.Errorf("partition %q of table %s: %d values for %d partition keys", name, info.Path, len(values), len(keys))
	}
	spec := make(fluss.PartitionSpec, len(keys))
	for i, key := range keys {
		spec[i] = fluss.PartitionValue{Key: key, Value: values[i]}
	}
	id, err := c.src.EnsurePartition(ctx, info.Path, spec)
	if err != nil {
		return 0, fmt.Errorf("resolve partition %q of table %s: %w", name, info.Path, err)
	}
	c.mu.Lock()
	c.ids[k] = id
	c.mu.Unlock()
	return id, nil
}

// topicPartition names a Kafka partition.
type topicPartition struct {
	topic     string
	partition int32
}

// pendingWrites holds the converted batches that wait for a Fluss partition
// to be resolved, one FIFO per Kafka partition: a later batch of the same
// Kafka partition queues behind them even when its own partitions are
// known, so per-partition order holds. Each queue has one goroutine while
// it is not empty. franz-go buffers records of a topic whose metadata is
// not loaded yet the same way.
type pendingWrites struct {
	mu     sync.Mutex // guards queues
	queues map[topicPartition]*[]func()
	wg     sync.WaitGroup // queued jobs not finished
}

func newPendingWrites() *pendingWrites {
	return &pendingWrites{queues: make(map[topicPartition]*[]func())}
}

// busy reports whether batches of tp are waiting.
func (p *pendingWrites) busy(tp topicPartition) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.queues[tp]
	return ok
}

// enqueue runs job after every job queued for tp before it.
func (p *pendingWrites) enqueue(tp topicPartition, job func()) {
	p.wg.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if q, ok := p.queues[tp]; ok {
		*q = append(*q, job)
		return
	}
	q := &[]func(){job}
	p.queues[tp] = q
	go p.run(tp, q)
}

func (p *pendingWrites) run(tp topicPartition, q *[]func()) {
	for {
		p.mu.Lock()
		if len(*q) == 0 {
			delete(p.queues, tp)
			p.mu.Unlock()
			return
		}
		job := (*q)[0]
		(*q)[0] = nil
		*q = (*q)[1:]
		p.mu.Unlock()
		job()
		p.wg.Done()
	}
}

// wait blocks until every queued job has run, or ctx ends.
func (p *pendingWrites) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
