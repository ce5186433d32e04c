package kafkaproto

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBatch describes a record batch to build in tests.
type TestBatch struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Codec         Codec
	XerialSnappy  bool  // frame snappy like Java/sarama instead of one raw block
	Attributes    int16 // extra attribute bits (transactional, control, ...)
	BaseTimestamp int64
	Records       []Record // Index ignored; OffsetDelta ignored (set to the index)
}

// Build encodes the batch with a correct CRC.
func (b TestBatch) Build() []byte {
	var raw []byte
	for i, r := range b.Records {
		raw = appendTestRecord(raw, int32(i), r.Timestamp-b.BaseTimestamp, r)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(b.Codec) | b.Attributes,
		LastOffsetDelta:      int32(len(b.Records) - 1),
		FirstTimestamp:       b.BaseTimestamp,
		MaxTimestamp:         b.BaseTimestamp,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		FirstSequence:        b.BaseSequence,
		NumRecords:           int32(len(b.Records)),
		Records:              compressForTest(b.Codec, b.XerialSnappy, raw),
	}
	rb.Length = int32(49 + len(rb.Records))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func appendTestRecord(dst []byte, index int32, tsDelta int64, r Record) []byte {
	var body []byte
	body = append(body, 0)
	body = kbin.AppendVarlong(body, tsDelta)
	body = kbin.AppendVarint(body, index)
	body = appendNullableVarintBytes(body, r.Key)
	body = appendNullableVarintBytes(body, r.Value)
	body = kbin.AppendVarint(body, int32(len(r.Headers)))
	for _, h := range r.Headers {
		body = kbin.AppendVarintString(body, h.Key)
		body = appendNullableVarintBytes(body, h.Value)
	}
	dst = kbin.AppendVarint(dst, int32(len(body)))
	return append(dst, body...)
}

func appendNullableVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return kbin.AppendVarint(dst, -1)
	}
	return kbin.AppendVarintBytes(dst, b)
}

func compressForTest(c Codec, xerialFraming bool, raw []byte) []byte {
	var buf bytes.Buffer
	switch c {
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(raw)
		_ = w.Close()
	case CodecSnappy:
		if xerialFraming {
			return xerial.Encode(nil, raw)
		}
		return snappy.Encode(nil, raw)
	case CodecLZ4:
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(raw)
		_ = w.Close()
	case CodecZstd:
		e, _ := zstd.NewWriter(nil)
		defer e.Close()
		return e.EncodeAll(raw, nil)
	default:
		return raw
	}
	return buf.Bytes()
}

// SimpleRecords returns n records with values "v<i>" and keys "k<i>".
func SimpleRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Key: []byte{'k', byte('0' + i%10)}, Value: []byte{'v', byte('0' + i%10)}, Timestamp: 1000 + int64(i)}
	}
	return recs
}
