package fluss

// CREATE_DATABASE (1001), version 0. Coordinator only.
//
// database_json (optional) is not sent: the database gets no comment and no
// custom properties.

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// CreateDatabase creates a database. With ignoreIfExists, an existing
// database is not an error; otherwise it is DATABASE_ALREADY_EXIST (6).
func (c *Client) CreateDatabase(ctx context.Context, name string, ignoreIfExists bool) error {
	req := &pb.CreateDatabaseRequest{
		DatabaseName:   proto.String(name),
		IgnoreIfExists: proto.Bool(ignoreIfExists),
	}
	return c.callCoordinator(ctx, "create_database "+name, apiCreateDatabase, req, &pb.CreateDatabaseResponse{})
}
