package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss"
)

// Window is how many of a writer's last batches a Fluss bucket keeps to
// answer copies of them as duplicates (WriterStateEntry's
// NUM_BATCHES_TO_RETAIN in 0.9.1).
const Window = 5

// maxAttempts bounds the fence's rounds of read and append: each round
// lost means the fenced writer appended in between, which a writer whose
// own batches are refused cannot keep doing.
const maxAttempts = 10

// Bucket is one bucket of a log table.
type Bucket struct {
	TableID     int64
	PartitionID int64 // fluss.NoPartition for a table without partitions
	Bucket      int32
	SchemaID    int16
}

func (b Bucket) String() string {
	if b.PartitionID == fluss.NoPartition {
		return fmt.Sprintf("table %d bucket %d", b.TableID, b.Bucket)
	}
	return fmt.Sprintf("table %d partition %d bucket %d", b.TableID, b.PartitionID, b.Bucket)
}

// Fenced is a fence's outcome on one bucket.
type Fenced struct {
	// Next is the first sequence of the writer not in the log: its batches
	// below Next are in the log, none from Next on ever will be.
	Next int32
	// At is the offset of the first marker.
	At int64
	// Appended is how many markers this call appended: 0 when a fence
	// already stood.
	Appended int
}

// errMoved says the writer appended between the fence's read and its
// append: read again.
var errMoved = errors.New("fence: the writer appended meanwhile")

// Fence fences writer on b. inflight is the most batches the writer may
// have in flight on a bucket; from is an offset at or before the start of
// the writer's last batch in the bucket (0 reads the whole log). A writer
// with no batch from there on is taken as one that never wrote to b, and
// fenced from sequence 0.
func Fence(ctx context.Context, c *fluss.Client, b Bucket, writer int64, inflight int, from int64) (Fenced, error) {
	markers := inflight + Window
	for attempt := 1; ; attempt++ {
		t, err := readTail(ctx, c, b, writer, from)
		if err != nil {
			return Fenced{}, fmt.Errorf("fence writer %d on %s: %w", writer, b, err)
		}
		if t.markers >= markers {
			return Fenced{Next: t.markerSeq, At: t.markerAt}, nil
		}
		f, err := mark(ctx, c, b, writer, t.last+1, markers)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, errMoved) || attempt == maxAttempts {
			return Fenced{}, fmt.Errorf("fence writer %d on %s (round %d): %w", writer, b, attempt, err)
		}
		if t.lastAt >= 0 {
			from = t.lastAt
		}
	}
}

// tail is what the log says of one writer from some offset on.
type tail struct {
	last   int32 // the writer's last sequence; -1 when it has no batch
	lastAt int64 // that batch's offset; -1 when none
	// markers counts the writer's trailing empty batches with consecutive
	// sequences from markerSeq, the first at markerAt.
	markers   int
	markerSeq int32
	markerAt  int64
}

// readTail reads b's log from from to its end as it is now.
func readTail(ctx context.Context, c *fluss.Client, b Bucket, writer int64, from int64) (tail, error) {
	t := tail{last: -1, lastAt: -1}
	ends, err := c.ListOffsets(ctx, b.TableID, b.PartitionID, []int32{b.Bucket}, fluss.LatestOffset)
	if err != nil {
		return t, fmt.Errorf("log end offset: %w", err)
	}
	end := ends[b.Bucket]
	for at := from; at < end; {
		hs, err := fetchHeaders(ctx, c, b, at)
		if err != nil {
			return t, err
		}
		if len(hs) == 0 {
			return t, fmt.Errorf("no batch at offset %d below the end %d", at, end)
		}
		for _, h := range hs {
			at = h.NextOffset()
			if h.WriterID != writer {
				continue
			}
			switch {
			case h.Records != 0:
				t.markers = 0
			case t.markers > 0 && h.Sequence == t.last+1:
				t.markers++
			default:
				t.markers, t.markerSeq, t.markerAt = 1, h.Sequence, h.BaseOffset
			}
			t.last, t.lastAt = h.Sequence, h.BaseOffset
		}
	}
	return t, nil
}

// fetchHeaders reads the headers of the batches of b from the one holding
// offset at.
func fetchHeaders(ctx context.Context, c *fluss.Client, b Bucket, at int64) ([]fluss.LogBatchHeader, error) {
	batches, err := c.FetchLogBatches(ctx, b.TableID, b.PartitionID, b.Bucket, at)
	if err != nil {
		return nil, err
	}
	hs := make([]fluss.LogBatchHeader, len(batches))
	for i, fb := range batches {
		hs[i] = fb.Header
	}
	return hs, nil
}

// mark appends n markers of writer from sequence seq in one records entry
// and reads them back: Fluss answers an entry whose first batch copies one
// of the writer's last five as that batch's duplicate, so only markers
// found at the answered offsets make the fence.
func mark(ctx context.Context, c *fluss.Client, b Bucket, writer int64, seq int32, n int) (Fenced, error) {
	var records []byte
	for i := range n {
		records = fluss.AppendEmptyLogBatch(records, b.SchemaID, writer, seq+int32(i))
	}
	leader, err := c.BucketLeader(ctx, b.TableID, b.PartitionID, b.Bucket)
	if err != nil {
		return Fenced{}, fmt.Errorf("leader: %w", err)
	}
	res, err := c.ProduceLog(ctx, leader.ID, &fluss.ProduceLogRequest{TableID: b.TableID, Acks: -1,
		Buckets: []fluss.BucketRecords{{PartitionID: b.PartitionID, Bucket: b.Bucket, Records: records}}})
	if err != nil {
		return Fenced{}, fmt.Errorf("append markers: %w", err)
	}
	if err := res[0].Err; err != nil {
		if errors.Is(err, fluss.ErrOutOfOrderSequence) {
			return Fenced{}, fmt.Errorf("%w (markers from sequence %d: %w)", errMoved, seq, err)
		}
		return Fenced{}, fmt.Errorf("append markers: %w", err)
	}
	at := res[0].Offset
	hs, err := fetchHeaders(ctx, c, b, at)
	if err != nil {
		return Fenced{}, fmt.Errorf("read the markers back: %w", err)
	}
	found := 0
	for _, h := range hs {
		if h.BaseOffset < at {
			continue
		}
		if h.BaseOffset != at+int64(found) || h.WriterID != writer || h.Records != 0 || h.Sequence != seq+int32(found) {
			break
		}
		if found++; found == n {
			return Fenced{Next: seq, At: at, Appended: n}, nil
		}
	}
	return Fenced{}, fmt.Errorf("%w (answered at offset %d, where %d of the %d markers are)", errMoved, at, found, n)
}
