package flussfake

// Partitions, Fluss 1.0 behaviour and the hooks that go with them.

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// WithVersion10 makes the cluster speak Fluss 1.0.0 instead of
// 0.9.1-incubating: it advertises PRODUCE_LOG 0–1, PUT_KV 0–3 and LOOKUP 0–1
// (0.9.1: 0, 0–1, 0–1), reports per-partition bucket counts in metadata and
// partition listings, rack, remote_data_dir and bucket_count_epoch, checks
// routing_bucket_count where a write or lookup carries one (a mismatch is
// INVALID_BUCKET_ROUTING, 74) and answers PUT_KV v2+ with the pressure set
// by SetPressure.
func WithVersion10() Opt { return func(o *options) { o.v10 = true } }

// Write is one bucket item of a ProduceLog, PutKv or Lookup request as the
// fake received it, with its answer.
type Write struct {
	// Server is the tablet server that received it.
	Server int32
	// APIKey is ProduceLog, PutKv or Lookup; Version the request header's
	// API version.
	APIKey  int16
	Version int16
	TableID int64
	// PartitionID is fluss.NoPartition when the item named none.
	PartitionID int64
	Bucket      int32
	// HasRoutingBucketCount tells whether routing_bucket_count was set,
	// RoutingBucketCount its value.
	HasRoutingBucketCount bool
	RoutingBucketCount    int32
	// PartitionName is original_partition_name ("" when not set).
	PartitionName string
	// ErrCode is the error answered for this bucket; 0 = stored (or, for a
	// lookup, looked up).
	ErrCode int32
}

// Writes returns every bucket item received so far, in arrival order.
func (c *Cluster) Writes() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes)
}

// AddPartition creates a partition of a partitioned table with its own
// bucket count (0: the table's current count, see Rescale); bucket b is led
// by tablet server b mod N. It returns the partition id.
func (c *Cluster) AddPartition(tableID int64, spec fluss.PartitionSpec, buckets int32) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[tableID]
	if t == nil {
		return 0, fmt.Errorf("flussfake: no table %d", tableID)
	}
	p, err := c.addPartition(t, spec, buckets)
	if err != nil {
		return 0, err
	}
	return p.id, nil
}

// addPartition creates a partition; c.mu is held.
func (c *Cluster) addPartition(t *table, spec fluss.PartitionSpec, buckets int32) (*partition, error) {
	if !t.desc.IsPartitioned() {
		return nil, fmt.Errorf("flussfake: table %s is not partitioned", t.path)
	}
	name := spec.Name()
	if t.partByName[name] != nil {
		return nil, fmt.Errorf("flussfake: partition %q of %s exists", name, t.path)
	}
	if buckets <= 0 {
		buckets = int32(t.desc.BucketCount)
	}
	p := &partition{id: c.nextPart, name: name, spec: spec, leaders: c.spread(buckets)}
	c.nextPart++
	t.parts[p.id] = p
	t.partByName[name] = p
	return p, nil
}

// Rescale is ALTER TABLE SET ('bucket.num' = n) of Fluss 1.0: partitions
// created from now on get n buckets, existing ones keep theirs, and the
// table turns strict (see StrictRouting). The descriptor GetTableInfo
// returns says n.
func (c *Cluster) Rescale(tableID int64, n int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[tableID]
	if t == nil {
		return fmt.Errorf("flussfake: no table %d", tableID)
	}
	if !t.desc.IsPartitioned() {
		return fmt.Errorf("flussfake: table %s is not partitioned", t.path)
	}
	d := t.desc
	d.BucketCount = int(n)
	js, err := fluss.AppendTableJSON(nil, &d)
	if err != nil {
		return fmt.Errorf("flussfake: table json: %w", err)
	}
	t.desc, t.json = d, js
	t.strict = true
	t.bucketEpoch++
	return nil
}

// StrictRouting turns the rescale check on or off for a table: while on, a
// write or lookup of the table without routing_bucket_count answers
// INVALID_BUCKET_ROUTING (74) for that bucket, and nothing is stored. (A
// count that is present and wrong is refused in 1.0 mode regardless.)
func (c *Cluster) StrictRouting(tableID int64, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables[tableID].strict = on
}

// SetPressure sets the pressure PUT_KV answers (v2 and later) report for a
// bucket; 0 removes it. To answer STORAGE_BACKPRESSURE_EXCEPTION (72) use
// FailBucket: a request below v2 gets KV_STORAGE_EXCEPTION (11) instead, as
// from a real server.
func (c *Cluster) SetPressure(tableID, partitionID int64, bucket int32, p float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := bucketKey{tableID, partitionID, bucket}
	if p == 0 {
		delete(c.pressure, k)
		return
	}
	c.pressure[k] = p
}

// StopServer stops one server (a tablet server id or CoordinatorID): its
// listener and connections close, so dialling it is refused from now on.
func (c *Cluster) StopServer(id int32) {
	s := c.coord
	if id != CoordinatorID {
		s = c.tablets[id]
	}
	s.mu.Lock()
	s.stopped = true
	_ = s.ln.Close()
	for cn := range s.open {
		_ = cn.Close()
	}
	s.mu.Unlock()
}

func (c *Cluster) tableByPB(p *pb.PbTablePath) *table {
	return c.byPath[fluss.TablePath{Database: p.GetDatabaseName(), Table: p.GetTableName()}]
}

func (c *Cluster) listPartitions(m *pb.ListPartitionInfosRequest) Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tableByPB(m.GetTablePath())
	switch {
	case t == nil:
		return Response{ErrCode: 7, ErrMsg: "table does not exist"}
	case !t.desc.IsPartitioned():
		return Response{ErrCode: 37, ErrMsg: "table is not partitioned"}
	}
	resp := &pb.ListPartitionInfosResponse{}
	for _, id := range slices.Sorted(maps.Keys(t.parts)) {
		p := t.parts[id]
		spec := &pb.PbPartitionSpec{}
		for _, v := range p.spec {
			spec.PartitionKeyValues = append(spec.PartitionKeyValues, &pb.PbKeyValue{Key: proto.String(v.Key), Value: proto.String(v.Value)})
		}
		pi := &pb.PbPartitionInfo{PartitionId: proto.Int64(p.id), PartitionSpec: spec}
		if c.o.v10 {
			pi.BucketCount = proto.Int32(int32(len(p.leaders)))
			pi.RemoteDataDir = proto.String(fmt.Sprintf("/remote/%s/%s/%s", t.path.Database, t.path.Table, p.name))
		}
		resp.PartitionsInfo = append(resp.PartitionsInfo, pi)
	}
	return Response{Msg: resp}
}

func (c *Cluster) createPartition(m *pb.CreatePartitionRequest) Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tableByPB(m.GetTablePath())
	if t == nil {
		return Response{ErrCode: 7, ErrMsg: "table does not exist"}
	}
	if !t.desc.IsPartitioned() {
		return Response{ErrCode: 37, ErrMsg: "table is not partitioned"}
	}
	var spec fluss.PartitionSpec
	for _, kv := range m.GetPartitionSpec().GetPartitionKeyValues() {
		spec = append(spec, fluss.PartitionValue{Key: kv.GetKey(), Value: kv.GetValue()})
	}
	if t.partByName[spec.Name()] != nil {
		// field 3 means "ignore if exists", whatever its name says
		if m.GetIgnoreIfNotExists() {
			return Response{Msg: &pb.CreatePartitionResponse{}}
		}
		return Response{ErrCode: 42, ErrMsg: "partition " + spec.Name() + " already exists"}
	}
	if _, err := c.addPartition(t, spec, 0); err != nil {
		return Response{ErrCode: 43, ErrMsg: err.Error()}
	}
	return Response{Msg: &pb.CreatePartitionResponse{}}
}

// lookup answers every key as not found (the fake keeps no values), after
// the same routing checks as writes; each bucket item is recorded.
func (c *Cluster) lookup(server int32, version int16, m *pb.LookupRequest) Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[m.GetTableId()]
	resp := &pb.LookupResponse{}
	for _, b := range m.GetBucketsReq() {
		pid := fluss.NoPartition
		if b.PartitionId != nil {
			pid = b.GetPartitionId()
		}
		r := &pb.PbLookupRespForBucket{PartitionId: b.PartitionId, BucketId: proto.Int32(b.GetBucketId())}
		code, msg := int32(21), "unknown table or bucket"
		if t != nil {
			code, msg = c.route(server, t, pid, bucketWrite{bucket: b.GetBucketId(), routing: b.RoutingBucketCount})
		}
		if code != 0 {
			r.ErrorCode, r.ErrorMessage = proto.Int32(code), proto.String(msg)
		} else {
			for range b.GetKeys() {
				r.Values = append(r.Values, &pb.PbValue{})
			}
		}
		c.writes = append(c.writes, Write{
			Server: server, APIKey: Lookup, Version: version, TableID: m.GetTableId(), PartitionID: pid,
			Bucket: b.GetBucketId(), HasRoutingBucketCount: b.RoutingBucketCount != nil,
			RoutingBucketCount: b.GetRoutingBucketCount(), PartitionName: b.GetOriginalPartitionName(), ErrCode: code,
		})
		resp.BucketsResp = append(resp.BucketsResp, r)
	}
	return Response{Msg: resp}
}
