package takeover

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/intentlog"
)

// Outcome is what the log holds of one Kafka batch: per bucket, the runs
// of its rows written there, in order and merged.
type Outcome struct {
	Written map[fence.Bucket][]intentlog.Range
}

// Missing returns the runs of the batch's rows in b that are not written,
// given that total of its rows route to b (rows written past total are
// not J's to write).
func (o Outcome) Missing(b fence.Bucket, total int32) []intentlog.Range {
	var missing []intentlog.Range
	next := int32(0)
	for _, r := range o.Written[b] {
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

// Check says whether J's own conversion of the batch, totals rows per
// bucket, agrees with what the log holds: rows written in a bucket J does
// not route any to, or past J's count there, mean J converts the batch
// otherwise than I did (a route or table changed between them), and then
// no rows J writes can complete it exactly.
func (o Outcome) Check(totals map[fence.Bucket]int32) error {
	for b, rs := range o.Written {
		if len(rs) == 0 {
			continue
		}
		if last := rs[len(rs)-1]; last.End() > totals[b] {
			return fmt.Errorf("takeover: %s holds rows up to %d of the batch, its conversion here routes %d there", b, last.End()-1, totals[b])
		}
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
// rows are in the log. next maps each target of Fences to its fence's
// Next: a Fluss batch is in the log if and only if its sequence is below.
// A target without a fence is an error, and so are two intents that give
// one stamp different parts, or rows of one batch written twice (the log
// would hold them twice: a broken invariant, reported, not hidden).
func Decide(intents []intentlog.Intent, pp intentlog.ProducerPartition, next map[intentlog.Target]int32) (map[intentlog.Batch]Outcome, error) {
	type stamp struct {
		intentlog.Target
		seq int32
	}
	seen := make(map[stamp][]intentlog.Part)
	written := make(map[intentlog.Batch]map[fence.Bucket][]intentlog.Range)
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
			return nil, fmt.Errorf("takeover: writer %d on %s holds rows of producer %d %s/%d and was not fenced", in.Writer, in.Bucket, pp.ProducerID, pp.Topic, pp.Partition)
		}
		for _, p := range in.Parts {
			if p.Batch.ProducerPartition != pp {
				continue
			}
			w := written[p.Batch]
			if w == nil {
				w = make(map[fence.Bucket][]intentlog.Range)
				written[p.Batch] = w
			}
			if _, ok := w[in.Bucket]; !ok {
				w[in.Bucket] = nil // named: a bucket with nothing written is still the batch's
			}
			if in.Sequence < m && p.Rows.Count > 0 {
				w[in.Bucket] = append(w[in.Bucket], p.Rows)
			}
		}
	}
	out := make(map[intentlog.Batch]Outcome, len(written))
	for b, w := range written {
		for bucket, rs := range w {
			merged, err := merge(rs)
			if err != nil {
				return nil, fmt.Errorf("takeover: producer %d %s/%d batch %d-%d on %s: %w", pp.ProducerID, pp.Topic, pp.Partition, b.BaseSequence, b.LastSequence, bucket, err)
			}
			w[bucket] = merged
		}
		out[b] = Outcome{Written: w}
	}
	return out, nil
}

// merge sorts runs and joins adjacent ones; overlapping runs are rows
// written twice.
func merge(rs []intentlog.Range) ([]intentlog.Range, error) {
	slices.SortFunc(rs, func(a, b intentlog.Range) int { return cmp.Compare(a.First, b.First) })
	var out []intentlog.Range
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			switch {
			case r.First < last.End():
				return nil, fmt.Errorf("rows %d-%d written twice", r.First, min(r.End(), last.End())-1)
			case r.First == last.End():
				last.Count += r.Count
				continue
			}
		}
		out = append(out, r)
	}
	return out, nil
}
