package transactions

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/owntable"
)

// The transactions table holds what instances must agree on about a
// transactional id (docs/transactions.md, "Design"): its claims (the
// producer id and epoch each InitProducerId handed out) and, per claim,
// each transaction's begin and outcome rows. It is a first_row table: a
// row, once written, never changes, so "write, then read back from the
// leader" tells every racer the same winner. The bucket key is the
// transactional id, so one Lookup request reads several rows of an id.

// defaultTxnTable is where transaction rows live unless configured.
var defaultTxnTable = fluss.TablePath{Database: "gateway", Table: "kafka_transactions"}

const (
	txnBuckets = 8
	// txnClaimRow is the txn column of a claim row; transaction n of a
	// claim has its begin row at 2n and its outcome row at 2n+1.
	txnClaimRow = -1
	txnColumns  = 11
)

// txnSchema is the transactions table.
func txnSchema() fluss.Schema {
	return fluss.Schema{
		Columns: []fluss.Column{
			{Name: "transactional_id", Type: fluss.String().NonNull()},
			{Name: "claim", Type: fluss.BigInt().NonNull()},
			{Name: "txn", Type: fluss.BigInt().NonNull()},
			{Name: "producer_id", Type: fluss.BigInt()},
			{Name: "epoch", Type: fluss.Int()},
			{Name: "timeout_ms", Type: fluss.Int()},
			{Name: "written_by", Type: fluss.BigInt()},
			{Name: "written_at_ms", Type: fluss.BigInt()},
			{Name: "outcome", Type: fluss.String()},
			{Name: "staging_offset", Type: fluss.BigInt()},
			{Name: "reason", Type: fluss.String()},
		},
		PrimaryKey: []string{"transactional_id", "claim", "txn"},
	}
}

// txnKey names one row of a transactional id.
type txnKey struct {
	claim, txn int64
}

// txnRow is one row of the transactions table. Fields a kind of row does
// not use are zero (written as nulls).
type txnRow struct {
	id         string
	key        txnKey
	producerID int64
	epoch      int16
	timeoutMs  int32
	// writtenBy is the writer's random number: the row read back names
	// the race's winner.
	writtenBy     int64
	writtenAtMs   int64
	outcome       string // outcome rows: "commit" or "abort"
	stagingOffset int64
	reason        string
}

// txnRows is what the transaction code needs from the table.
type txnRows interface {
	// insert writes r unless a row with its key exists (first_row), and
	// returns once Fluss acknowledged it, so that a following get on the
	// leader sees whichever row won.
	insert(ctx context.Context, r *txnRow) error
	// get looks up keys of one transactional id; a missing row is nil.
	get(ctx context.Context, id string, keys []txnKey) ([]*txnRow, error)
}

// txnTable is txnRows on Fluss. It creates the table on first use; its
// methods are safe for concurrent use.
type txnTable struct {
	owntable.Table
}

func newTxnTable(src owntable.Source, acc *accumulator.Accumulator, path fluss.TablePath) *txnTable {
	return &txnTable{owntable.New(src, acc, path, owntable.Kind{What: "transactions table", Descriptor: txnDescriptor,
		Properties: checkTxnProperties, NoLinger: true})}
}

func txnDescriptor() *fluss.TableDescriptor {
	return &fluss.TableDescriptor{
		Schema:      txnSchema(),
		Comment:     "Kafka gateway: transactional ids' claims and transaction outcomes (docs/transactions.md)",
		BucketKeys:  []string{"transactional_id"},
		BucketCount: txnBuckets,
		// Uncompressed change log: nothing reads it, and ZSTD on every claim's
		// and outcome's few rows costs the tablet server CPU (exactly once's
		// cost of the state table's change log).
		Properties: map[string]string{
			"table.merge-engine":       "first_row",
			fluss.PropArrowCompression: string(fluss.ArrowCompressionNone),
		},
	}
}

// checkTxnProperties refuses a table without first_row: a second claim of
// an epoch would replace the first, and two producers would hold it.
func checkTxnProperties(d *fluss.TableDescriptor) error {
	if d.Properties["table.merge-engine"] != "first_row" {
		return errors.New("must use the first_row merge engine")
	}
	return nil
}

// bucket is the bucket of every row of id.
func (t *txnTable) bucket(id string) (int32, error) {
	row := make(fluss.Row, txnColumns)
	row[0] = fluss.StringDatum(id)
	b, err := t.BucketEnc.Encode(nil, row)
	if err != nil {
		return 0, fmt.Errorf("encode transactional id %q: %w", id, err)
	}
	return fluss.BucketForKey(b, t.Info.Descriptor.BucketCount), nil
}

func (t *txnTable) key(id string, k txnKey) ([]byte, error) {
	row := make(fluss.Row, txnColumns)
	row[0], row[1], row[2] = fluss.StringDatum(id), fluss.IntDatum(k.claim), fluss.IntDatum(k.txn)
	b, err := t.KeyEnc.Encode(nil, row)
	if err != nil {
		return nil, fmt.Errorf("encode transaction row key: %w", err)
	}
	return b, nil
}

func (t *txnTable) insert(ctx context.Context, r *txnRow) error {
	if err := t.Open(ctx); err != nil {
		return err
	}
	key, err := t.key(r.id, r.key)
	if err != nil {
		return err
	}
	bucket, err := t.bucket(r.id)
	if err != nil {
		return err
	}
	h, err := t.Acc.Append(ctx, t.Writer, fluss.NoPartition, bucket, fluss.WriteUpsert, key, r.fluss())
	if err != nil {
		return fmt.Errorf("write transaction row %s %+v: %w", r.id, r.key, err)
	}
	if _, err := h.Wait(ctx); err != nil {
		return fmt.Errorf("write transaction row %s %+v: %w", r.id, r.key, err)
	}
	return nil
}

func (t *txnTable) get(ctx context.Context, id string, keys []txnKey) ([]*txnRow, error) {
	if err := t.Open(ctx); err != nil {
		return nil, err
	}
	bucket, err := t.bucket(id)
	if err != nil {
		return nil, err
	}
	enc := make([][]byte, len(keys))
	for i, k := range keys {
		if enc[i], err = t.key(id, k); err != nil {
			return nil, err
		}
	}
	vals, err := t.Source.Lookup(ctx, t.Info.TableID, fluss.NoPartition, bucket, enc)
	if err != nil {
		return nil, fmt.Errorf("look up transaction rows of %q: %w", id, err)
	}
	if len(vals) != len(keys) {
		return nil, fmt.Errorf("look up transaction rows of %q: %d answers for %d keys", id, len(vals), len(keys))
	}
	out := make([]*txnRow, len(keys))
	for i, v := range vals {
		if v == nil {
			continue
		}
		_, row, err := fluss.DecodeValueRow(v, &t.Info.Descriptor.Schema, t.Info.Descriptor.KvFormat())
		if err != nil {
			return nil, fmt.Errorf("decode transaction row of %q: %w", id, err)
		}
		r, err := txnRowFrom(row)
		if err != nil {
			return nil, fmt.Errorf("transaction row of %q: %w", id, err)
		}
		if r.id != id || r.key != keys[i] {
			return nil, fmt.Errorf("transaction row of %q: asked %+v, read %q %+v", id, keys[i], r.id, r.key)
		}
		out[i] = r
	}
	return out, nil
}

// fluss is r as a table row; zero values of optional columns are nulls.
func (r *txnRow) fluss() fluss.Row {
	row := make(fluss.Row, txnColumns)
	row[0], row[1], row[2] = fluss.StringDatum(r.id), fluss.IntDatum(r.key.claim), fluss.IntDatum(r.key.txn)
	row[3], row[4], row[5] = fluss.IntDatum(r.producerID), fluss.IntDatum(int64(r.epoch)), fluss.IntDatum(int64(r.timeoutMs))
	row[6], row[7] = fluss.IntDatum(r.writtenBy), fluss.IntDatum(r.writtenAtMs)
	row[8], row[9], row[10] = fluss.Datum{Null: true}, fluss.IntDatum(r.stagingOffset), fluss.Datum{Null: true}
	if r.outcome != "" {
		row[8] = fluss.StringDatum(r.outcome)
	}
	if r.reason != "" {
		row[10] = fluss.StringDatum(r.reason)
	}
	return row
}

func txnRowFrom(row fluss.Row) (*txnRow, error) {
	if len(row) != txnColumns {
		return nil, fmt.Errorf("%d columns, want %d", len(row), txnColumns)
	}
	return &txnRow{
		id:            string(row[0].B),
		key:           txnKey{claim: row[1].I, txn: row[2].I},
		producerID:    row[3].I,
		epoch:         int16(row[4].I),
		timeoutMs:     int32(row[5].I),
		writtenBy:     row[6].I,
		writtenAtMs:   row[7].I,
		outcome:       string(row[8].B),
		stagingOffset: row[9].I,
		reason:        string(row[10].B),
	}, nil
}

var _ txnRows = (*txnTable)(nil)
