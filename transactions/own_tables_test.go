package transactions

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/writertest"
	"github.com/fluss-kafka/gateway/owntable"
	"github.com/fluss-kafka/gateway/producerstate"
)

// ownTables is a Fluss with at most one table, for the gateway's own
// tables: it records what the store asked of it.
type ownTables struct {
	info               *fluss.TableInfo // nil: the table does not exist
	id                 int64            // of the table created
	databases, creates int
	waits              int
}

func (o *ownTables) TableInfo(_ context.Context, path fluss.TablePath) (*fluss.TableInfo, error) {
	if o.info == nil {
		return nil, fluss.ErrTableNotExist
	}
	return o.info, nil
}

func (o *ownTables) CreateDatabase(context.Context, string, bool) error { o.databases++; return nil }

func (o *ownTables) CreateTable(_ context.Context, path fluss.TablePath, d *fluss.TableDescriptor, _ bool) error {
	o.creates++
	o.info = &fluss.TableInfo{TableID: o.id, SchemaID: 1, Path: path, Descriptor: *d}
	if o.info.Descriptor.HasPrimaryKey() && len(o.info.Descriptor.BucketKeys) == 0 {
		o.info.Descriptor.BucketKeys = o.info.Descriptor.Schema.PrimaryKey // as Fluss fills it in
	}
	return nil
}

func (o *ownTables) WaitForTableLeaders(context.Context, fluss.TablePath, ...int64) error {
	o.waits++
	return nil
}

func (o *ownTables) Lookup(context.Context, int64, int64, int32, [][]byte) ([][]byte, error) {
	return nil, nil
}

// Each of the gateway's own tables is created when missing (database,
// table, leaders awaited), opened once, and registered with the writer;
// an existing table of another shape or without the property the code
// relies on is refused, naming the table and what is wrong.
func TestOwnTablesOpen(t *testing.T) {
	w, err := writertest.New(writertest.Defaults(), writertest.AckTransport{})
	require.NoError(t, err)
	path := fluss.TablePath{Database: "gateway", Table: "own"}
	for _, tc := range []struct {
		name    string
		open    func(src owntable.Source) *owntable.Table
		reshape func(d *fluss.TableDescriptor) // an existing table of another shape
		unprop  func(d *fluss.TableDescriptor) // an existing table without the property
		prop    string
	}{
		{"producer states", func(src owntable.Source) *owntable.Table {
			return &producerstate.New(noPartitions{src}, w.Accumulator, path).Table
		},
			func(d *fluss.TableDescriptor) { d.Schema.Columns[1].Name = "other" },
			func(d *fluss.TableDescriptor) { d.Properties = nil }, "versioned merge engine"},
		{"transactions", func(src owntable.Source) *owntable.Table { return &newTxnTable(src, w.Accumulator, path).Table },
			func(d *fluss.TableDescriptor) { d.BucketKeys = []string{"producer_id"} },
			func(d *fluss.TableDescriptor) { d.Properties = map[string]string{"table.merge-engine": "versioned"} }, "first_row"},
		{"staging", func(src owntable.Source) *owntable.Table {
			return &newStagingLog(stagingTables{src.(*ownTables)}, w.Accumulator, path).Table
		},
			func(d *fluss.TableDescriptor) { d.Schema.Columns = d.Schema.Columns[1:] },
			func(d *fluss.TableDescriptor) { d.Properties = nil }, "INDEXED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &ownTables{id: int64(len(tc.name))} // a table id of its own in the shared writer
			o := tc.open(src)
			require.NoError(t, o.Open(t.Context()))
			require.NoError(t, o.Open(t.Context()), "opened once")
			waits := 1
			if o.Info.Descriptor.IsPartitioned() {
				waits = 0 // no buckets until a partition is made
			}
			assert.Equal(t, []int{1, 1, waits}, []int{src.databases, src.creates, src.waits})
			require.NotNil(t, o.Writer, "registered with the writer")
			assert.Equal(t, path, o.Writer.Path())
			assert.Equal(t, o.Info.Descriptor.HasPrimaryKey(), o.KeyEnc != nil)

			for what, change := range map[string]func(*fluss.TableDescriptor){"shape": tc.reshape, "property": tc.unprop} {
				existing := &ownTables{info: &fluss.TableInfo{TableID: 78, Path: path, Descriptor: *o.Kind.Descriptor()}}
				change(&existing.info.Descriptor)
				err := tc.open(existing).Open(t.Context())
				require.Error(t, err, what)
				assert.Contains(t, err.Error(), o.Kind.What+" "+path.String(), what)
				if what == "property" {
					assert.Contains(t, err.Error(), tc.prop)
				}
				assert.Zero(t, existing.creates, "an existing table is never created")
			}
		})
	}
}

// stagingTables is ownTables with the staging log's reads (not used here).
type stagingTables struct{ *ownTables }

func (stagingTables) ListOffsets(context.Context, int64, int64, []int32, fluss.OffsetSpec) (map[int32]int64, error) {
	return nil, nil
}

func (stagingTables) FetchLog(context.Context, *fluss.FetchLogRequest) ([]fluss.FetchedBucket, error) {
	return nil, nil
}

// noPartitions is a Source whose table has no partitions (Table.Open
// makes none).
type noPartitions struct{ owntable.Source }

func (noPartitions) ListPartitionInfos(context.Context, fluss.TablePath) ([]fluss.PartitionInfo, error) {
	return nil, nil
}

func (noPartitions) CreatePartition(context.Context, fluss.TablePath, fluss.PartitionSpec, bool) error {
	return errors.New("no partitions here")
}

func (noPartitions) DropPartition(context.Context, fluss.TablePath, fluss.PartitionSpec, bool) error {
	return errors.New("no partitions here")
}

// The transactions table is created with an uncompressed change log, and a
// table made by an earlier version (ZSTD) still passes the check.
func TestTxnTableChangeLogIsNotCompressed(t *testing.T) {
	d := txnDescriptor()
	require.NoError(t, checkTxnProperties(d))
	assert.Equal(t, fluss.ArrowCompressionNone, d.ArrowCompression())

	delete(d.Properties, fluss.PropArrowCompression)
	assert.NoError(t, checkTxnProperties(d), "a transactions table of an earlier version is still used")
}
