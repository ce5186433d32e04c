package transactions

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/owntable"
)

// The staging table holds the record batches of open transactions until
// their outcome (docs/transactions.md, "Transactions"): one row per Kafka
// batch, in the bucket of its transactional id. A transaction's batches
// are the rows of its producer id and epoch between two offsets of that
// bucket: the end offset read before its begin row was written (its first
// AddPartitionsToTxn comes before any of its batches) and the one read
// before its commit was written (EndTxn comes after every batch was
// staged, and the next transaction begins after EndTxn was answered). A
// zombie's rows (an older epoch) are never applied.
//
// Offsets alone do not tell transactions apart: a write can land late. A
// Produce whose staging write is held (a slow or cut-off tablet server)
// times out at the client, which sends the batch again; the copy lands,
// the transaction ends, and the first write, still in the gateway's
// writer, lands after the end offset: among the next transaction's rows,
// with the same producer id, epoch and sequences. So each row names the
// transaction it was staged for (codec 2: its claim and number before the
// records), and an apply skips rows of other transactions. Rows staged by
// an instance that did not know the transaction's number (codec 1, or a
// Produce on an instance that saw no AddPartitionsToTxn for it) carry
// none and are taken by offsets alone. Rows are never read by anything but
// the gateway; an aborted transaction's stay until the log's retention
// drops them.

// defaultStagingTable is where staged batches live unless configured.
var defaultStagingTable = fluss.TablePath{Database: "gateway", Table: "kafka_txn_staging"}

const (
	stagingBuckets  = 8
	stagingCodecV1  = 1 // the records
	stagingCodecV2  = 2 // the transaction's claim and number, then the records as in 1
	stagingColumns  = 8
	stagingFetchMax = 8 << 20
)

func stagingSchema() fluss.Schema {
	return fluss.Schema{Columns: []fluss.Column{
		{Name: "transactional_id", Type: fluss.String().NonNull()},
		{Name: "topic", Type: fluss.String().NonNull()},
		{Name: "kafka_partition", Type: fluss.Int().NonNull()},
		{Name: "producer_id", Type: fluss.BigInt().NonNull()},
		{Name: "epoch", Type: fluss.Int().NonNull()},
		{Name: "base_sequence", Type: fluss.Int().NonNull()},
		{Name: "record_count", Type: fluss.Int().NonNull()},
		{Name: "records", Type: fluss.Bytes().NonNull()},
	}}
}

// stagedBatch is one staged Kafka batch.
type stagedBatch struct {
	id            string
	topic         string
	partition     int32
	producerID    int64
	epoch         int16
	baseSequence  int32
	records       []kafkaproto.Record
	stagingOffset int64   // where it was read back from; -1 when written
	txn           *txnTag // the transaction it was staged for; nil if unknown
}

// txnTag names a transaction: its claim and its number within the claim.
type txnTag struct{ claim, n int64 }

// stagingLog writes and reads the staging table; it creates the table on
// first use. Safe for concurrent use.
type stagingLog struct {
	owntable.Table
	fetch Source // reads the staged batches back
}

// Source is what the staging log needs from Fluss.
type Source interface {
	owntable.Source
	ListOffsets(ctx context.Context, tableID, partitionID int64, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error)
	FetchLog(ctx context.Context, req *fluss.FetchLogRequest) ([]fluss.FetchedBucket, error)
}

func newStagingLog(src Source, acc *accumulator.Accumulator, path fluss.TablePath) *stagingLog {
	return &stagingLog{Table: owntable.New(src, acc, path, owntable.Kind{What: "staging table", Descriptor: stagingDescriptor,
		Properties: checkStagingProperties, NoLinger: true}), fetch: src}
}

func stagingDescriptor() *fluss.TableDescriptor {
	return &fluss.TableDescriptor{
		Schema:      stagingSchema(),
		Comment:     "Kafka gateway: record batches of open transactions (docs/transactions.md)",
		BucketKeys:  []string{"transactional_id"},
		BucketCount: stagingBuckets,
		Properties:  map[string]string{fluss.PropLogFormat: string(fluss.LogFormatIndexed)},
	}
}

// checkStagingProperties refuses a table whose log is not INDEXED: staged
// batches are read back row by row.
func checkStagingProperties(d *fluss.TableDescriptor) error {
	if d.LogFormat() != fluss.LogFormatIndexed {
		return errors.New("must be an INDEXED log table")
	}
	return nil
}

func (l *stagingLog) bucket(id string) (int32, error) {
	row := make(fluss.Row, stagingColumns)
	row[0] = fluss.StringDatum(id)
	b, err := l.BucketEnc.Encode(nil, row)
	if err != nil {
		return 0, fmt.Errorf("encode transactional id %q: %w", id, err)
	}
	return fluss.BucketForKey(b, l.Info.Descriptor.BucketCount), nil
}

// end returns the staging bucket's end offset for id: every batch staged
// for id after this call is at or past it.
func (l *stagingLog) end(ctx context.Context, id string) (int64, error) {
	if err := l.Open(ctx); err != nil {
		return 0, err
	}
	b, err := l.bucket(id)
	if err != nil {
		return 0, err
	}
	offs, err := l.fetch.ListOffsets(ctx, l.Info.TableID, fluss.NoPartition, []int32{b}, fluss.LatestOffset)
	if err != nil {
		return 0, fmt.Errorf("staging end offset of %q: %w", id, err)
	}
	off, ok := offs[b]
	if !ok {
		return 0, fmt.Errorf("staging end offset of %q: bucket %d not answered", id, b)
	}
	return off, nil
}

// stage appends one batch; the handle completes once Fluss has it.
func (l *stagingLog) stage(ctx context.Context, sb *stagedBatch) (accumulator.Handle, error) {
	if err := l.Open(ctx); err != nil {
		return accumulator.Handle{}, err
	}
	b, err := l.bucket(sb.id)
	if err != nil {
		return accumulator.Handle{}, err
	}
	records := appendStaged(make([]byte, 0, stagedSize(sb.records)+2*binary.MaxVarintLen64), sb.txn, sb.records)
	row := fluss.Row{
		fluss.StringDatum(sb.id), fluss.StringDatum(sb.topic), fluss.IntDatum(int64(sb.partition)),
		fluss.IntDatum(sb.producerID), fluss.IntDatum(int64(sb.epoch)), fluss.IntDatum(int64(sb.baseSequence)),
		fluss.IntDatum(int64(len(sb.records))), fluss.BytesDatum(records),
	}
	handle, err := l.Acc.Append(ctx, l.Writer, fluss.NoPartition, b, fluss.WriteAppend, nil, row)
	if err != nil {
		return accumulator.Handle{}, fmt.Errorf("stage batch of %q: %w", sb.id, err)
	}
	return handle, nil
}

// read returns the batches staged for transaction txn of id by producer id
// pid at epoch between offsets from and to (those naming another
// transaction left out), deduplicated (a batch staged twice, by a retry,
// once) and ordered by topic, partition and sequence.
func (l *stagingLog) read(ctx context.Context, id string, pid int64, epoch int16, txn txnTag, from, to int64) ([]*stagedBatch, error) {
	if err := l.Open(ctx); err != nil {
		return nil, err
	}
	b, err := l.bucket(id)
	if err != nil {
		return nil, err
	}
	type seqKey struct {
		topic     string
		partition int32
		seq       int32
	}
	seen := map[seqKey]bool{}
	var out []*stagedBatch
	schema := &l.Info.Descriptor.Schema
	for off := from; off < to; {
		got, err := l.fetch.FetchLog(ctx, &fluss.FetchLogRequest{TableID: l.Info.TableID,
			Buckets: []fluss.FetchBucket{{PartitionID: fluss.NoPartition, Bucket: b, Offset: off, MaxBytes: stagingFetchMax}}})
		if err != nil {
			return nil, fmt.Errorf("read staged batches of %q: %w", id, err)
		}
		if len(got) != 1 {
			return nil, fmt.Errorf("read staged batches of %q: %d buckets answered", id, len(got))
		}
		fb := got[0]
		if fb.Err != nil {
			return nil, fmt.Errorf("read staged batches of %q from offset %d: %w", id, off, fb.Err)
		}
		recs, err := fluss.DecodeLogBatchesFormat(fb.Records, schema, fluss.LogFormatIndexed)
		if err != nil {
			return nil, fmt.Errorf("decode staged batches of %q: %w", id, err)
		}
		next := off
		for _, r := range recs {
			if r.Offset < off || r.Offset >= to {
				continue // a fetch answers whole batches
			}
			next = r.Offset + 1
			row := r.Row
			if string(row[0].B) != id || row[3].I != pid || int16(row[4].I) != epoch {
				continue
			}
			sb := &stagedBatch{id: id, topic: string(row[1].B), partition: int32(row[2].I),
				producerID: pid, epoch: epoch, baseSequence: int32(row[5].I), stagingOffset: r.Offset}
			k := seqKey{sb.topic, sb.partition, sb.baseSequence}
			if seen[k] {
				continue
			}
			if sb.txn, sb.records, err = decodeStaged(row[7].B, int(row[6].I)); err != nil {
				return nil, fmt.Errorf("staged batch of %q at offset %d: %w", id, r.Offset, err)
			}
			if sb.txn != nil && *sb.txn != txn {
				continue // another transaction's write, landed late
			}
			seen[k] = true
			out = append(out, sb)
		}
		if next == off {
			if fb.HighWatermark >= 0 && fb.HighWatermark < to {
				return nil, fmt.Errorf("read staged batches of %q: the staging bucket's high watermark %d is below %d", id, fb.HighWatermark, to)
			}
			break
		}
		off = next
	}
	slices.SortFunc(out, func(a, b *stagedBatch) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition), cmp.Compare(a.baseSequence, b.baseSequence))
	})
	return out, nil
}

// appendStaged encodes a staged batch's records column: codec 2 with the
// transaction's claim and number when txn is known, else codec 1, then
// per record its offset delta, timestamp, key, value (each with a null
// marker) and headers.
func appendStaged(dst []byte, txn *txnTag, recs []kafkaproto.Record) []byte {
	if txn != nil {
		dst = append(dst, stagingCodecV2)
		dst = binary.AppendUvarint(dst, uint64(txn.claim))
		dst = binary.AppendUvarint(dst, uint64(txn.n))
	} else {
		dst = append(dst, stagingCodecV1)
	}
	for _, r := range recs {
		dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
		dst = binary.AppendVarint(dst, r.Timestamp)
		dst = appendNullableBytes(dst, r.Key)
		dst = appendNullableBytes(dst, r.Value)
		dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = appendNullableBytes(dst, []byte(h.Key))
			dst = appendNullableBytes(dst, h.Value)
		}
	}
	return dst
}

// stagedSize is an upper bound of the records' encoded length.
func stagedSize(recs []kafkaproto.Record) int {
	n := 1
	for _, r := range recs {
		n += 4*binary.MaxVarintLen64 + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += 2*binary.MaxVarintLen64 + len(h.Key) + len(h.Value)
		}
	}
	return n
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

var errBadStaged = errors.New("malformed staged records")

func decodeStaged(b []byte, n int) (*txnTag, []kafkaproto.Record, error) {
	if len(b) == 0 || (b[0] != stagingCodecV1 && b[0] != stagingCodecV2) {
		return nil, nil, fmt.Errorf("%w: unknown codec", errBadStaged)
	}
	if n < 0 || n > len(b) {
		return nil, nil, fmt.Errorf("%w: %d records", errBadStaged, n)
	}
	r := owntable.Reader{B: b[1:]}
	var txn *txnTag
	if b[0] == stagingCodecV2 {
		txn = &txnTag{claim: int64(r.Uvarint()), n: int64(r.Uvarint())}
	}
	recs := make([]kafkaproto.Record, n)
	for i := range recs {
		rec := &recs[i]
		rec.Index = int32(i)
		rec.OffsetDelta = int32(r.Varint())
		rec.Timestamp = r.Varint()
		rec.Key = nullableBytes(&r)
		rec.Value = nullableBytes(&r)
		h := r.Uvarint()
		if h > uint64(len(r.B)) {
			return nil, nil, fmt.Errorf("%w: %d headers", errBadStaged, h)
		}
		for range h {
			k := nullableBytes(&r)
			rec.Headers = append(rec.Headers, kafkaproto.Header{Key: string(k), Value: nullableBytes(&r)})
		}
	}
	if r.Err != nil || len(r.B) != 0 {
		return nil, nil, fmt.Errorf("%w: truncated or trailing bytes", errBadStaged)
	}
	return txn, recs, nil
}

func nullableBytes(r *owntable.Reader) []byte {
	n := r.Varint()
	if n < 0 || r.Err != nil {
		return nil
	}
	if n > int64(len(r.B)) {
		r.Err, r.B = errBadStaged, nil
		return nil
	}
	out := r.B[:n:n]
	r.B = r.B[n:]
	return out
}
