package intentlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/fluss"
)

// Schema is the intent log table's: one row per entry, the instance that
// wrote it (for operators reading the log) and its encoded intents.
func Schema() fluss.Schema {
	return fluss.Schema{Columns: []fluss.Column{
		{Name: "instance", Type: fluss.String()},
		{Name: "intents", Type: fluss.Bytes()},
	}}
}

// intentsColumn is the encoded intents' column in a row of Schema.
const intentsColumn = 1

// Descriptor is the intent log table's, with buckets buckets: entries
// are a few hundred bytes of varints, not worth a codec.
func Descriptor(buckets int) *fluss.TableDescriptor {
	return &fluss.TableDescriptor{
		Schema:      Schema(),
		Comment:     "kafka gateway: which records of which Kafka batches each merged Fluss batch holds (docs/exactly-once.md, design (D))",
		BucketCount: buckets,
		Properties:  map[string]string{fluss.PropArrowCompression: string(fluss.ArrowCompressionNone)},
	}
}

// ErrFenced says another instance fenced this log's writer: nothing more
// can be appended under it, and the instance must stop writing under its
// data writers too.
var ErrFenced = errors.New("intent log fenced")

// Writer appends one instance's entries to its bucket of the intent log,
// under the instance's own writer id, one entry at a time.
type Writer struct {
	c        *fluss.Client
	bucket   fence.Bucket
	schema   *fluss.Schema
	instance string
	writer   int64
	next     int32 // the next entry's sequence
}

// NewWriter returns a writer of a log that the writer id has never
// written (its first entry takes sequence 0).
func NewWriter(c *fluss.Client, bucket fence.Bucket, schema *fluss.Schema, instance string, writer int64) *Writer {
	return &Writer{c: c, bucket: bucket, schema: schema, instance: instance, writer: writer}
}

// Append writes one entry and returns its offset once Fluss acknowledged
// it. A refused sequence is ErrFenced: the writer's sequence moved on
// without this instance, which only a fence does. Any other failure leaves
// the entry's fate unknown, and its retry must use the same sequence, so
// the sequence moves on only with an acknowledgement.
func (w *Writer) Append(ctx context.Context, intents []Intent) (int64, error) {
	b, err := fluss.NewArrowLogBuilder(w.schema, int32(w.bucket.SchemaID), fluss.ArrowCompressionNone, 0)
	if err != nil {
		return -1, fmt.Errorf("intent log: %w", err)
	}
	row := fluss.Row{fluss.StringDatum(w.instance), fluss.BytesDatum(Encode(nil, intents))}
	if err := b.Append(row); err != nil {
		return -1, fmt.Errorf("intent log: %w", err)
	}
	batch, err := b.AppendTo(nil)
	if err != nil {
		return -1, fmt.Errorf("intent log: %w", err)
	}
	fluss.SetLogBatchWriter(batch, w.writer, w.next)
	leader, err := w.c.BucketLeader(ctx, w.bucket.TableID, w.bucket.PartitionID, w.bucket.Bucket)
	if err != nil {
		return -1, fmt.Errorf("intent log %s: leader: %w", w.bucket, err)
	}
	res, err := w.c.ProduceLog(ctx, leader.ID, &fluss.ProduceLogRequest{TableID: w.bucket.TableID, Acks: -1,
		Buckets: []fluss.BucketRecords{{PartitionID: w.bucket.PartitionID, Bucket: w.bucket.Bucket, Records: batch}}})
	if err == nil {
		err = res[0].Err
	}
	switch {
	case errors.Is(err, fluss.ErrOutOfOrderSequence):
		return -1, fmt.Errorf("%w: writer %d on %s at sequence %d: %w", ErrFenced, w.writer, w.bucket, w.next, err)
	case err != nil:
		return -1, fmt.Errorf("intent log %s: append entry %d: %w", w.bucket, w.next, err)
	}
	w.next++
	return res[0].Offset, nil
}

// Read returns the intents that writer's entries hold in b's log from
// offset from up to offset to (a fence's At: after the fence, no entry of
// the writer can land anywhere else), in log order. Entries of other
// writers sharing the bucket, and the fence's markers, are passed over.
func Read(ctx context.Context, c *fluss.Client, b fence.Bucket, schema *fluss.Schema, writer int64, from, to int64) ([]Intent, error) {
	var intents []Intent
	for at := from; at < to; {
		batches, err := c.FetchLogBatches(ctx, b.TableID, b.PartitionID, b.Bucket, at)
		if err != nil {
			return nil, fmt.Errorf("intent log %s: %w", b, err)
		}
		if len(batches) == 0 {
			return nil, fmt.Errorf("intent log %s: no batch at offset %d below %d", b, at, to)
		}
		for _, fb := range batches {
			h := fb.Header
			if h.BaseOffset >= to {
				return intents, nil
			}
			at = h.NextOffset()
			if h.WriterID != writer || h.Records == 0 {
				continue
			}
			records, err := fluss.DecodeLogBatches(fb.Batch, schema)
			if err != nil {
				return nil, fmt.Errorf("intent log %s: entry at offset %d: %w", b, h.BaseOffset, err)
			}
			for _, r := range records {
				in, err := Decode(r.Row[intentsColumn].B)
				if err != nil {
					return nil, fmt.Errorf("intent log %s: entry at offset %d: %w", b, r.Offset, err)
				}
				intents = append(intents, in...)
			}
		}
	}
	return intents, nil
}
