package transactions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Staged records decode to what was staged: null and empty keys and
// values, headers (a null header value included), timestamps and offset
// deltas; truncated or trailing bytes are refused.
func TestStagedRecordsRoundTrip(t *testing.T) {
	recs := []kafkaproto.Record{
		{OffsetDelta: 0, Timestamp: 1_700_000_000_123, Key: []byte("k"), Value: []byte(`{"a":1}`)},
		{OffsetDelta: 1, Timestamp: -1, Key: nil, Value: nil, Headers: []kafkaproto.Header{{Key: "h", Value: []byte("v")}, {Key: "n", Value: nil}}},
		{OffsetDelta: 2, Timestamp: 0, Key: []byte{}, Value: []byte{}},
	}
	enc := appendStaged(nil, nil, recs)
	txn, got, err := decodeStaged(enc, len(recs))
	require.NoError(t, err)
	assert.Nil(t, txn, "codec 1 names no transaction")
	require.Len(t, got, 3)
	for i := range recs {
		want := recs[i]
		want.Index = int32(i)
		assert.Equal(t, want.OffsetDelta, got[i].OffsetDelta)
		assert.Equal(t, want.Timestamp, got[i].Timestamp)
		assert.Equal(t, want.Key == nil, got[i].Key == nil, "record %d key null", i)
		assert.Equal(t, want.Value == nil, got[i].Value == nil, "record %d value null", i)
		assert.Equal(t, string(want.Key), string(got[i].Key))
		assert.Equal(t, string(want.Value), string(got[i].Value))
		assert.Equal(t, int32(i), got[i].Index)
	}
	assert.Equal(t, "v", string(got[1].Headers[0].Value))
	assert.Nil(t, got[1].Headers[1].Value)

	_, _, err = decodeStaged(enc[:len(enc)-1], len(recs))
	assert.ErrorIs(t, err, errBadStaged)
	_, _, err = decodeStaged(append(enc, 0), len(recs))
	assert.ErrorIs(t, err, errBadStaged)
	_, _, err = decodeStaged(enc, len(recs)+1)
	assert.ErrorIs(t, err, errBadStaged)

	// Codec 2 names the transaction, and the records decode the same.
	tagged := appendStaged(nil, &txnTag{claim: 3, n: 300}, recs)
	txn, got2, err := decodeStaged(tagged, len(recs))
	require.NoError(t, err)
	require.NotNil(t, txn)
	assert.Equal(t, txnTag{claim: 3, n: 300}, *txn)
	assert.Equal(t, got, got2)
	_, _, err = decodeStaged(tagged[:3], len(recs))
	assert.ErrorIs(t, err, errBadStaged)
	_, _, err = decodeStaged(append([]byte{9}, enc[1:]...), len(recs))
	assert.ErrorIs(t, err, errBadStaged, "an unknown codec")
}
