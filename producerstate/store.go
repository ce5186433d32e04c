package producerstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/owntable"
)

// The table keeps, per Kafka producer-partition of an
// exactly-once route, what a gateway instance needs to carry on where
// another one stopped (docs/exactly-once.md, design C): the Fluss writer id
// of the producer-partition, the last Fluss batch sequence per target
// bucket, the next Kafka sequence and the last committed batches. Rows are
// upserted through the writer (batched with other commits) and looked up
// on a producer-partition's first batch on an instance. The versioned
// merge engine on the version column keeps a late commit of a crashed or
// partitioned instance from rolling a row back.

// DefaultTable is where the producer states live unless configured.
var DefaultTable = fluss.TablePath{Database: "gateway", Table: "kafka_producer_states"}

// LegacyTable is where versions before generations kept the producer
// states (one table, never swept): read, when it exists, for a
// producer-partition no generation holds, so that an upgrade keeps every
// producer exact. It is never written; drop it once the expiration has
// passed since the upgrade.
var LegacyTable = fluss.TablePath{Database: "gateway", Table: "kafka_producer_state"}

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
			{Name: genColumn, Type: fluss.String().NonNull()},
		},
		PrimaryKey: []string{"producer_id", "topic", "kafka_partition", genColumn},
	}
}

// legacySchema is the table before generations: no generation column.
func legacySchema() fluss.Schema {
	sch := stateSchema()
	sch.Columns = sch.Columns[:len(sch.Columns)-1]
	sch.PrimaryKey = sch.PrimaryKey[:len(sch.PrimaryKey)-1]
	return sch
}

// Target is one Fluss bucket a producer-partition's rows go to.
type Target struct {
	TableID, PartitionID int64
	Bucket               int32
}

// Batch is one Kafka batch in a producer state's window.
type Batch struct {
	First, Last int32
	Offset      int64 // the Kafka base offset it was answered with
}

// State is the content of one state row.
type State struct {
	Version     int64 // state changes so far: each batch, and each new writer id
	WriterID    int64
	Fingerprint int64
	Epoch       int16
	Known       bool  // a batch was admitted: nextSeq holds
	NextSeq     int32 // the baseSequence the next new batch must carry
	Targets     map[Target]int32
	Window      []Batch // oldest first, at most kafkaproto.SequenceWindow
}

// Clone returns a deep copy.
func (p *State) Clone() State {
	c := *p
	c.Targets = make(map[Target]int32, len(p.Targets))
	for k, v := range p.Targets {
		c.Targets[k] = v
	}
	c.Window = slices.Clone(p.Window)
	return c
}

// appendState encodes the state column: codec byte, epoch, known, next
// sequence, the window, then the targets (sorted, so equal states encode
// equally).
func appendState(dst []byte, p *State) []byte {
	dst = append(dst, stateCodecV1)
	dst = binary.AppendVarint(dst, int64(p.Epoch))
	known := byte(0)
	if p.Known {
		known = 1
	}
	dst = append(dst, known)
	dst = binary.AppendVarint(dst, int64(p.NextSeq))
	dst = binary.AppendUvarint(dst, uint64(len(p.Window)))
	for _, w := range p.Window {
		dst = binary.AppendVarint(dst, int64(w.First))
		dst = binary.AppendVarint(dst, int64(w.Last))
		dst = binary.AppendVarint(dst, w.Offset)
	}
	keys := make([]Target, 0, len(p.Targets))
	for k := range p.Targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Target) int {
		switch {
		case a.TableID != b.TableID:
			return cmpInt(a.TableID, b.TableID)
		case a.PartitionID != b.PartitionID:
			return cmpInt(a.PartitionID, b.PartitionID)
		}
		return cmpInt(int64(a.Bucket), int64(b.Bucket))
	})
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = binary.AppendVarint(dst, k.TableID)
		dst = binary.AppendVarint(dst, k.PartitionID)
		dst = binary.AppendVarint(dst, int64(k.Bucket))
		dst = binary.AppendVarint(dst, int64(p.Targets[k]))
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
func decodeState(b []byte, p *State) error {
	if len(b) == 0 || b[0] != stateCodecV1 {
		return fmt.Errorf("%w: unknown codec", errBadState)
	}
	r := owntable.Reader{B: b[1:]}
	p.Epoch = int16(r.Varint())
	p.Known = r.Byte() == 1
	p.NextSeq = int32(r.Varint())
	n := r.Uvarint()
	if n > kafkaproto.SequenceWindow {
		return fmt.Errorf("%w: window of %d", errBadState, n)
	}
	p.Window = make([]Batch, 0, n)
	for range n {
		p.Window = append(p.Window, Batch{First: int32(r.Varint()), Last: int32(r.Varint()), Offset: r.Varint()})
	}
	n = r.Uvarint()
	if n > uint64(len(b)) {
		return fmt.Errorf("%w: %d targets", errBadState, n)
	}
	p.Targets = make(map[Target]int32, n)
	for range n {
		k := Target{TableID: r.Varint(), PartitionID: r.Varint(), Bucket: int32(r.Varint())}
		p.Targets[k] = int32(r.Varint())
	}
	if r.Err != nil || len(r.B) != 0 {
		return fmt.Errorf("%w: truncated or trailing bytes", errBadState)
	}
	return nil
}

// Store reads and commits producer states. It creates the table on
// first use; every method is safe for concurrent use.
type Store struct {
	owntable.Table
	// Expiration is how long a producer-partition's state outlives its
	// last commit, at least (at most twice that): the cluster's
	// server.writer-id.expiration-time. Set before first use.
	Expiration time.Duration
	Log        *slog.Logger
	// Legacy is the table of an earlier version read for states no
	// generation holds (LegacyTable with the default table; zero: none).
	Legacy fluss.TablePath
	now    func() time.Time

	src Source
	// partitionOnline bounds the wait for a new generation's bucket
	// leaders (newPartitionOnline; ensure).
	partitionOnline time.Duration
	lookups         groupedLookups
	gens            generations
	legacy          *owntable.Table // nil: none (or not looked for yet)
	noOld           bool            // the legacy table does not exist
	suspects        suspects        // buckets whose commits stalled (slots.go)
	hedgeAfter      time.Duration   // a commit's stall before its next slot's copy
	// onHedge counts commits written to another slot because theirs
	// stalled (nil: not counted).
	onHedge func()
}

// OnHedge has f called for every commit copy written to another slot
// because the copies before it stalled. Set before first use.
func (s *Store) OnHedge(f func()) { s.onHedge = f }

func (s *Store) hedged() {
	if s.onHedge != nil {
		s.onHedge()
	}
}

func New(src Source, acc *accumulator.Accumulator, path fluss.TablePath) *Store {
	s := &Store{
		Table:      owntable.New(src, acc, path, owntable.Kind{What: "producer-state table", Descriptor: stateDescriptor, Properties: checkStateProperties}),
		Expiration: DefaultExpiration,
		Log:        slog.New(slog.DiscardHandler),
		now:        time.Now,
		src:        src,

		partitionOnline: newPartitionOnline,
		hedgeAfter:      defaultHedgeAfter,
	}
	if path == DefaultTable {
		s.Legacy = LegacyTable
	}
	return s
}

// stateDescriptor is the table the store creates when it is missing.
//
// Its change log is not compressed: every commit makes the tablet server
// build a change-log batch of one or two rows of about 100 bytes, and with
// Fluss's default ZSTD a fifth of the server's CPU on the default path
// went to compressing those (docs/exactly-once.md, 5.10). Nothing reads
// the change log; lookups read the rows.
func stateDescriptor() *fluss.TableDescriptor {
	d := legacyDescriptor()
	d.Schema = stateSchema()
	d.PartitionKeys = []string{genColumn}
	d.BucketKeys = []string{"producer_id", "topic", "kafka_partition"}
	d.Properties[fluss.PropArrowCompression] = string(fluss.ArrowCompressionNone)
	return d
}

// legacyDescriptor is the table before generations.
func legacyDescriptor() *fluss.TableDescriptor {
	return &fluss.TableDescriptor{
		Schema:      legacySchema(),
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

// Open makes sure the table and its current generation exist, and looks
// for the legacy table once.
func (s *Store) Open(ctx context.Context) error {
	_, _, err := s.current(ctx)
	return err
}

// current opens the store (Open) and returns the current generation and
// its partition id.
func (s *Store) current(ctx context.Context) (gen, partition int64, err error) {
	if err := s.Table.Open(ctx); err != nil {
		return 0, 0, err
	}
	gen = s.generation(s.now())
	if partition, err = s.ensure(ctx, gen); err != nil {
		return 0, 0, err
	}
	s.tend(gen)
	return gen, partition, s.openLegacy(ctx)
}

// openLegacy opens the legacy table when it exists, once.
func (s *Store) openLegacy(ctx context.Context) error {
	s.gens.mu.Lock()
	defer s.gens.mu.Unlock()
	if s.legacy != nil || s.noOld || s.Legacy == (fluss.TablePath{}) {
		return nil
	}
	legacy := owntable.New(s.src, s.Acc, s.Legacy, owntable.Kind{What: "legacy producer-state table", Descriptor: legacyDescriptor,
		Properties: checkStateProperties, ReadOnly: true})
	switch err := legacy.Open(ctx); {
	case errors.Is(err, fluss.ErrTableNotExist):
		s.noOld = true
	case err != nil:
		return err
	default:
		s.legacy = &legacy
		s.Log.Info("producer states are also read from the table of an earlier version until it is dropped",
			slog.String("table", s.Legacy.String()))
	}
	return nil
}

// key encodes k's key in slot n (the same bytes in both tables: the
// generation is a partition key, outside the key) and its bucket.
func (s *Store) key(k Key, n int) ([]byte, int32, error) {
	row := make(fluss.Row, len(s.Info.Descriptor.Schema.Columns))
	row[0], row[1], row[2] = fluss.IntDatum(k.ProducerID), fluss.StringDatum(slotTopic(k.Topic, n)), fluss.IntDatum(int64(k.Partition))
	key, err := s.KeyEnc.Encode(nil, row)
	if err != nil {
		return nil, 0, fmt.Errorf("encode producer-state key: %w", err)
	}
	return key, fluss.BucketForKey(key, s.Info.Descriptor.BucketCount), nil
}

// Lookup reads the committed state of k from the buckets' leaders, which
// have every acknowledged commit (the tablet server flushes a KV write
// before acknowledging it), in every slot of the generations that may
// hold it, and keeps the highest version. ok is false when there is none.
func (s *Store) Lookup(ctx context.Context, k Key) (p State, ok bool, err error) {
	g, _, err := s.current(ctx)
	if err != nil {
		return p, false, err
	}
	var keys [stateSlots][]byte
	var buckets [stateSlots]int32
	for n := range stateSlots {
		if keys[n], buckets[n], err = s.key(k, n); err != nil {
			return p, false, err
		}
	}
	ids, err := s.existing(ctx, g-1, g, g+1)
	if err != nil {
		return p, false, err
	}
	type found struct {
		p   State
		ok  bool
		err error
	}
	res := make([]found, len(ids)*stateSlots)
	var wg sync.WaitGroup
	i := 0
	for gen, id := range ids {
		for n := range stateSlots {
			f := &res[i]
			i++
			wg.Go(func() {
				f.p, f.ok, f.err = s.lookupIn(ctx, &s.Table, id, buckets[n], keys[n])
				if errors.Is(f.err, fluss.ErrPartitionNotExists) {
					// Dropped meanwhile by an instance whose clock is ahead:
					// its rows are past the expiration.
					s.forget(gen)
					f.err = nil
				}
			})
		}
	}
	wg.Wait()
	for _, f := range res {
		switch {
		case f.err != nil:
			return State{}, false, f.err
		case f.ok && (!ok || f.p.Version > p.Version):
			p, ok = f.p, true
		}
	}
	s.gens.mu.Lock()
	legacy := s.legacy
	s.gens.mu.Unlock()
	if ok || legacy == nil {
		return p, ok, nil
	}
	return s.lookupIn(ctx, legacy, fluss.NoPartition, buckets[0], keys[0])
}

// lookupIn reads key's row from one partition of t (a generation of the
// table, or the legacy table), grouped with the other lookups of the
// bucket.
func (s *Store) lookupIn(ctx context.Context, t *owntable.Table, partition int64, bucket int32, key []byte) (p State, ok bool, err error) {
	at := bucketRef{TableID: t.Info.TableID, PartitionID: partition, Bucket: bucket}
	val, err := s.lookups.lookup(ctx, at, key, func(ctx context.Context, keys [][]byte) ([][]byte, error) {
		return s.src.Lookup(ctx, at.TableID, at.PartitionID, at.Bucket, keys)
	})
	if err != nil {
		return p, false, fmt.Errorf("look up producer state: %w", err)
	}
	if val == nil {
		return p, false, nil
	}
	sch := &t.Info.Descriptor.Schema
	_, row, err := fluss.DecodeValueRow(val, sch, t.Info.Descriptor.KvFormat())
	if err != nil {
		return p, false, fmt.Errorf("decode producer state: %w", err)
	}
	if len(row) != len(sch.Columns) || len(row) < 7 {
		return p, false, fmt.Errorf("%w: %d columns", errBadState, len(row))
	}
	p.Version, p.WriterID, p.Fingerprint = row[3].I, row[4].I, row[5].I
	if err := decodeState(row[6].B, &p); err != nil {
		return p, false, err
	}
	return p, true, nil
}

// Commit queues an upsert of k's state into the current generation, in
// the first slot whose bucket has not stalled (slots.go); the returned
// Ack completes once Fluss acknowledged one copy (or every copy failed),
// writing the next slot's copy while they stall. Commit blocks only for
// writer buffer space, or when the generation must be made.
func (s *Store) Commit(ctx context.Context, k Key, p *State) (Ack, error) {
	g, id, err := s.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit producer state: %w", err)
	}
	// Encoded now: a hedged copy is written after Commit returned, when
	// the caller may have moved on from p.
	state, version, writer, fingerprint := appendState(nil, p), p.Version, p.WriterID, p.Fingerprint
	gen := genSpec(g)[0].Value
	write := func(ctx context.Context, n int) (bucketRef, Ack, error) {
		key, bucket, err := s.key(k, n)
		if err != nil {
			return bucketRef{}, nil, err
		}
		row := fluss.Row{
			fluss.IntDatum(k.ProducerID), fluss.StringDatum(slotTopic(k.Topic, n)), fluss.IntDatum(int64(k.Partition)),
			fluss.IntDatum(version), fluss.IntDatum(writer), fluss.IntDatum(fingerprint),
			fluss.BytesDatum(state), fluss.StringDatum(gen),
		}
		h, err := s.Acc.Append(ctx, s.Writer, id, bucket, fluss.WriteUpsert, key, row)
		if err != nil {
			return bucketRef{}, nil, fmt.Errorf("commit producer state: %w", err)
		}
		return bucketRef{TableID: s.Info.TableID, PartitionID: id, Bucket: bucket}, h, nil
	}
	a := &hedgedAck{s: s, write: write}
	if !s.suspects.none() {
		var ats [stateSlots]bucketRef
		for n := range stateSlots {
			_, b, err := s.key(k, n)
			if err != nil {
				return nil, err
			}
			ats[n] = bucketRef{TableID: s.Info.TableID, PartitionID: id, Bucket: b}
		}
		a.first = s.firstSlot(ats)
	}
	// The first copy is written now, so that a refused write (no buffer
	// space before ctx ended) is this call's error.
	a.tried = 1
	at, h, err := write(ctx, a.first)
	if err != nil {
		return nil, err
	}
	a.copies = append(a.copies, slotWrite{at: at, h: h, done: doneOf(h)})
	return a, nil
}

// Key is a producer-partition: the unit of Kafka idempotence.
type Key struct {
	ProducerID int64
	Topic      string
	Partition  int32
}

// Ack is a queued write's acknowledgement (accumulator.Handle).
type Ack interface {
	Wait(ctx context.Context) (int64, error)
}
