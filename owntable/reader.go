package owntable

import (
	"encoding/binary"
	"errors"
)

// ErrTruncated is a Reader's error: a column's bytes ended inside a value.
var ErrTruncated = errors.New("truncated column")

// Reader decodes the varint-encoded byte columns of the gateway's own
// tables (a producer's state, a staged batch's records). The first
// malformed value sets Err and empties B; later reads return zero.

type Reader struct {
	B   []byte
	Err error
}

func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.Err, r.B = ErrTruncated, nil
		return 0
	}
	r.B = r.B[n:]
	return v
}

func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Err, r.B = ErrTruncated, nil
		return 0
	}
	r.B = r.B[n:]
	return v
}

func (r *Reader) Byte() byte {
	if len(r.B) == 0 {
		r.Err = ErrTruncated
		return 0
	}
	c := r.B[0]
	r.B = r.B[1:]
	return c
}
