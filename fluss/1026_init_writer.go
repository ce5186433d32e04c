package fluss

// INIT_WRITER (1026), version 0. Any tablet server.
//
// Returns a cluster-wide writer id (allocated through ZooKeeper) for
// idempotent writes. With an authorizer the server requires WRITE on one of
// the listed tables.

import (
	"context"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// InitWriter obtains a new writer id for writing to the given tables.
func (c *Client) InitWriter(ctx context.Context, tables ...TablePath) (int64, error) {
	cn, id, err := c.anyTabletServerConn(ctx)
	if err != nil {
		return 0, fmt.Errorf("init_writer: %w", err)
	}
	req := &pb.InitWriterRequest{}
	for _, t := range tables {
		req.TablePath = append(req.TablePath, pbTablePath(t))
	}
	var resp pb.InitWriterResponse
	if err := cn.call(ctx, apiInitWriter, req, &resp, 0); err != nil {
		return 0, fmt.Errorf("init_writer on tablet server %d: %w", id, err)
	}
	return resp.GetWriterId(), nil
}
