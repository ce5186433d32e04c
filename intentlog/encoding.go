package intentlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/fence"
	"github.com/fluss-kafka/gateway/owntable"
)

// formatV1 is the first byte of an encoded entry: the layout below.
//
//	count uvarint, then per intent:
//	  writer, table id, partition id, bucket, schema id, sequence, from: varints
//	  parts uvarint, then per part:
//	    producer id varint, topic (uvarint length, bytes), partition,
//	    epoch, base sequence, last sequence, first record, records: varints
const formatV1 = 1

// Encode appends the encoding of one entry's intents to dst.
func Encode(dst []byte, intents []Intent) []byte {
	dst = append(dst, formatV1)
	dst = binary.AppendUvarint(dst, uint64(len(intents)))
	for _, in := range intents {
		b := in.Bucket
		for _, v := range []int64{in.Writer, b.TableID, b.PartitionID, int64(b.Bucket), int64(b.SchemaID), int64(in.Sequence), in.From} {
			dst = binary.AppendVarint(dst, v)
		}
		dst = binary.AppendUvarint(dst, uint64(len(in.Parts)))
		for _, p := range in.Parts {
			k := p.Batch
			dst = binary.AppendVarint(dst, k.ProducerID)
			dst = binary.AppendUvarint(dst, uint64(len(k.Topic)))
			dst = append(dst, k.Topic...)
			for _, v := range []int32{k.Partition, int32(k.Epoch), k.BaseSequence, k.LastSequence, p.Records.First, p.Records.Count} {
				dst = binary.AppendVarint(dst, int64(v))
			}
		}
	}
	return dst
}

// decoder reads an entry's fields from the varints owntable.Reader
// decodes, with the range checks of this format; the first error sticks.
type decoder struct {
	r   owntable.Reader
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uvarint() uint64 {
	v := d.r.Uvarint()
	d.fail(d.r.Err)
	return v
}

func (d *decoder) varint() int64 {
	v := d.r.Varint()
	d.fail(d.r.Err)
	return v
}

// int32 reads a varint that must fit an int32.
func (d *decoder) int32(what string) int32 {
	v := d.varint()
	if int64(int32(v)) != v {
		d.fail(fmt.Errorf("%s %d out of range", what, v))
	}
	return int32(v)
}

// int16 reads a varint that must fit an int16.
func (d *decoder) int16(what string) int16 {
	v := d.int32(what)
	if int32(int16(v)) != v {
		d.fail(fmt.Errorf("%s %d out of range", what, v))
	}
	return int16(v)
}

// count reads a count of items of at least min bytes each, bounded by
// what is left, so a corrupt count cannot make a huge slice.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.r.B)/min) {
		d.fail(fmt.Errorf("count %d larger than the %d bytes left hold", n, len(d.r.B)))
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

// Decode reads one entry's intents.
func Decode(b []byte) ([]Intent, error) {
	if len(b) == 0 {
		return nil, errors.New("intent entry: empty")
	}
	if b[0] != formatV1 {
		return nil, fmt.Errorf("intent entry: unknown format %d", b[0])
	}
	d := decoder{r: owntable.Reader{B: b[1:]}}
	intents := make([]Intent, d.count(8))
	for i := range intents {
		in := &intents[i]
		in.Writer = d.varint()
		in.Bucket = fence.Bucket{TableID: d.varint(), PartitionID: d.varint(), Bucket: d.int32("bucket")}
		in.Bucket.SchemaID = d.int16("schema id")
		in.Sequence = d.int32("sequence")
		in.From = d.varint()
		in.Parts = make([]Part, d.count(8))
		for j := range in.Parts {
			p := &in.Parts[j]
			p.Batch.ProducerID = d.varint()
			if n := d.count(1); d.err == nil {
				p.Batch.Topic = string(d.r.B[:n])
				d.r.B = d.r.B[n:]
			}
			p.Batch.Partition = d.int32("partition")
			p.Batch.Epoch = d.int16("epoch")
			p.Batch.BaseSequence = d.int32("base sequence")
			p.Batch.LastSequence = d.int32("last sequence")
			p.Records.First = d.int32("first record")
			p.Records.Count = d.int32("records")
		}
		if d.err != nil {
			break
		}
	}
	if d.err == nil && len(d.r.B) > 0 {
		d.fail(fmt.Errorf("%d bytes after the last intent", len(d.r.B)))
	}
	if d.err != nil {
		return nil, fmt.Errorf("intent entry: %w", d.err)
	}
	return intents, nil
}
