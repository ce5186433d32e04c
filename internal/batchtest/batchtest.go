// Package batchtest is a toy Fluss batch format for the accumulator's and
// the sender's tests: a 16-byte header (writer id, sequence, count) and one
// int64 per record, so that a test can read back what was sent and with
// which stamp. It imports only fluss.
package batchtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/fluss-kafka/gateway/fluss"
)

// Builder encodes a toy batch. When Builds is set it counts AppendTo
// calls under Mu. It is a log and a KV builder (a delete appends -1).
type Builder struct {
	rows   []int64
	Builds *int
	Mu     *sync.Mutex
}

// Append adds the row's single integer column.
func (b *Builder) Append(row fluss.Row) error {
	if len(row) != 1 {
		return errors.New("test builder: want one column")
	}
	b.rows = append(b.rows, row[0].I)
	return nil
}

// Upsert appends the row; the key is not encoded.
func (b *Builder) Upsert(_ []byte, row fluss.Row) error { return b.Append(row) }

// Delete appends -1.
func (b *Builder) Delete([]byte) error { return b.Append(fluss.Row{fluss.IntDatum(-1)}) }

// Rows returns the values appended so far (do not modify).
func (b *Builder) Rows() []int64 { return b.rows }

// Len is the number of records.
func (b *Builder) Len() int { return len(b.rows) }

// EstimatedSize is the exact encoded size.
func (b *Builder) EstimatedSize() int { return 16 + 8*len(b.rows) }

// Reset empties the builder.
func (b *Builder) Reset() { b.rows = b.rows[:0] }

// AppendTo encodes the batch with writer id and sequence -1.
func (b *Builder) AppendTo(dst []byte) ([]byte, error) {
	if b.Builds != nil {
		b.Mu.Lock()
		*b.Builds++
		b.Mu.Unlock()
	}
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(0))
	dst = binary.BigEndian.AppendUint32(dst, ^uint32(0))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.rows)))
	for _, r := range b.rows {
		dst = binary.BigEndian.AppendUint64(dst, uint64(r))
	}
	return dst, nil
}

// SetWriter patches writer id and sequence into an encoded batch.
func SetWriter(batch []byte, writerID int64, seq int32) {
	binary.BigEndian.PutUint64(batch, uint64(writerID))
	binary.BigEndian.PutUint32(batch[8:], uint32(seq))
}

// Decode reads an encoded batch back.
func Decode(data []byte) (writerID int64, seq int32, values []int64, err error) {
	if len(data) < 16 {
		return 0, 0, nil, errors.New("short batch")
	}
	writerID = int64(binary.BigEndian.Uint64(data))
	seq = int32(binary.BigEndian.Uint32(data[8:]))
	n := int(binary.BigEndian.Uint32(data[12:]))
	if len(data) != 16+8*n {
		return 0, 0, nil, fmt.Errorf("batch of %d bytes for %d records", len(data), n)
	}
	for i := range n {
		values = append(values, int64(binary.BigEndian.Uint64(data[16+8*i:])))
	}
	return writerID, seq, values, nil
}

// Split cuts a bucket's records (one or more encoded batches, one after
// the other, as the sender concatenates fresh sealed batches) into its
// batches.
func Split(data []byte) ([][]byte, error) {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 16 {
			return out, fmt.Errorf("%d bytes after the last batch", len(data))
		}
		size := 16 + 8*int(binary.BigEndian.Uint32(data[12:]))
		if size > len(data) {
			return out, fmt.Errorf("batch of %d bytes with %d left", size, len(data))
		}
		out = append(out, data[:size])
		data = data[size:]
	}
	return out, nil
}
