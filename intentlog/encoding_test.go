package intentlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fence"
)

func sampleIntents() []Intent {
	pp := ProducerPartition{ProducerID: 4001, Topic: "orders", Partition: 7}
	other := ProducerPartition{ProducerID: -1, Topic: "", Partition: 0}
	return []Intent{
		{
			Target:   Target{Writer: 1 << 40, Bucket: fence.Bucket{TableID: 12, PartitionID: -1, Bucket: 3, SchemaID: 2}},
			Sequence: 2147483647,
			From:     1 << 50,
			Parts: []Part{
				{Batch: Batch{ProducerPartition: pp, Epoch: 3, BaseSequence: 100, LastSequence: 104}, Records: Range{First: 0, Count: 3}},
				{Batch: Batch{ProducerPartition: other, Epoch: -1, BaseSequence: -5, LastSequence: 0}, Records: Range{First: 9, Count: 1}},
			},
		},
		{Target: Target{Writer: 5, Bucket: fence.Bucket{TableID: 1, PartitionID: 99, Bucket: 0, SchemaID: -32768}}, Parts: []Part{}},
	}
}

func TestEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	in := sampleIntents()
	b := Encode([]byte("x"), in)
	require.Equal(t, byte('x'), b[0], "Encode appends")
	got, err := Decode(b[1:])
	require.NoError(t, err)
	assert.Equal(t, in, got)

	empty, err := Decode(Encode(nil, nil))
	require.NoError(t, err)
	assert.Empty(t, empty)
}

func TestDecodeRefusesDamagedEntries(t *testing.T) {
	t.Parallel()
	b := Encode(nil, sampleIntents())
	for n := range len(b) {
		_, err := Decode(b[:n])
		assert.Error(t, err, "cut to %d of %d bytes", n, len(b))
	}
	_, err := Decode(append(b, 0))
	assert.ErrorContains(t, err, "1 bytes after the last intent")
	_, err = Decode(append([]byte{2}, b[1:]...))
	assert.ErrorContains(t, err, "unknown format 2")
	huge := append([]byte{formatV1}, 0xff, 0xff, 0xff, 0xff, 0x0f)
	_, err = Decode(huge)
	assert.ErrorContains(t, err, "larger than")
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil, sampleIntents()))
	f.Add([]byte{formatV1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(Encode(nil, in))
		require.NoError(t, err)
		if len(in) == 0 {
			assert.Empty(t, again)
			return
		}
		assert.Equal(t, in, again)
	})
}
