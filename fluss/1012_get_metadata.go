package fluss

// GET_METADATA (1012), version 0.
//
// Asked of the coordinator when known, else of a bootstrap address or a
// known tablet server: both roles serve it, so metadata keeps working while
// the coordinator is down. An empty request returns the servers only;
// tables add their ids and bucket leaders; partition names or ids (of
// tables also listed) add per-partition bucket leaders and, from Fluss 1.0
// servers, per-partition bucket counts. An unknown table fails the whole
// request with TABLE_NOT_EXIST (7), an unknown partition with
// PARTITION_NOT_EXISTS (36). An empty tablet server list is treated as stale
// and does not replace the cached one.

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

func pbTablePath(p TablePath) *pb.PbTablePath {
	return &pb.PbTablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)}
}

// getMetadata sends one MetadataRequest and merges the answer into the cache.
func (c *Client) getMetadata(ctx context.Context, tables []TablePath, partitionNames []physicalName, partitionIDs []int64) error {
	req := &pb.MetadataRequest{PartitionsId: partitionIDs}
	for _, t := range tables {
		req.TablePath = append(req.TablePath, pbTablePath(t))
	}
	for _, p := range partitionNames {
		req.PartitionsPath = append(req.PartitionsPath, &pb.PbPhysicalTablePath{
			DatabaseName:  proto.String(p.path.Database),
			TableName:     proto.String(p.path.Table),
			PartitionName: proto.String(p.partition),
		})
	}
	var resp pb.MetadataResponse
	if err := c.callAnyServer(ctx, apiGetMetadata, req, &resp); err != nil {
		return fmt.Errorf("get_metadata: %w", err)
	}
	var departed []string
	c.update(func(s *clusterSnapshot) {
		was := s.servers
		mergeMetadata(s, &resp)
		if len(s.servers) == 0 {
			return
		}
		for _, n := range was {
			if !s.lists(n.Addr()) {
				departed = append(departed, n.Addr())
			}
		}
	})
	// A tablet server gone from the list has been declared dead: writes
	// waiting on the others for it as a follower are retried now rather
	// than at their timeout.
	for _, addr := range departed {
		c.abandonStuckWrites(addr)
	}
	return nil
}

// physicalName names a partition by table path and partition name.
type physicalName struct {
	path      TablePath
	partition string
}

func serverNode(n *pb.PbServerNode) ServerNode {
	return ServerNode{ID: n.GetNodeId(), Host: n.GetHost(), Port: int(n.GetPort()), Rack: n.GetRack()}
}

// descriptorBuckets reads the bucket count and the partition keys from the
// table JSON a metadata answer carries, tolerating anything else in it; a
// JSON it cannot read gives zero values.
func descriptorBuckets(js []byte) (buckets int32, partitioned bool) {
	var d struct {
		BucketCount  int32    `json:"bucket_count"`
		PartitionKey []string `json:"partition_key"`
	}
	if len(js) == 0 || json.Unmarshal(js, &d) != nil {
		return 0, false
	}
	return max(d.BucketCount, 0), len(d.PartitionKey) > 0
}

func mergeMetadata(s *clusterSnapshot, resp *pb.MetadataResponse) {
	if co := resp.GetCoordinatorServer(); co != nil {
		n := serverNode(co)
		s.coordinator = &n
	}
	if ts := resp.GetTabletServers(); len(ts) > 0 {
		s.servers = make(map[int32]ServerNode, len(ts))
		for _, n := range ts {
			s.servers[n.GetNodeId()] = serverNode(n)
		}
	}
	for _, tm := range resp.GetTableMetadata() {
		path := TablePath{Database: tm.GetTablePath().GetDatabaseName(), Table: tm.GetTablePath().GetTableName()}
		if old, ok := s.tables[path]; ok && old.id != tm.GetTableId() {
			// the table was dropped and re-created: forget the old one
			delete(s.tableByID, old.id)
			delete(s.infos, path)
		}
		descBuckets, partitioned := descriptorBuckets(tm.GetTableJson())
		s.tables[path] = tableMeta{
			path: path, id: tm.GetTableId(), schemaID: tm.GetSchemaId(),
			descBuckets: descBuckets, partitioned: partitioned,
			remoteDataDir: tm.GetRemoteDataDir(), bucketCountEpoch: tm.GetBucketCountEpoch(),
		}
		s.tableByID[tm.GetTableId()] = path
		if bm := tm.GetBucketMetadata(); len(bm) > 0 {
			k := physicalKey{tm.GetTableId(), NoPartition}
			s.leaders[k] = leadersOf(bm)
			s.epochs[k] = epochsOf(bm)
			s.bucketCounts[k] = int32(len(s.leaders[k]))
		}
	}
	for _, pm := range resp.GetPartitionMetadata() {
		k := physicalKey{pm.GetTableId(), pm.GetPartitionId()}
		s.partitions[partitionNameKey{pm.GetTableId(), pm.GetPartitionName()}] = pm.GetPartitionId()
		s.partNames[k] = pm.GetPartitionName()
		s.leaders[k] = leadersOf(pm.GetBucketMetadata())
		s.epochs[k] = epochsOf(pm.GetBucketMetadata())
		// Fluss 1.0 wire: per-partition bucket count; older servers list
		// every bucket of the partition, so their number is the count.
		switch n := pm.GetBucketCount(); {
		case n > 0 && n <= maxBuckets:
			s.bucketCounts[k] = n
		case len(s.leaders[k]) > 0:
			s.bucketCounts[k] = int32(len(s.leaders[k]))
		}
	}
}

// maxBuckets bounds bucket ids and counts taken from a server answer.
const maxBuckets = 1 << 16

// epochsOf returns the leader epoch per bucket id, -1 where not reported.
func epochsOf(bm []*pb.PbBucketMetadata) []int32 {
	var out []int32
	for _, b := range bm {
		id := int(b.GetBucketId())
		if id < 0 || id >= maxBuckets {
			continue
		}
		for len(out) <= id {
			out = append(out, -1)
		}
		if b.LeaderEpoch != nil {
			out[id] = b.GetLeaderEpoch()
		}
	}
	return out
}

// leadersOf returns the leader per bucket id, -1 where none is elected.
func leadersOf(bm []*pb.PbBucketMetadata) []int32 {
	n := 0
	for _, b := range bm {
		// bound the slice by what was sent, not by a hostile bucket id
		if id := int(b.GetBucketId()); id >= n && id < maxBuckets {
			n = id + 1
		}
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = -1
	}
	for _, b := range bm {
		id := int(b.GetBucketId())
		if id < 0 || id >= n {
			continue
		}
		if b.LeaderId != nil {
			out[id] = b.GetLeaderId()
		}
	}
	return out
}
