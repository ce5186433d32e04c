package takeover

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/intentlog"
)

// logBatch is one batch of a fake bucket's log.
type logBatch struct {
	writer int64
	seq    int32
	rows   []rowID // empty: a fence's marker
}

// rowID names one row: its Kafka batch and its place among the batch's
// rows in the bucket.
type rowID struct {
	batch intentlog.Batch
	index int32
}

// fakeBucket is a log bucket that applies Fluss 0.9.1's rules for writer
// ids and sequences (docs/exactly-once.md §2, facts 3-5): a batch is
// appended only at the writer's last sequence + 1 (at 0 for a writer the
// bucket does not know), a copy of one of the writer's last 5 batches is
// answered as written and not appended, anything else is refused.
type fakeBucket struct {
	log []logBatch
}

type appendResult int

const (
	appended appendResult = iota
	duplicate
	outOfOrder
)

func (f *fakeBucket) writerBatches(w int64) []logBatch {
	var out []logBatch
	for _, b := range f.log {
		if b.writer == w {
			out = append(out, b)
		}
	}
	return out
}

func (f *fakeBucket) append(w int64, seq int32, rows []rowID) appendResult {
	own := f.writerBatches(w)
	if len(own) == 0 {
		if seq != 0 {
			return outOfOrder
		}
	} else {
		for _, b := range own[max(0, len(own)-fence.Window):] {
			if b.seq == seq {
				return duplicate
			}
		}
		if seq != own[len(own)-1].seq+1 {
			return outOfOrder
		}
	}
	f.log = append(f.log, logBatch{writer: w, seq: seq, rows: rows})
	return appended
}

// fence does what package fence does on a real bucket: it reads the
// writer's batches, and unless a fence already stands it appends
// inflight+5 markers after the last one; Next is the first sequence after
// the writer's last data batch.
func (f *fakeBucket) fence(t *testing.T, w int64, inflight int) int32 {
	t.Helper()
	own := f.writerBatches(w)
	next := int32(0)
	for _, b := range own {
		if len(b.rows) > 0 {
			next = b.seq + 1
		}
	}
	if len(own) > 0 && len(own[len(own)-1].rows) == 0 {
		return next // a fence stands
	}
	for i := range inflight + fence.Window {
		require.Equal(t, appended, f.append(w, next+int32(i), nil), "marker %d", i)
	}
	return next
}

func producer(id int64, topic string, partition int32) intentlog.ProducerPartition {
	return intentlog.ProducerPartition{ProducerID: id, Topic: topic, Partition: partition}
}

func batch(pp intentlog.ProducerPartition, base, last int32) intentlog.Batch {
	return intentlog.Batch{ProducerPartition: pp, BaseSequence: base, LastSequence: last}
}

func records(first, count int32) intentlog.Range {
	return intentlog.Range{First: first, Count: count}
}

func part(b intentlog.Batch, r intentlog.Range) intentlog.Part {
	return intentlog.Part{Batch: b, Records: r}
}

func target(writer int64, b fence.Bucket) intentlog.Target {
	return intentlog.Target{Writer: writer, Bucket: b}
}

func bucketOf(i int32) fence.Bucket {
	return fence.Bucket{TableID: 7, PartitionID: fluss.NoPartition, Bucket: i}
}

// TestDecideAgainstFlussRules runs many crashes of an instance I that
// writes the rows of several producers into shared batches under its
// writer, with intents recorded before each batch, and some of its batches
// landed, some in flight, some never sent. Instance J then takes each
// producer-partition over as design (D) says: fences the targets Fences
// names, decides, and writes the missing rows under its own writer; I
// still sends its in-flight batches and retries after the fences. Every
// row must be in the log exactly once, in its bucket.
func TestDecideAgainstFlussRules(t *testing.T) {
	t.Parallel()
	const (
		writerI  = 100
		writerJ  = 200
		buckets  = 3
		perBatch = 4 // rows per Fluss batch
		inflight = 2
	)
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			logs := make([]*fakeBucket, buckets)
			for i := range logs {
				logs[i] = &fakeBucket{}
			}

			// Producers' Kafka batches, each record's row routed to a bucket.
			producers := []intentlog.ProducerPartition{producer(1, "t", 0), producer(2, "t", 0), producer(2, "t", 1)}
			type kafkaBatch struct {
				intentlog.Batch
				bucket []int32 // of each record's row
			}
			var batches []kafkaBatch
			seqs := map[intentlog.ProducerPartition]int32{}
			for range 4 + rng.IntN(12) {
				pp := producers[rng.IntN(len(producers))]
				n := int32(1 + rng.IntN(6))
				kb := kafkaBatch{Batch: batch(pp, seqs[pp], seqs[pp]+n-1)}
				seqs[pp] += n
				for range n {
					kb.bucket = append(kb.bucket, int32(rng.IntN(buckets)))
				}
				batches = append(batches, kb)
			}

			// I fills each bucket's batches in arrival order, perBatch rows
			// each; a full batch is stamped (its intent recorded) and sent.
			type flussBatch struct {
				seq   int32
				rows  []rowID
				parts []intentlog.Part
			}
			var intents []intentlog.Intent
			stamped := make([][]flussBatch, buckets)
			open := make([]flussBatch, buckets)
			seal := func(b int32) {
				fb := open[b]
				fb.seq = int32(len(stamped[b]))
				intents = append(intents, intentlog.Intent{Target: target(writerI, bucketOf(b)), Sequence: fb.seq, Parts: fb.parts})
				stamped[b] = append(stamped[b], fb)
				open[b] = flussBatch{}
			}
			for _, kb := range batches {
				for i, b := range kb.bucket {
					i := int32(i)
					fb := &open[b]
					fb.parts = intentlog.AppendRecord(fb.parts, kb.Batch, i)
					fb.rows = append(fb.rows, rowID{kb.Batch, i})
					if len(fb.rows) == perBatch {
						seal(b)
					}
				}
			}
			// Some open batches are stamped by a last drain; the rest die
			// with I, unstamped.
			for b := range int32(buckets) {
				if len(open[b].rows) > 0 && rng.IntN(2) == 0 {
					seal(b)
				}
			}

			// I crashes: in each bucket its first landed batches are in
			// the log, up to inflight more are still on their way.
			landed := make([]int, buckets)
			for b := range buckets {
				landed[b] = rng.IntN(len(stamped[b]) + 1)
				for _, fb := range stamped[b][:landed[b]] {
					require.Equal(t, appended, logs[b].append(writerI, fb.seq, fb.rows))
				}
			}

			// J takes each producer-partition over in turn.
			nextJ := make([]int32, buckets)
			for _, pp := range producers {
				next := map[intentlog.Target]int32{}
				for target := range Fences(intents, pp) {
					next[target] = logs[target.Bucket.Bucket].fence(t, target.Writer, inflight)
				}
				decided, err := Decide(intents, pp, next)
				require.NoError(t, err)
				for _, kb := range batches {
					if kb.ProducerPartition != pp {
						continue
					}
					o := decided[kb.Batch]
					require.NoError(t, o.Check(int32(len(kb.bucket))))
					// J converts the missing records again and routes
					// their rows as its own path does.
					var rows [buckets][]rowID
					for _, r := range o.Missing(int32(len(kb.bucket))) {
						for i := r.First; i < r.End(); i++ {
							rows[kb.bucket[i]] = append(rows[kb.bucket[i]], rowID{kb.Batch, i})
						}
					}
					for b := range buckets {
						if len(rows[b]) > 0 {
							require.Equal(t, appended, logs[b].append(writerJ, nextJ[b], rows[b]))
							nextJ[b]++
						}
					}
				}
			}

			// The zombie I sends what it had in flight, and retries its
			// last landed batch: nothing more of I's lands.
			for b := range buckets {
				before := len(logs[b].log)
				for i := max(0, landed[b]-1); i < min(len(stamped[b]), landed[b]+inflight); i++ {
					fb := stamped[b][i]
					res := logs[b].append(writerI, fb.seq, fb.rows)
					assert.Equal(t, outOfOrder, res, "bucket %d: I's batch %d after the fence", b, fb.seq)
				}
				assert.Equal(t, before, len(logs[b].log))
			}

			// Every record's row is in its bucket exactly once.
			for b := range int32(buckets) {
				count := map[rowID]int{}
				for _, lb := range logs[b].log {
					for _, r := range lb.rows {
						count[r]++
					}
				}
				for _, kb := range batches {
					for i, rb := range kb.bucket {
						if rb != b {
							continue
						}
						r := rowID{kb.Batch, int32(i)}
						assert.Equal(t, 1, count[r], "bucket %d: producer %d/%d batch %d record %d", b, kb.ProducerID, kb.Partition, kb.BaseSequence, i)
						delete(count, r)
					}
				}
				assert.Empty(t, count, "bucket %d: rows of no record routed here", b)
			}
		})
	}
}

func TestDecideRefusesWhatItCannotTrust(t *testing.T) {
	t.Parallel()
	pp := producer(1, "t", 0)
	kb := batch(pp, 0, 3)
	t0 := target(100, bucketOf(0))
	in := func(seq int32, parts ...intentlog.Part) intentlog.Intent {
		return intentlog.Intent{Target: t0, Sequence: seq, Parts: parts}
	}

	_, err := Decide([]intentlog.Intent{in(0, part(kb, records(0, 2)))}, pp, nil)
	assert.ErrorContains(t, err, "was not fenced")

	_, err = Decide([]intentlog.Intent{in(0, part(kb, records(0, 2))), in(0, part(kb, records(0, 3)))}, pp, map[intentlog.Target]int32{t0: 1})
	assert.ErrorContains(t, err, "two intents with different parts")

	_, err = Decide([]intentlog.Intent{in(0, part(kb, records(0, 2))), in(1, part(kb, records(1, 2)))}, pp, map[intentlog.Target]int32{t0: 2})
	assert.ErrorContains(t, err, "records 1-1 written twice")

	// A copy of one intent (the intent log's own retry) is not a conflict.
	got, err := Decide([]intentlog.Intent{in(0, part(kb, records(0, 2))), in(0, part(kb, records(0, 2))), in(1, part(kb, records(2, 2)))}, pp, map[intentlog.Target]int32{t0: 1})
	require.NoError(t, err)
	assert.Equal(t, []intentlog.Range{records(0, 2)}, got[kb].Written)
	assert.Equal(t, []intentlog.Range{records(2, 2)}, got[kb].Missing(4))

	// Records in several buckets: one batch's outcome, whichever bucket.
	other := target(100, bucketOf(1))
	got, err = Decide([]intentlog.Intent{in(0, part(kb, records(0, 1)), part(kb, records(2, 1))),
		{Target: other, Sequence: 0, Parts: []intentlog.Part{part(kb, records(1, 1))}},
		{Target: other, Sequence: 1, Parts: []intentlog.Part{part(kb, records(3, 1))}}},
		pp, map[intentlog.Target]int32{t0: 1, other: 1})
	require.NoError(t, err)
	assert.Equal(t, []intentlog.Range{records(0, 3)}, got[kb].Written)
	assert.Equal(t, []intentlog.Range{records(3, 1)}, got[kb].Missing(4))
}

// After an epoch bump a producer's sequences start again: the same
// sequences under two epochs are two batches.
func TestDecideKeepsEpochsApart(t *testing.T) {
	t.Parallel()
	pp := producer(1, "t", 0)
	old, bumped := batch(pp, 0, 1), batch(pp, 0, 1)
	bumped.Epoch = 1
	t0 := target(100, bucketOf(0))
	got, err := Decide([]intentlog.Intent{
		{Target: t0, Sequence: 0, Parts: []intentlog.Part{part(old, records(0, 2))}},
		{Target: t0, Sequence: 1, Parts: []intentlog.Part{part(bumped, records(0, 2))}},
	}, pp, map[intentlog.Target]int32{t0: 1})
	require.NoError(t, err)
	assert.Equal(t, []intentlog.Range{records(0, 2)}, got[old].Written)
	assert.Equal(t, []intentlog.Range{records(0, 2)}, got[bumped].Missing(2))
}

func TestFencesNamesOnlyTheProducerPartitionsTargets(t *testing.T) {
	t.Parallel()
	a := producer(1, "t", 0)
	b := producer(2, "t", 0)
	t0 := target(100, bucketOf(0))
	t1 := target(100, bucketOf(1))
	intents := []intentlog.Intent{
		{Target: t0, Sequence: 3, From: 50, Parts: []intentlog.Part{part(batch(a, 0, 0), records(0, 1)), part(batch(b, 0, 0), records(0, 1))}},
		{Target: t0, Sequence: 4, From: 40, Parts: []intentlog.Part{part(batch(a, 1, 1), records(0, 1))}},
		{Target: t1, Sequence: 0, From: 7, Parts: []intentlog.Part{part(batch(b, 1, 2), records(0, 2))}},
	}
	assert.Equal(t, map[intentlog.Target]int64{t0: 40}, Fences(intents, a))
	assert.Equal(t, map[intentlog.Target]int64{t0: 50, t1: 7}, Fences(intents, b))
}

func TestMissing(t *testing.T) {
	t.Parallel()
	o := Outcome{Written: []intentlog.Range{records(2, 3), records(7, 1)}}
	assert.Equal(t, []intentlog.Range{records(0, 2), records(5, 2), records(8, 2)}, o.Missing(10))
	assert.Equal(t, []intentlog.Range{records(0, 4)}, Outcome{}.Missing(4))
	assert.Equal(t, []intentlog.Range{records(0, 2)}, o.Missing(5))
	assert.Empty(t, Outcome{}.Missing(0))

	assert.NoError(t, o.Check(8))
	assert.ErrorContains(t, o.Check(7), "the log holds record 7 of the batch, which has 7")
}
