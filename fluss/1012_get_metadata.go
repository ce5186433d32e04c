package fluss

// GET_METADATA (1012), version 0.
//
// Asked of the coordinator when known, else of a bootstrap address (both
// roles serve it). An empty request returns the servers only; tables add
// their ids and bucket leaders; partition names or ids (of tables also
// listed) add per-partition bucket leaders. An unknown table fails the whole
// request with TABLE_NOT_EXIST (7), an unknown partition with
// PARTITION_NOT_EXISTS (36). An empty tablet server list is treated as stale
// and does not replace the cached one.

import (
	"context"
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
	cn, err := c.metadataConn(ctx)
	if err != nil {
		return fmt.Errorf("get_metadata: %w", err)
	}
	var resp pb.MetadataResponse
	if err := cn.call(ctx, apiGetMetadata, req, &resp, 0); err != nil {
		return fmt.Errorf("get_metadata from %s: %w", cn.addr, err)
	}
	c.update(func(s *clusterSnapshot) { mergeMetadata(s, &resp) })
	return nil
}

// physicalName names a partition by table path and partition name.
type physicalName struct {
	path      TablePath
	partition string
}

func serverNode(n *pb.PbServerNode) ServerNode {
	return ServerNode{ID: n.GetNodeId(), Host: n.GetHost(), Port: int(n.GetPort())}
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
		s.tables[path] = tableMeta{path: path, id: tm.GetTableId(), schemaID: tm.GetSchemaId()}
		s.tableByID[tm.GetTableId()] = path
		if bm := tm.GetBucketMetadata(); len(bm) > 0 {
			s.leaders[physicalKey{tm.GetTableId(), NoPartition}] = leadersOf(bm)
		}
	}
	for _, pm := range resp.GetPartitionMetadata() {
		k := physicalKey{pm.GetTableId(), pm.GetPartitionId()}
		s.partitions[partitionNameKey{pm.GetTableId(), pm.GetPartitionName()}] = pm.GetPartitionId()
		s.partNames[k] = pm.GetPartitionName()
		s.leaders[k] = leadersOf(pm.GetBucketMetadata())
	}
}

// leadersOf returns the leader per bucket id, -1 where none is elected.
func leadersOf(bm []*pb.PbBucketMetadata) []int32 {
	n := 0
	for _, b := range bm {
		// bound the slice by what was sent, not by a hostile bucket id
		if id := int(b.GetBucketId()); id >= n && id < 1<<16 {
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
