package fluss

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/fluss-kafka/gateway/backoff"
)

// NoPartition is the partition id of a table that is not partitioned.
const NoPartition int64 = -1

// ServerNode is a Fluss server as metadata describes it.
type ServerNode struct {
	ID   int32
	Host string
	Port int
	// Rack is the server's rack as metadata reports it (empty when none).
	Rack string
}

// Addr returns host:port.
func (n ServerNode) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// physicalKey names the buckets of a table or of one of its partitions.
type physicalKey struct {
	tableID     int64
	partitionID int64
}

type partitionNameKey struct {
	tableID int64
	name    string
}

// tableMeta is what GET_METADATA says about a table.
type tableMeta struct {
	path     TablePath
	id       int64
	schemaID int32
	// descBuckets and partitioned come from the descriptor JSON the
	// metadata answer carries (0 / false when it could not be read);
	// descBuckets is the count new partitions get.
	descBuckets int32
	partitioned bool
	// remoteDataDir and bucketCountEpoch are reported by newer servers only.
	remoteDataDir    string
	bucketCountEpoch int64
}

// clusterSnapshot is an immutable view of cluster metadata. Writers copy it,
// change the copy and publish it with Client.meta.Store under metaMu.
type clusterSnapshot struct {
	coordinator *ServerNode
	servers     map[int32]ServerNode // tablet servers
	tables      map[TablePath]tableMeta
	tableByID   map[int64]TablePath
	infos       map[TablePath]*TableInfo // GetTableInfo cache
	partitions  map[partitionNameKey]int64
	partNames   map[physicalKey]string
	leaders     map[physicalKey][]int32 // leader per bucket; -1 = none elected
	epochs      map[physicalKey][]int32 // leader epoch per bucket; -1 = not reported
	// bucketCounts is the bucket count of a non-partitioned table or of a
	// partition, as metadata (or ListPartitions) reported it. Fixed when the
	// table or partition is created (Fluss 1.0 wire: per-partition bucket
	// count), so it is kept until the table's or partition's metadata is
	// invalidated.
	bucketCounts map[physicalKey]int32
}

func emptySnapshot() *clusterSnapshot {
	return &clusterSnapshot{
		servers:    map[int32]ServerNode{},
		tables:     map[TablePath]tableMeta{},
		tableByID:  map[int64]TablePath{},
		infos:      map[TablePath]*TableInfo{},
		partitions: map[partitionNameKey]int64{},
		partNames:  map[physicalKey]string{},
		leaders:    map[physicalKey][]int32{},
		epochs:     map[physicalKey][]int32{},

		bucketCounts: map[physicalKey]int32{},
	}
}

func (s *clusterSnapshot) clone() *clusterSnapshot {
	return &clusterSnapshot{
		coordinator: s.coordinator,
		servers:     maps.Clone(s.servers),
		tables:      maps.Clone(s.tables),
		tableByID:   maps.Clone(s.tableByID),
		infos:       maps.Clone(s.infos),
		partitions:  maps.Clone(s.partitions),
		partNames:   maps.Clone(s.partNames),
		leaders:     maps.Clone(s.leaders),
		epochs:      maps.Clone(s.epochs),

		bucketCounts: maps.Clone(s.bucketCounts),
	}
}

// lists reports whether addr is one of the tablet servers.
func (s *clusterSnapshot) lists(addr string) bool {
	for _, n := range s.servers {
		if n.Addr() == addr {
			return true
		}
	}
	return false
}

// serverIDs returns the tablet server ids in ascending order.
func (s *clusterSnapshot) serverIDs() []int32 {
	return slices.Sorted(maps.Keys(s.servers))
}

// leader returns the leader of a bucket, if known and alive in metadata.
func (s *clusterSnapshot) leader(k physicalKey, bucket int32) (ServerNode, bool) {
	ls := s.leaders[k]
	if bucket < 0 || int(bucket) >= len(ls) || ls[bucket] < 0 {
		return ServerNode{}, false
	}
	n, ok := s.servers[ls[bucket]]
	return n, ok
}

// update applies fn to a copy of the current snapshot and publishes it.
func (c *Client) update(fn func(s *clusterSnapshot)) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	s := c.meta.Load().clone()
	fn(s)
	c.meta.Store(s)
}

// Coordinator returns the coordinator as last seen in metadata, refreshing
// metadata when none is known.
func (c *Client) Coordinator(ctx context.Context) (ServerNode, error) {
	if co := c.meta.Load().coordinator; co != nil {
		return *co, nil
	}
	if err := c.refreshCluster(ctx); err != nil {
		return ServerNode{}, err
	}
	if co := c.meta.Load().coordinator; co != nil {
		return *co, nil
	}
	return ServerNode{}, errors.New("fluss: metadata names no coordinator")
}

// TabletServers returns the tablet servers as last seen in metadata,
// refreshing metadata when none is known.
func (c *Client) TabletServers(ctx context.Context) ([]ServerNode, error) {
	snap := c.meta.Load()
	if len(snap.servers) == 0 {
		if err := c.refreshCluster(ctx); err != nil {
			return nil, err
		}
		snap = c.meta.Load()
	}
	out := make([]ServerNode, 0, len(snap.servers))
	for _, id := range snap.serverIDs() {
		out = append(out, snap.servers[id])
	}
	return out, nil
}

// RefreshMetadata fetches servers and, for each given table, its id and
// bucket leaders. An unknown table fails the whole call with
// TABLE_NOT_EXIST, as the server does.
func (c *Client) RefreshMetadata(ctx context.Context, tables ...TablePath) error {
	return c.getMetadata(ctx, tables, nil, nil)
}

// refreshCluster fetches only the servers.
func (c *Client) refreshCluster(ctx context.Context) error {
	return c.getMetadata(ctx, nil, nil, nil)
}

// TableInfo returns the table's info from the cache, calling GetTableInfo on
// a miss. The cache entry is dropped by InvalidateTableInfo and DropTable.
func (c *Client) TableInfo(ctx context.Context, path TablePath) (*TableInfo, error) {
	if info, ok := c.meta.Load().infos[path]; ok {
		return info, nil
	}
	info, err := c.GetTableInfo(ctx, path)
	if err != nil {
		return nil, err
	}
	c.update(func(s *clusterSnapshot) {
		s.infos[path] = info
		s.tableByID[info.TableID] = path
	})
	return info, nil
}

// InvalidateTableInfo drops the cached TableInfo of path, so the next
// TableInfo call asks the server (after a schema change or a re-create).
func (c *Client) InvalidateTableInfo(path TablePath) {
	c.update(func(s *clusterSnapshot) { delete(s.infos, path) })
}

// InvalidateTableMetadata forgets the bucket leaders and bucket counts of a
// table and of all its partitions; the next BucketLeader or BucketCount
// call refreshes them. Call it after a metadata-class error
// (NeedsMetadataRefresh).
func (c *Client) InvalidateTableMetadata(tableID int64) {
	c.update(func(s *clusterSnapshot) {
		for _, m := range []map[physicalKey][]int32{s.leaders, s.epochs} {
			maps.DeleteFunc(m, func(k physicalKey, _ []int32) bool { return k.tableID == tableID })
		}
		maps.DeleteFunc(s.bucketCounts, func(k physicalKey, _ int32) bool { return k.tableID == tableID })
	})
}

// InvalidatePartitionMetadata forgets the bucket leaders and the bucket
// count of one partition (NoPartition: of a non-partitioned table), leaving
// the table's other partitions cached. Call it after
// INVALID_BUCKET_ROUTING (74) for that partition, before re-bucketing.
func (c *Client) InvalidatePartitionMetadata(tableID, partitionID int64) {
	k := physicalKey{tableID, partitionID}
	c.update(func(s *clusterSnapshot) {
		delete(s.leaders, k)
		delete(s.epochs, k)
		delete(s.bucketCounts, k)
	})
}

// BucketCount returns the bucket count of a partition of a table
// (NoPartition: of the table itself; for a partitioned table that is the
// descriptor's count, which partitions created from now on get, as of the
// last metadata answer or TableInfo). In Fluss 1.0 partitions of one
// table may differ (ALTER TABLE SET ('bucket.num' = N) applies to
// partitions created afterwards only), and a write must be bucketed with
// its partition's count. The count is, in this order: the partition's
// bucket_count in 1.0 metadata, else the number of buckets its metadata
// lists, else the table descriptor's bucket count. It is cached (a
// partition's count never changes) until InvalidateTableMetadata or
// InvalidatePartitionMetadata; a miss costs one metadata round trip, shared
// with concurrent BucketLeader and BucketCount callers. The table must be
// known to the client, as for BucketLeader.
func (c *Client) BucketCount(ctx context.Context, tableID, partitionID int64) (int32, error) {
	if n, ok := c.meta.Load().bucketCount(tableID, partitionID, false); ok {
		return n, nil
	}
	if err := c.refreshTableBuckets(ctx, tableID, partitionID); err != nil {
		return 0, fmt.Errorf("bucket count of table %d partition %d: %w", tableID, partitionID, err)
	}
	if n, ok := c.meta.Load().bucketCount(tableID, partitionID, true); ok {
		return n, nil
	}
	return 0, fmt.Errorf("bucket count of table %d partition %d: metadata reports none", tableID, partitionID)
}

// bucketCount looks a bucket count up in the snapshot. A partition falls
// back to the table descriptor's count only when fallback is set (after a
// metadata refresh that did not report the partition's own count).
func (s *clusterSnapshot) bucketCount(tableID, partitionID int64, fallback bool) (int32, bool) {
	k := physicalKey{tableID, partitionID}
	if n, ok := s.bucketCounts[k]; ok && n > 0 {
		return n, true
	}
	if partitionID != NoPartition && !fallback {
		return 0, false
	}
	path, ok := s.tableByID[tableID]
	if !ok {
		return 0, false
	}
	info := s.infos[path]
	if info != nil && info.TableID != tableID {
		info = nil // a re-created table's
	}
	partitioned := s.tables[path].partitioned || (info != nil && info.Descriptor.IsPartitioned())
	if partitionID == NoPartition && !fallback && !partitioned {
		// a non-partitioned table's count comes from its bucket metadata
		return 0, false
	}
	// the descriptor JSON of the last metadata answer is fresher than a
	// cached TableInfo
	if n := s.tables[path].descBuckets; n > 0 && s.tables[path].id == tableID {
		return n, true
	}
	if info != nil && info.Descriptor.BucketCount > 0 {
		return int32(info.Descriptor.BucketCount), true
	}
	return 0, false
}

// LeaderEpoch returns a bucket's leader epoch as last reported by metadata,
// from the cache only; false when unknown or not reported.
func (c *Client) LeaderEpoch(tableID, partitionID int64, bucket int32) (int32, bool) {
	es := c.meta.Load().epochs[physicalKey{tableID, partitionID}]
	if bucket < 0 || int(bucket) >= len(es) || es[bucket] < 0 {
		return 0, false
	}
	return es[bucket], true
}

// BucketLeader returns the tablet server leading a bucket of a table (or of
// one partition; NoPartition for a non-partitioned table). The table must be
// known to the client (TableInfo or RefreshMetadata was called for it). When
// the leader is not cached, metadata is refreshed once; if still no leader
// is elected the error wraps ErrNoLeader (retriable).
func (c *Client) BucketLeader(ctx context.Context, tableID, partitionID int64, bucket int32) (ServerNode, error) {
	k := physicalKey{tableID, partitionID}
	if n, ok := c.meta.Load().leader(k, bucket); ok {
		return n, nil
	}
	if err := c.refreshTableBuckets(ctx, tableID, partitionID); err != nil {
		return ServerNode{}, err
	}
	if n, ok := c.meta.Load().leader(k, bucket); ok {
		return n, nil
	}
	return ServerNode{}, fmt.Errorf("table %d partition %d bucket %d: %w", tableID, partitionID, bucket, ErrNoLeader)
}

// refreshTableBuckets refreshes the leaders of a table or of one partition.
// Concurrent callers for the same table or partition share one request
// (after a leader change every bucket's writer asks at once); the shared
// request runs on its own goroutine, is not cancelled by any one caller,
// and is bounded by the dial and request timeouts. Every caller, the one
// that started it included, stops waiting when its ctx ends.
func (c *Client) refreshTableBuckets(ctx context.Context, tableID, partitionID int64) error {
	path, ok := c.meta.Load().tableByID[tableID]
	if !ok {
		return fmt.Errorf("fluss: table id %d is unknown to this client; call TableInfo or RefreshMetadata for it first", tableID)
	}
	k := physicalKey{tableID, partitionID}
	c.refreshMu.Lock()
	call, running := c.refreshing[k]
	if !running {
		call = &refreshCall{done: make(chan struct{})}
		c.refreshing[k] = call
	}
	c.refreshMu.Unlock()
	if !running {
		var ids []int64
		if partitionID != NoPartition {
			ids = []int64{partitionID}
		}
		go func() {
			call.err = c.getMetadata(context.WithoutCancel(ctx), []TablePath{path}, nil, ids)
			c.refreshMu.Lock()
			delete(c.refreshing, k)
			c.refreshMu.Unlock()
			close(call.done)
		}()
	}
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refreshCall is one metadata refresh shared by concurrent callers; err is
// set before done is closed.
type refreshCall struct {
	done chan struct{}
	err  error
}

// WaitForTabletServers blocks until metadata lists at least n tablet
// servers, polling with back-off, or until ctx ends.
func (c *Client) WaitForTabletServers(ctx context.Context, n int) error {
	return c.poll(ctx, func() (bool, error) {
		if err := c.refreshCluster(ctx); err != nil {
			return false, err
		}
		return len(c.meta.Load().servers) >= n, nil
	})
}

// WaitForTableLeaders blocks until every bucket of the table (or of the
// given partitions, for a partitioned table) has an elected leader that
// metadata lists and that answers as leader (LIST_OFFSETS and a client
// FETCH_LOG at the log end succeed),
// polling with back-off, or until ctx ends.
func (c *Client) WaitForTableLeaders(ctx context.Context, path TablePath, partitionIDs ...int64) error {
	info, err := c.TableInfo(ctx, path)
	if err != nil {
		return err
	}
	if info.Descriptor.IsPartitioned() && len(partitionIDs) == 0 {
		return fmt.Errorf("wait for leaders of %s: a partitioned table's buckets belong to partitions; name them", path)
	}
	keys := []physicalKey{{info.TableID, NoPartition}}
	if len(partitionIDs) > 0 {
		keys = keys[:0]
		for _, id := range partitionIDs {
			keys = append(keys, physicalKey{info.TableID, id})
		}
	}
	return c.poll(ctx, func() (bool, error) {
		var ids []int64
		if len(partitionIDs) > 0 {
			ids = partitionIDs
		}
		if err := c.getMetadata(ctx, []TablePath{path}, nil, ids); err != nil {
			return false, err
		}
		snap := c.meta.Load()
		// Fluss 1.0: partitions of one table may differ in bucket count
		counts := make([]int32, len(keys))
		for i, k := range keys {
			n, ok := snap.bucketCount(k.tableID, k.partitionID, true)
			if !ok {
				n = int32(info.Descriptor.BucketCount)
			}
			counts[i] = n
			for b := range n {
				if _, ok := snap.leader(k, b); !ok {
					return false, fmt.Errorf("bucket %d: %w", b, ErrNoLeader)
				}
			}
		}
		// Metadata names a leader before that tablet server has taken the
		// role: it answers UNKNOWN_TABLE_OR_BUCKET until the replica exists
		// and NOT_LEADER_OR_FOLLOWER until it leads. LIST_OFFSETS needs only
		// the replica; a client FETCH_LOG (at the end, so nothing is read)
		// needs leadership, as writes do.
		for i, k := range keys {
			buckets := make([]int32, counts[i])
			for b := range buckets {
				buckets[b] = int32(b)
			}
			ready, err := c.bucketsLead(ctx, k, buckets)
			if err != nil || !ready {
				return false, err
			}
		}
		return true, nil
	})
}

// bucketsLead reports whether every bucket's leader serves as leader. A
// retriable failure means "not yet": it is returned so that poll retries
// and reports the last one if the wait times out.
func (c *Client) bucketsLead(ctx context.Context, k physicalKey, buckets []int32) (bool, error) {
	offs, err := c.ListOffsets(ctx, k.tableID, k.partitionID, buckets, LatestOffset)
	if err != nil {
		return false, err
	}
	req := &FetchLogRequest{TableID: k.tableID}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, FetchBucket{PartitionID: k.partitionID, Bucket: b, Offset: offs[b], MaxBytes: 1})
	}
	fetched, err := c.FetchLog(ctx, req)
	if err != nil {
		return false, err
	}
	for _, f := range fetched {
		if f.Err != nil {
			return false, fmt.Errorf("fetch bucket %d: %w", f.Bucket, f.Err)
		}
	}
	return true, nil
}

// poll calls check until it reports done, with exponential back-off from
// 50 ms to 1 s. Retriable errors are retried; others end the wait.
func (c *Client) poll(ctx context.Context, check func() (bool, error)) error {
	wait := backoff.Policy{Initial: 50 * time.Millisecond, Max: time.Second}.Sequence()
	var lastErr error
	for {
		done, err := check()
		if err == nil && done {
			return nil
		}
		if err != nil {
			if !IsRetriable(err) {
				return err
			}
			lastErr = err
		}
		if !backoff.Sleep(ctx, wait.Next()) {
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		}
	}
}
