package fluss

// DROP_TABLE (1006), version 0. Coordinator only.

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// DropTable drops a table and forgets what the client cached about it.
func (c *Client) DropTable(ctx context.Context, path TablePath, ignoreIfNotExists bool) error {
	req := &pb.DropTableRequest{TablePath: pbTablePath(path), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists)}
	if err := c.callCoordinator(ctx, "drop_table "+path.String(), apiDropTable, req, &pb.DropTableResponse{}); err != nil {
		return err
	}
	c.update(func(s *clusterSnapshot) {
		delete(s.infos, path)
		if tm, ok := s.tables[path]; ok {
			delete(s.tables, path)
			delete(s.tableByID, tm.id)
			for k := range s.leaders {
				if k.tableID == tm.id {
					delete(s.leaders, k)
				}
			}
		}
	})
	return nil
}
