package fluss

// DROP_DATABASE (1002), version 0. Coordinator only.

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// DropDatabase drops a database; cascade drops its tables too, otherwise a
// non-empty database is DATABASE_NOT_EMPTY (5).
func (c *Client) DropDatabase(ctx context.Context, name string, ignoreIfNotExists, cascade bool) error {
	req := &pb.DropDatabaseRequest{
		DatabaseName:      proto.String(name),
		IgnoreIfNotExists: proto.Bool(ignoreIfNotExists),
		Cascade:           proto.Bool(cascade),
	}
	if err := c.callCoordinator(ctx, "drop_database "+name, apiDropDatabase, req, &pb.DropDatabaseResponse{}); err != nil {
		return err
	}
	c.update(func(s *clusterSnapshot) {
		for p := range s.infos {
			if p.Database == name {
				delete(s.infos, p)
			}
		}
	})
	return nil
}
