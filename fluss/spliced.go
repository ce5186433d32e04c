package fluss

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/frame"
)

// A write request (ProduceLog, PutKv) is mostly its buckets' record batches,
// already built and held by the writer until Fluss answers. Marshalling the
// request copies every batch into a new frame: one more allocation and copy
// of everything sent, live until the socket has taken it. splicedRequest
// encodes the same bytes as proto.Marshal but hands the batches to the
// connection as they are, between small encoded pieces.

// splicedWrite is a write request to encode without copying its batches:
// top is the request without its list of buckets (field list), buckets the
// bucket messages without their bytes field (field records), and records
// the bytes of each bucket's field.
type splicedWrite struct {
	top     proto.Message
	list    protowire.Number
	buckets []proto.Message
	records protowire.Number
	batches [][]byte
}

// partial marshals what is set: the records field is left out on purpose.
var partial = proto.MarshalOptions{AllowPartial: true}

// segments returns the request frame for h as pieces to write in order.
// Their concatenation equals frame.AppendRequestMessage of the whole
// message, fields in number order as proto.Marshal writes them
// (TestSplicedWriteMatchesMarshal).
func (w *splicedWrite) segments(h frame.RequestHeader) ([][]byte, error) {
	top, err := proto.MarshalOptions{}.Marshal(w.top)
	if err != nil {
		return nil, fmt.Errorf("marshal request api %d: %w", h.APIKey, err)
	}
	topBefore, topAfter, err := splitBefore(top, w.list)
	if err != nil {
		return nil, err
	}
	type piece struct {
		before, after []byte
		n             int // the bucket message's length, batch included
	}
	pieces := make([]piece, len(w.buckets))
	payload := len(top)
	for i, b := range w.buckets {
		enc, err := partial.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("marshal request api %d bucket %d: %w", h.APIKey, i, err)
		}
		before, after, err := splitBefore(enc, w.records)
		if err != nil {
			return nil, err
		}
		n := len(enc) + protowire.SizeTag(w.records) + protowire.SizeBytes(len(w.batches[i]))
		pieces[i] = piece{before, after, n}
		payload += protowire.SizeTag(w.list) + protowire.SizeBytes(n)
	}

	// The small pieces go into one buffer; cuts are where a batch goes.
	small := make([]byte, 0, frame.RequestHeaderLen+4+len(top)+len(w.buckets)*48)
	small = frame.AppendRequestPrefix(small, h, payload)
	small = append(small, topBefore...)
	cuts := make([]int, len(w.buckets))
	for i, p := range pieces {
		small = protowire.AppendTag(small, w.list, protowire.BytesType)
		small = protowire.AppendVarint(small, uint64(p.n))
		small = append(small, p.before...)
		small = protowire.AppendTag(small, w.records, protowire.BytesType)
		small = protowire.AppendVarint(small, uint64(len(w.batches[i])))
		cuts[i] = len(small)
		small = append(small, p.after...)
	}
	small = append(small, topAfter...)

	segs := make([][]byte, 0, 2*len(w.buckets)+1)
	from := 0
	for i, cut := range cuts {
		segs = append(segs, small[from:cut])
		if len(w.batches[i]) > 0 {
			segs = append(segs, w.batches[i])
		}
		from = cut
	}
	return append(segs, small[from:]), nil
}

// splitBefore splits an encoded message before its first field numbered
// above num: where proto.Marshal would have written field num.
func splitBefore(enc []byte, num protowire.Number) (before, after []byte, err error) {
	for off := 0; off < len(enc); {
		n, typ, tagLen := protowire.ConsumeTag(enc[off:])
		if tagLen < 0 {
			return nil, nil, fmt.Errorf("re-read encoded request: %w", protowire.ParseError(tagLen))
		}
		if n > num {
			return enc[:off], enc[off:], nil
		}
		valLen := protowire.ConsumeFieldValue(n, typ, enc[off+tagLen:])
		if valLen < 0 {
			return nil, nil, fmt.Errorf("re-read encoded request: %w", protowire.ParseError(valLen))
		}
		off += tagLen + valLen
	}
	return enc, nil, nil
}
