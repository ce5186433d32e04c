// Package flussdb gives a test a database of its own on the test binary's
// Fluss cluster (internal/flusstest), dropped at cleanup, with the table and
// read-back helpers the end-to-end tests share. Test-only; it is apart from
// flusstest because package fluss's own tests use flusstest, and this
// package imports fluss.
package flussdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// DB is one test's database: the cluster's address, an admin client and the
// database name.
type DB struct {
	Bootstrap string
	Client    *fluss.Client
	Name      string
}

// New creates a database named prefix_<random> and drops it, with the
// client, at cleanup.
func New(t *testing.T, prefix string) *DB {
	t.Helper()
	return NewOn(t, flusstest.Bootstrap(t), prefix)
}

// NewOn is New on the cluster at addr (e.g. a flusstest.StartCluster).
func NewOn(t *testing.T, addr, prefix string) *DB {
	t.Helper()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(addr, ","), RequestTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	db := UniqueName(prefix)
	require.NoError(t, c.CreateDatabase(Context(t), db, false))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.DropDatabase(ctx, db, true, true))
	})
	return &DB{Bootstrap: addr, Client: c, Name: db}
}

// CreateTable creates the table in the database and, unless it is
// partitioned, waits until every bucket has a leader. It returns
// "db.table".
func (d *DB) CreateTable(t *testing.T, name string, desc *fluss.TableDescriptor) string {
	t.Helper()
	path := fluss.TablePath{Database: d.Name, Table: name}
	if len(desc.PartitionKeys) == 0 {
		require.NoError(t, d.Client.CreateTableReady(Context(t), path, desc, 0), "create table %s", path)
	} else {
		require.NoError(t, d.Client.CreateTable(Context(t), path, desc, false), "create table %s", path)
	}
	return path.String()
}

// ScannedRow is one row of flusspy scan-log.
type ScannedRow struct {
	Partition  *string                    `json:"partition"`
	Bucket     int32                      `json:"bucket"`
	Offset     int64                      `json:"offset"`
	ChangeType string                     `json:"change_type"`
	Row        map[string]json.RawMessage `json:"row"`
}

// ScanLog reads every row of the table out of Fluss with pyfluss, an
// independent client.
func (d *DB) ScanLog(t *testing.T, table string) []ScannedRow {
	t.Helper()
	var out struct {
		Rows []ScannedRow `json:"rows"`
	}
	flusstest.PyFlussJSON(t, &out, d.Bootstrap, "scan-log", "--table", table)
	return out.Rows
}

// Context is the test's context bounded by 3 minutes.
func Context(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// UniqueName returns a Fluss-valid name unique to this run.
func UniqueName(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
