package produce

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fluss-kafka/gateway/fluss"
)

// PartitionSource is what partition resolution needs from Fluss.
type PartitionSource interface {
	EnsurePartition(ctx context.Context, path fluss.TablePath, spec fluss.PartitionSpec) (int64, error)
	// BucketCount is a partition's own bucket count (Fluss 1.0: fixed when
	// the partition is created, the table's count at that moment).
	BucketCount(ctx context.Context, tableID, partitionID int64) (int32, error)
}

// PartitionCache resolves partition names to ids and bucket counts,
// creating partitions that do not exist yet. Ids are cached per table id,
// so a re-created table does not reuse stale ones.
type PartitionCache struct {
	src PartitionSource

	mu      sync.RWMutex // guards ids and buckets
	ids     map[partitionKey]int64
	buckets map[partitionRef]int32
}

type partitionKey struct {
	tableID int64
	name    string
}

type partitionRef struct {
	tableID, partitionID int64
}

// forget drops the cached id and bucket count of a partition that Fluss
// says is gone, or whose bucket count was wrong.
func (c *PartitionCache) forget(tableID, partitionID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, id := range c.ids {
		if k.tableID == tableID && id == partitionID {
			delete(c.ids, k)
		}
	}
	delete(c.buckets, partitionRef{tableID, partitionID})
}

func NewPartitionCache(src PartitionSource) *PartitionCache {
	return &PartitionCache{src: src, ids: make(map[partitionKey]int64), buckets: make(map[partitionRef]int32)}
}

// bucketsOf returns the cached bucket count of a partition (0: unknown).
// It never calls Fluss: the writer asks it on its write path.
func (c *PartitionCache) bucketsOf(tableID, partitionID int64) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return int(c.buckets[partitionRef{tableID, partitionID}])
}

// cached returns the partition id and bucket count of name in the table
// when both are known, without calling Fluss.
func (c *PartitionCache) cached(tableID int64, name string) (int64, int, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.ids[partitionKey{tableID, name}]
	if !ok {
		return 0, 0, false
	}
	n, ok := c.buckets[partitionRef{tableID, id}]
	return id, int(n), ok
}

// id returns the partition id and bucket count of name in the table,
// creating the partition when it does not exist. It may block on Fluss,
// honouring ctx.
func (c *PartitionCache) id(ctx context.Context, info *fluss.TableInfo, name string) (int64, int, error) {
	if id, n, ok := c.cached(info.TableID, name); ok {
		return id, n, nil
	}
	k := partitionKey{info.TableID, name}
	c.mu.RLock()
	id, ok := c.ids[k]
	c.mu.RUnlock()
	if ok {
		return c.countOf(ctx, info, name, id)
	}
	keys := info.Descriptor.PartitionKeys
	values := strings.Split(name, fluss.PartitionSeparator)
	if len(values) != len(keys) {
		return 0, 0, fmt.Errorf("partition %q of table %s: %d values for %d partition keys", name, info.Path, len(values), len(keys))
	}
	spec := make(fluss.PartitionSpec, len(keys))
	for i, key := range keys {
		spec[i] = fluss.PartitionValue{Key: key, Value: values[i]}
	}
	id, err := c.src.EnsurePartition(ctx, info.Path, spec)
	if err != nil {
		return 0, 0, fmt.Errorf("resolve partition %q of table %s: %w", name, info.Path, err)
	}
	c.mu.Lock()
	c.ids[k] = id
	c.mu.Unlock()
	return c.countOf(ctx, info, name, id)
}

// countOf looks up and caches a partition's bucket count.
func (c *PartitionCache) countOf(ctx context.Context, info *fluss.TableInfo, name string, id int64) (int64, int, error) {
	n, err := c.src.BucketCount(ctx, info.TableID, id)
	if err != nil {
		return 0, 0, fmt.Errorf("bucket count of partition %q of table %s: %w", name, info.Path, err)
	}
	if n <= 0 { // not reported: the table's
		n = int32(info.Descriptor.BucketCount)
	}
	c.mu.Lock()
	c.buckets[partitionRef{info.TableID, id}] = n
	c.mu.Unlock()
	return id, int(n), nil
}

// TopicPartition names a Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// pendingKey names one FIFO of pendingWrites: a Kafka partition's batches
// on the merged path (producer -1), one producer's batches of a Kafka
// partition on the exactly-once path. An exactly-once batch owes order only
// to its own producer's (each producer's batches carry its own sequences),
// and a producer whose state is being looked up, or that waits for memory,
// must not hold the partition's other producers: with thousands of them
// one queue per partition made every producer wait for every other's
// first lookup.
type pendingKey struct {
	TopicPartition
	producer int64
}

// mergedQueue is the FIFO of tp's batches on the merged path.
func mergedQueue(tp TopicPartition) pendingKey { return pendingKey{tp, -1} }

// pendingWrites holds the converted batches that wait for a Fluss partition
// to be resolved (and the exactly-once path's batches), one FIFO per
// pendingKey: a later batch of the same Kafka partition queues behind them
// even when its own partitions are known, so per-partition order holds.
// Each queue has one goroutine while it is not empty. franz-go buffers
// records of a topic whose metadata is not loaded yet the same way.
type pendingWrites struct {
	mu     sync.Mutex // guards queues
	queues map[pendingKey]*[]func()
	wg     sync.WaitGroup // queued jobs not finished
}

func newPendingWrites() *pendingWrites {
	return &pendingWrites{queues: make(map[pendingKey]*[]func())}
}

// busy reports whether batches of queue k are waiting.
func (p *pendingWrites) busy(k pendingKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.queues[k]
	return ok
}

// enqueue runs job after every job queued for k before it.
func (p *pendingWrites) enqueue(k pendingKey, job func()) {
	p.wg.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if q, ok := p.queues[k]; ok {
		*q = append(*q, job)
		return
	}
	q := &[]func(){job}
	p.queues[k] = q
	go p.run(k, q)
}

func (p *pendingWrites) run(k pendingKey, q *[]func()) {
	for {
		p.mu.Lock()
		job := (*q)[0] // enqueue created the queue with a job; run ends when it empties
		(*q)[0] = nil
		*q = (*q)[1:]
		p.mu.Unlock()
		job()
		// The queue leaves the map before its last job counts as done, so
		// once wait returns no queue is busy; a job enqueued after the
		// delete starts a new queue, behind the finished ones.
		p.mu.Lock()
		last := len(*q) == 0
		if last {
			delete(p.queues, k)
		}
		p.mu.Unlock()
		p.wg.Done()
		if last {
			return
		}
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
