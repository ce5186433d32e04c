package intentlog

import "github.com/fluss-kafka/gateway/fence"

// ProducerPartition is a Kafka producer's partition: the unit whose
// batches move between instances.
type ProducerPartition struct {
	ProducerID int64
	Topic      string
	Partition  int32
}

// Batch names one Kafka batch of a producer-partition by its producer
// epoch and sequences (an epoch bump starts the sequences again at 0).
type Batch struct {
	ProducerPartition
	Epoch                      int16
	BaseSequence, LastSequence int32
}

// Range is a run of a Kafka batch's records by their index in the batch
// (the record's offset delta). Numbering records, not the rows a bucket
// got, keeps an intent independent of where rows were routed: the instance
// taking over needs only the batch itself to know which records a range
// names, wherever its own route would put them.
type Range struct {
	First, Count int32
}

// End is the index of the record after the run.
func (r Range) End() int32 { return r.First + r.Count }

// Part is the records of one Kafka batch that one Fluss batch holds.
type Part struct {
	Batch   Batch
	Records Range
}

// AppendRecord adds record index of Kafka batch b to the parts of a Fluss
// batch: it extends the last run when it is the next record of the same
// Kafka batch, so a batch filled in arrival order costs a part per run,
// not per record.
func AppendRecord(parts []Part, b Batch, index int32) []Part {
	if n := len(parts); n > 0 && parts[n-1].Batch == b && parts[n-1].Records.End() == index {
		parts[n-1].Records.Count++
		return parts
	}
	return append(parts, Part{Batch: b, Records: Range{First: index, Count: 1}})
}

// Target is one writer id on one bucket: what a fence stops.
type Target struct {
	Writer int64
	Bucket fence.Bucket
}

// Intent is what an instance records before it sends a Fluss batch: the
// batch's stamp, where a fence of the stamp's writer may start reading the
// bucket, and the parts of Kafka batches it holds.
type Intent struct {
	Target
	Sequence int32
	// From is the base offset of the writer's last batch the instance saw
	// acknowledged in the bucket (0 when none): at or before the writer's
	// last batch there, whichever of its batches landed after, as a fence
	// needs. (The end offset of that batch would not do: when none of the
	// later batches landed, a fence from there would find no batch of the
	// writer and take it for one that never wrote.)
	From  int64
	Parts []Part
}
