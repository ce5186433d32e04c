package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in   string
		want fluss.DataType
	}{
		{"BIGINT", fluss.BigInt()},
		{"int", fluss.Int()},
		{"STRING NOT NULL", fluss.String().NonNull()},
		{"string  not   null", fluss.String().NonNull()},
		{"DECIMAL(10, 2)", fluss.Decimal(10, 2)},
		{"DECIMAL(5)", fluss.Decimal(5, 0)},
		{"TIMESTAMP_LTZ(3)", fluss.TimestampLTZ(3)},
		{"TIMESTAMP", fluss.Timestamp(6)},
		{"CHAR(4)", fluss.Char(4)},
		{"BINARY(16) NOT NULL", fluss.Binary(16).NonNull()},
		{"TIME(3)", fluss.Time(3)},
		{"bytes", fluss.Bytes()},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseType(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseTypeErrors(t *testing.T) {
	for _, in := range []string{"", "ARRAY<INT>", "DECIMAL(1,2,3)", "CHAR(x)", "BIGINT(3)", "TIMESTAMP(3", "CHAR(1,2)"} {
		t.Run(in, func(t *testing.T) {
			_, err := parseType(in)
			require.Error(t, err)
		})
	}
}

func TestParseTables(t *testing.T) {
	tables, err := parseTables([]byte(`
tables:
  - table: shop.customers
    columns:
      - {name: id, type: STRING NOT NULL}
      - {name: amount, type: "DECIMAL(10,2)"}
    primary_key: [id]
    buckets: 3
    properties: {table.log.format: INDEXED}
  - table: shop.clicks
    columns: [{name: dt, type: STRING}]
    partition_keys: [dt]
`))
	require.NoError(t, err)
	require.Len(t, tables, 2)
	assert.Equal(t, fluss.TablePath{Database: "shop", Table: "customers"}, tables[0].path)
	assert.Equal(t, []string{"id"}, tables[0].desc.Schema.PrimaryKey)
	assert.Equal(t, 3, tables[0].desc.BucketCount)
	assert.Equal(t, "INDEXED", tables[0].desc.Properties["table.log.format"])
	assert.Equal(t, fluss.Decimal(10, 2), tables[0].desc.Schema.Columns[1].Type)
	assert.Equal(t, []string{"dt"}, tables[1].desc.PartitionKeys)

	for _, bad := range []string{
		"tables: []",
		"tables: [{table: nodot, columns: [{name: a, type: INT}]}]",
		"tables: [{table: a.b}]",
		"tables: [{table: a.b, columns: [{name: a, type: NOPE}]}]",
		"tables: [{table: a.b, colums: []}]",
	} {
		_, err := parseTables([]byte(bad))
		assert.Error(t, err, bad)
	}
}
