package takeover

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/intentlog"
)

// Outcome is what the log holds of one Kafka batch: the runs of its
// records written, in order and merged, whichever buckets they are in.
type Outcome struct {
	Written []intentlog.Range
}

// Missing returns the runs of the batch's records that are not written,
// given that it has total records.
func (o Outcome) Missing(total int32) []intentlog.Range {
	var missing []intentlog.Range
	next := int32(0)
	for _, r := range o.Written {
		if r.First > next && next < total {
			missing = append(missing, intentlog.Range{First: next, Count: min(r.First, total) - next})
		}
		next = max(next, r.End())
	}
	if next < total {
		missing = append(missing, intentlog.Range{First: next, Count: total - next})
	}
	return missing
}

// Check says whether the batch as retried, total records, agrees with what
// the log holds of it: records written past its end mean the retry is not
// the batch the intents name (a producer reusing a sequence for other
// records, which Kafka's own rules refuse), and it cannot be completed.
func (o Outcome) Check(total int32) error {
	if n := len(o.Written); n > 0 && o.Written[n-1].End() > total {
		return fmt.Errorf("takeover: the log holds record %d of the batch, which has %d", o.Written[n-1].End()-1, total)
	}
	return nil
}

// Fences returns the targets holding parts of pp's batches, each with the
// lowest From of its intents: what to fence, and where to read from.
func Fences(intents []intentlog.Intent, pp intentlog.ProducerPartition) map[intentlog.Target]int64 {
	from := make(map[intentlog.Target]int64)
	for _, in := range intents {
		if !holds(in, pp) {
			continue
		}
		if at, ok := from[in.Target]; !ok || in.From < at {
			from[in.Target] = in.From
		}
	}
	return from
}

func holds(in intentlog.Intent, pp intentlog.ProducerPartition) bool {
	for _, p := range in.Parts {
		if p.Batch.ProducerPartition == pp {
			return true
		}
	}
	return false
}

// Decide says, for each of pp's batches named in intents, which of its
// records are in the log. next maps each target of Fences to its fence's
// Next: a Fluss batch is in the log if and only if its sequence is below.
// A target without a fence is an error, and so are two intents that give
// one stamp different parts, or records of one batch written twice (the log
// would hold them twice: a broken invariant, reported, not hidden).
func Decide(intents []intentlog.Intent, pp intentlog.ProducerPartition, next map[intentlog.Target]int32) (map[intentlog.Batch]Outcome, error) {
	type stamp struct {
		intentlog.Target
		seq int32
	}
	seen := make(map[stamp][]intentlog.Part)
	written := make(map[intentlog.Batch][]intentlog.Range)
	for _, in := range intents {
		if !holds(in, pp) {
			continue
		}
		st := stamp{in.Target, in.Sequence}
		if parts, ok := seen[st]; ok {
			if !slices.Equal(parts, in.Parts) {
				return nil, fmt.Errorf("takeover: writer %d on %s: sequence %d has two intents with different parts", in.Writer, in.Bucket, in.Sequence)
			}
			continue
		}
		seen[st] = in.Parts
		m, ok := next[in.Target]
		if !ok {
			return nil, fmt.Errorf("takeover: writer %d on %s holds records of producer %d %s/%d and was not fenced", in.Writer, in.Bucket, pp.ProducerID, pp.Topic, pp.Partition)
		}
		for _, p := range in.Parts {
			if p.Batch.ProducerPartition != pp {
				continue
			}
			w := written[p.Batch] // a batch named with nothing written is in the outcome too
			if in.Sequence < m && p.Records.Count > 0 {
				w = append(w, p.Records)
			}
			written[p.Batch] = w
		}
	}
	out := make(map[intentlog.Batch]Outcome, len(written))
	for b, w := range written {
		merged, err := merge(w)
		if err != nil {
			return nil, fmt.Errorf("takeover: producer %d %s/%d batch %d-%d: %w", pp.ProducerID, pp.Topic, pp.Partition, b.BaseSequence, b.LastSequence, err)
		}
		out[b] = Outcome{Written: merged}
	}
	return out, nil
}

// merge sorts runs and joins adjacent ones; overlapping runs are records
// written twice.
func merge(rs []intentlog.Range) ([]intentlog.Range, error) {
	slices.SortFunc(rs, func(a, b intentlog.Range) int { return cmp.Compare(a.First, b.First) })
	var out []intentlog.Range
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			switch {
			case r.First < last.End():
				return nil, fmt.Errorf("records %d-%d written twice", r.First, min(r.End(), last.End())-1)
			case r.First == last.End():
				last.Count += r.Count
				continue
			}
		}
		out = append(out, r)
	}
	return out, nil
}
