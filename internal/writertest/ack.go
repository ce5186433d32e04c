package writertest

import (
	"context"

	"github.com/fluss-kafka/gateway/fluss"
)

// AckTransport answers every write with success at once (a writer with
// no cluster behind it: benchmarks, tables the test only registers).
type AckTransport struct{}

func (AckTransport) ok(reqBuckets []fluss.BucketRecords) *fluss.PendingWrite {
	res := make([]fluss.BucketResult, len(reqBuckets))
	for i, b := range reqBuckets {
		res[i] = fluss.BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, Offset: 0}
	}
	return fluss.NewPendingWrite(func(context.Context) ([]fluss.BucketResult, error) { return res, nil })
}

func (t AckTransport) SendProduceLog(_ context.Context, _ int32, req *fluss.ProduceLogRequest) (*fluss.PendingWrite, error) {
	return t.ok(req.Buckets), nil
}

func (t AckTransport) SendPutKv(_ context.Context, _ int32, req *fluss.PutKvRequest) (*fluss.PendingWrite, error) {
	return t.ok(req.Buckets), nil
}

func (AckTransport) BucketLeader(context.Context, int64, int64, int32) (fluss.ServerNode, error) {
	return fluss.ServerNode{ID: 1, Host: "127.0.0.1", Port: 1}, nil
}

func (AckTransport) InvalidateTableMetadata(int64) {}

func (AckTransport) InvalidatePartitionMetadata(int64, int64) {}

func (AckTransport) InitWriter(context.Context, ...fluss.TablePath) (int64, error) { return 1, nil }
