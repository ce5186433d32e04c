package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// The producer-state table keeps, per Kafka producer-partition of an
// exactly-once route, what a gateway instance needs to carry on where
// another one stopped (docs/exactly-once.md, design C): the Fluss writer id
// of the producer-partition, the last Fluss batch sequence per target
// bucket, the next Kafka sequence and the last committed batches. Rows are
// upserted through the writer (batched with other commits) and looked up
// on a producer-partition's first batch on an instance. The versioned
// merge engine on the version column keeps a late commit of a crashed or
// partitioned instance from rolling a row back.

// defaultStateTable is where the producer states live unless configured.
var defaultStateTable = fluss.TablePath{Database: "gateway", Table: "kafka_producer_state"}

const (
	stateBuckets    = 16
	stateColVersion = "version"
	// stateCodecV1 is the first byte of the state column.
	stateCodecV1 = 1
)

// stateSchema is the producer-state table: one row per producer-partition.
func stateSchema() fluss.Schema {
	return fluss.Schema{
		Columns: []fluss.Column{
			{Name: "producer_id", Type: fluss.BigInt().NonNull()},
			{Name: "topic", Type: fluss.String().NonNull()},
			{Name: "kafka_partition", Type: fluss.Int().NonNull()},
			{Name: stateColVersion, Type: fluss.BigInt()},
			{Name: "writer_id", Type: fluss.BigInt()},
			{Name: "route_fingerprint", Type: fluss.BigInt()},
			{Name: "state", Type: fluss.Bytes()},
		},
		PrimaryKey: []string{"producer_id", "topic", "kafka_partition"},
	}
}

// stateSource is what the producer-state store needs from Fluss.
type stateSource interface {
	TableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	CreateDatabase(ctx context.Context, name string, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d *fluss.TableDescriptor, ignoreIfExists bool) error
	WaitForTableLeaders(ctx context.Context, path fluss.TablePath, partitionIDs ...int64) error
	Lookup(ctx context.Context, tableID, partitionID int64, bucket int32, keys [][]byte) ([][]byte, error)
}

// targetKey is one Fluss bucket a producer-partition's rows go to.
type targetKey struct {
	tableID, partitionID int64
	bucket               int32
}

// committedBatch is one Kafka batch in a producer state's window.
type committedBatch struct {
	first, last int32
	offset      int64 // the Kafka base offset it was answered with
}

// producerState is the content of one state row.
type producerState struct {
	version     int64 // state changes so far: each batch, and each new writer id
	writerID    int64
	fingerprint int64
	epoch       int16
	known       bool  // a batch was admitted: nextSeq holds
	nextSeq     int32 // the baseSequence the next new batch must carry
	targets     map[targetKey]int32
	window      []committedBatch // oldest first, at most kafkaproto.SequenceWindow
}

// clone returns a deep copy.
func (p *producerState) clone() producerState {
	c := *p
	c.targets = make(map[targetKey]int32, len(p.targets))
	for k, v := range p.targets {
		c.targets[k] = v
	}
	c.window = slices.Clone(p.window)
	return c
}

// appendState encodes the state column: codec byte, epoch, known, next
// sequence, the window, then the targets (sorted, so equal states encode
// equally).
func appendState(dst []byte, p *producerState) []byte {
	dst = append(dst, stateCodecV1)
	dst = binary.AppendVarint(dst, int64(p.epoch))
	known := byte(0)
	if p.known {
		known = 1
	}
	dst = append(dst, known)
	dst = binary.AppendVarint(dst, int64(p.nextSeq))
	dst = binary.AppendUvarint(dst, uint64(len(p.window)))
	for _, w := range p.window {
		dst = binary.AppendVarint(dst, int64(w.first))
		dst = binary.AppendVarint(dst, int64(w.last))
		dst = binary.AppendVarint(dst, w.offset)
	}
	keys := make([]targetKey, 0, len(p.targets))
	for k := range p.targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b targetKey) int {
		switch {
		case a.tableID != b.tableID:
			return cmpInt(a.tableID, b.tableID)
		case a.partitionID != b.partitionID:
			return cmpInt(a.partitionID, b.partitionID)
		}
		return cmpInt(int64(a.bucket), int64(b.bucket))
	})
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = binary.AppendVarint(dst, k.tableID)
		dst = binary.AppendVarint(dst, k.partitionID)
		dst = binary.AppendVarint(dst, int64(k.bucket))
		dst = binary.AppendVarint(dst, int64(p.targets[k]))
	}
	return dst
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var errBadState = errors.New("malformed producer state")

// decodeState decodes the state column into p.
func decodeState(b []byte, p *producerState) error {
	if len(b) == 0 || b[0] != stateCodecV1 {
		return fmt.Errorf("%w: unknown codec", errBadState)
	}
	r := stateReader{b: b[1:]}
	p.epoch = int16(r.varint())
	p.known = r.byte() == 1
	p.nextSeq = int32(r.varint())
	n := r.uvarint()
	if n > kafkaproto.SequenceWindow {
		return fmt.Errorf("%w: window of %d", errBadState, n)
	}
	p.window = make([]committedBatch, 0, n)
	for range n {
		p.window = append(p.window, committedBatch{first: int32(r.varint()), last: int32(r.varint()), offset: r.varint()})
	}
	n = r.uvarint()
	if n > uint64(len(b)) {
		return fmt.Errorf("%w: %d targets", errBadState, n)
	}
	p.targets = make(map[targetKey]int32, n)
	for range n {
		k := targetKey{tableID: r.varint(), partitionID: r.varint(), bucket: int32(r.varint())}
		p.targets[k] = int32(r.varint())
	}
	if r.err != nil || len(r.b) != 0 {
		return fmt.Errorf("%w: truncated or trailing bytes", errBadState)
	}
	return nil
}

type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errBadState, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errBadState, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) byte() byte {
	if len(r.b) == 0 {
		r.err = errBadState
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// stateStore reads and commits producer states. It creates the table on
// first use; every method is safe for concurrent use.
type stateStore struct {
	ownTable
}

func newStateStore(src stateSource, acc *accumulator.Accumulator, path fluss.TablePath) *stateStore {
	return &stateStore{newOwnTable(src, acc, path, ownTableKind{what: "producer-state table", descriptor: stateDescriptor, properties: checkStateProperties})}
}

// stateDescriptor is the table the store creates when it is missing.
func stateDescriptor() *fluss.TableDescriptor {
	return &fluss.TableDescriptor{
		Schema:      stateSchema(),
		Comment:     "Kafka gateway: exactly-once producer states (docs/exactly-once.md)",
		BucketCount: stateBuckets,
		Properties: map[string]string{
			"table.merge-engine":                      "versioned",
			"table.merge-engine.versioned.ver-column": stateColVersion,
		},
	}
}

// checkStateProperties refuses a table without the versioned merge engine:
// a zombie's late commit could roll a state back.
func checkStateProperties(d *fluss.TableDescriptor) error {
	if d.Properties["table.merge-engine"] != "versioned" || d.Properties["table.merge-engine.versioned.ver-column"] != stateColVersion {
		return fmt.Errorf("must use the versioned merge engine on %q", stateColVersion)
	}
	return nil
}

func (s *stateStore) key(k producerKey) ([]byte, int32, error) {
	row := fluss.Row{fluss.IntDatum(k.id), fluss.StringDatum(k.topic), fluss.IntDatum(int64(k.partition)), {}, {}, {}, {}}
	key, err := s.keyEnc.Encode(nil, row)
	if err != nil {
		return nil, 0, fmt.Errorf("encode producer-state key: %w", err)
	}
	return key, fluss.BucketForKey(key, s.info.Descriptor.BucketCount), nil
}

// lookup reads the committed state of k from the bucket's leader, which
// has every acknowledged commit (the tablet server flushes a KV write
// before acknowledging it). ok is false when there is none.
func (s *stateStore) lookup(ctx context.Context, k producerKey) (p producerState, ok bool, err error) {
	if err := s.open(ctx); err != nil {
		return p, false, err
	}
	key, bucket, err := s.key(k)
	if err != nil {
		return p, false, err
	}
	vals, err := s.src.Lookup(ctx, s.info.TableID, fluss.NoPartition, bucket, [][]byte{key})
	if err != nil {
		return p, false, fmt.Errorf("look up producer state: %w", err)
	}
	if len(vals) != 1 || vals[0] == nil {
		return p, false, nil
	}
	_, row, err := fluss.DecodeValueRow(vals[0], &s.info.Descriptor.Schema, s.info.Descriptor.KvFormat())
	if err != nil {
		return p, false, fmt.Errorf("decode producer state: %w", err)
	}
	if len(row) != 7 {
		return p, false, fmt.Errorf("%w: %d columns", errBadState, len(row))
	}
	p.version, p.writerID, p.fingerprint = row[3].I, row[4].I, row[5].I
	if err := decodeState(row[6].B, &p); err != nil {
		return p, false, err
	}
	return p, true, nil
}

// commit queues an upsert of k's state; the handle completes once Fluss
// acknowledged it (or failed). It blocks only for writer buffer space.
func (s *stateStore) commit(ctx context.Context, k producerKey, p *producerState) (ack, error) {
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	key, bucket, err := s.key(k)
	if err != nil {
		return nil, err
	}
	row := fluss.Row{
		fluss.IntDatum(k.id), fluss.StringDatum(k.topic), fluss.IntDatum(int64(k.partition)),
		fluss.IntDatum(p.version), fluss.IntDatum(p.writerID), fluss.IntDatum(p.fingerprint),
		fluss.BytesDatum(appendState(nil, p)),
	}
	h, err := s.acc.Append(ctx, s.table, fluss.NoPartition, bucket, fluss.WriteUpsert, key, row)
	if err != nil {
		return nil, fmt.Errorf("commit producer state: %w", err)
	}
	return h, nil
}

var _ producerStore = (*stateStore)(nil)
