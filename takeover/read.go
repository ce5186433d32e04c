package takeover

import (
	"context"
	"fmt"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/intentlog"
)

// Log is where a departed instance recorded its intents: its bucket of the
// intent log, its writer id there, and an offset at or before its first
// entry still needed (the producer index's, §8.2).
type Log struct {
	Bucket fence.Bucket
	Schema *fluss.Schema
	Writer int64
	From   int64
}

// ReadFenced fences the instance's intent log and returns every intent it
// recorded from log.From on. Each of its data batches needs an intent
// first, so after the fence it can send no new one: these intents are all
// there will be.
func ReadFenced(ctx context.Context, c *fluss.Client, log Log) ([]intentlog.Intent, error) {
	f, err := fence.Fence(ctx, c, log.Bucket, log.Writer, 1, log.From) // one entry in flight
	if err != nil {
		return nil, fmt.Errorf("take over: fence the intent log: %w", err)
	}
	intents, err := intentlog.Read(ctx, c, log.Bucket, log.Schema, log.Writer, log.From, f.At)
	if err != nil {
		return nil, fmt.Errorf("take over: %w", err)
	}
	return intents, nil
}

// TakeOver decides what the log holds of pp's batches that the instance
// of log served: it reads the instance's intents behind a fence, fences
// each (writer, bucket) holding a part of them (inflight is the most
// batches the instance kept in flight per bucket), and decides. The
// caller then writes the missing rows under its own writer.
func TakeOver(ctx context.Context, c *fluss.Client, log Log, inflight int, pp intentlog.ProducerPartition) (map[intentlog.Batch]Outcome, error) {
	intents, err := ReadFenced(ctx, c, log)
	if err != nil {
		return nil, err
	}
	next := make(map[intentlog.Target]int32)
	for target, from := range Fences(intents, pp) {
		f, err := fence.Fence(ctx, c, target.Bucket, target.Writer, inflight, from)
		if err != nil {
			return nil, fmt.Errorf("take over producer %d %s/%d: %w", pp.ProducerID, pp.Topic, pp.Partition, err)
		}
		next[target] = f.Next
	}
	return Decide(intents, pp, next)
}
