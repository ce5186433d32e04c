package fluss

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// wireField is one field of an encoded message: number and wire type.
type wireField struct {
	num protowire.Number
	typ protowire.Type
}

// wireFields lists the top-level fields of an encoded message in order.
func wireFields(t *testing.T, b []byte) []wireField {
	t.Helper()
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.GreaterOrEqual(t, n, 0)
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		require.GreaterOrEqual(t, n, 0)
		b = b[n:]
		out = append(out, wireField{num, typ})
	}
	return out
}

// TestFluss10FieldNumbers pins the field numbers and wire types of the
// fields Fluss 1.0 added, as the generated classes of the released
// fluss-client 1.0.0 jar declare them (the *_TAG constants: tag = number<<3
// | wire type).
func TestFluss10FieldNumbers(t *testing.T) {
	const (
		varint  = protowire.VarintType
		bytes   = protowire.BytesType
		fixed32 = protowire.Fixed32Type
	)
	tests := []struct {
		name string
		msg  proto.Message
		want []wireField
	}{
		{"PbProduceLogReqForBucket", &pb.PbProduceLogReqForBucket{
			PartitionId: proto.Int64(1), BucketId: proto.Int32(2), Records: []byte{1},
			OriginalPartitionName: proto.String("p"), RoutingBucketCount: proto.Int32(4),
		}, []wireField{{1, varint}, {2, varint}, {3, bytes}, {4, bytes}, {5, varint}}},
		{"PbPutKvReqForBucket", &pb.PbPutKvReqForBucket{
			PartitionId: proto.Int64(1), BucketId: proto.Int32(2), Records: []byte{1},
			OriginalPartitionName: proto.String("p"), RoutingBucketCount: proto.Int32(4),
		}, []wireField{{1, varint}, {2, varint}, {3, bytes}, {4, bytes}, {5, varint}}},
		{"PbLookupReqForBucket", &pb.PbLookupReqForBucket{
			PartitionId: proto.Int64(1), BucketId: proto.Int32(2), Keys: [][]byte{{1}},
			OriginalPartitionName: proto.String("p"), RoutingBucketCount: proto.Int32(4),
		}, []wireField{{1, varint}, {2, varint}, {3, bytes}, {4, bytes}, {5, varint}}},
		{"PbPutKvRespForBucket", &pb.PbPutKvRespForBucket{
			BucketId: proto.Int32(2), LogEndOffset: proto.Int64(3), Pressure: proto.Float32(0.5),
			OriginalPartitionName: proto.String("p"),
		}, []wireField{{2, varint}, {5, varint}, {6, fixed32}, {7, bytes}}},
		{"PbProduceLogRespForBucket", &pb.PbProduceLogRespForBucket{
			BucketId: proto.Int32(2), OriginalPartitionName: proto.String("p"),
		}, []wireField{{2, varint}, {6, bytes}}},
		{"PbLookupRespForBucket", &pb.PbLookupRespForBucket{
			BucketId: proto.Int32(2), OriginalPartitionName: proto.String("p"),
		}, []wireField{{2, varint}, {6, bytes}}},
		{"PbPartitionMetadata", &pb.PbPartitionMetadata{
			TableId: proto.Int64(1), PartitionName: proto.String("p"), PartitionId: proto.Int64(3), BucketCount: proto.Int32(4),
		}, []wireField{{1, varint}, {2, bytes}, {3, varint}, {5, varint}}},
		{"PbPartitionInfo", &pb.PbPartitionInfo{
			PartitionId: proto.Int64(1), PartitionSpec: &pb.PbPartitionSpec{}, RemoteDataDir: proto.String("d"), BucketCount: proto.Int32(4),
		}, []wireField{{1, varint}, {2, bytes}, {3, bytes}, {4, varint}}},
		{"PbTableMetadata", &pb.PbTableMetadata{
			TablePath: pbTablePath(TablePath{"d", "t"}), TableId: proto.Int64(1), SchemaId: proto.Int32(1), TableJson: []byte("{}"),
			CreatedTime: proto.Int64(1), ModifiedTime: proto.Int64(1), RemoteDataDir: proto.String("r"), BucketCountEpoch: proto.Int64(2),
		}, []wireField{{1, bytes}, {2, varint}, {3, varint}, {4, bytes}, {6, varint}, {7, varint}, {8, bytes}, {9, varint}}},
		{"PbBucketMetadata", &pb.PbBucketMetadata{
			BucketId: proto.Int32(0), LeaderId: proto.Int32(1), ReplicaId: []int32{1, 2}, LeaderEpoch: proto.Int32(3),
			BucketEpoch: proto.Int32(4), Isr: []int32{1},
		}, []wireField{{1, varint}, {2, varint}, {3, bytes}, {4, varint}, {5, varint}, {6, bytes}}},
		{"PbServerNode", &pb.PbServerNode{
			NodeId: proto.Int32(1), Host: proto.String("h"), Port: proto.Int32(2), Rack: proto.String("r"),
		}, []wireField{{1, varint}, {2, bytes}, {3, varint}, {5, bytes}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(tt.msg)
			require.NoError(t, err)
			assert.Equal(t, tt.want, wireFields(t, b))
		})
	}
}

// TestMetadataToleratesNewFields: a metadata answer with the 1.0 fields and
// with fields this client does not know, at every level, decodes and
// merges; rack, leader epochs, remote data dir and the per-partition count
// are read, unknown fields are ignored.
func TestMetadataToleratesNewFields(t *testing.T) {
	resp := &pb.MetadataResponse{
		CoordinatorServer: &pb.PbServerNode{NodeId: proto.Int32(0), Host: proto.String("c"), Port: proto.Int32(1), Rack: proto.String("r0")},
		TabletServers: []*pb.PbServerNode{
			{NodeId: proto.Int32(1), Host: proto.String("h"), Port: proto.Int32(2), Rack: proto.String("r1")},
		},
		TableMetadata: []*pb.PbTableMetadata{{
			TablePath: pbTablePath(TablePath{"db", "t"}), TableId: proto.Int64(42), SchemaId: proto.Int32(1),
			TableJson:   []byte(`{"version":1,"schema":{},"partition_key":["day"],"bucket_key":[],"bucket_count":3,"properties":{},"custom_properties":{},"new_thing":[1]}`),
			CreatedTime: proto.Int64(1), ModifiedTime: proto.Int64(1), RemoteDataDir: proto.String("/r"), BucketCountEpoch: proto.Int64(2),
		}},
		PartitionMetadata: []*pb.PbPartitionMetadata{{
			TableId: proto.Int64(42), PartitionName: proto.String("d1"), PartitionId: proto.Int64(9), BucketCount: proto.Int32(5),
			BucketMetadata: []*pb.PbBucketMetadata{
				{BucketId: proto.Int32(0), LeaderId: proto.Int32(1), LeaderEpoch: proto.Int32(7), BucketEpoch: proto.Int32(1), Isr: []int32{1}},
				{BucketId: proto.Int32(1), LeaderId: proto.Int32(1)},
			},
		}},
	}
	// unknown fields from a future server, in the answer and nested
	unknown := func(m proto.Message) {
		var b []byte
		b = protowire.AppendTag(b, 99, protowire.BytesType)
		b = protowire.AppendString(b, "future")
		b = protowire.AppendTag(b, 100, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
		m.ProtoReflect().SetUnknown(b)
	}
	unknown(resp)
	unknown(resp.TabletServers[0])
	unknown(resp.TableMetadata[0])
	unknown(resp.PartitionMetadata[0])
	unknown(resp.PartitionMetadata[0].BucketMetadata[0])
	wire, err := proto.Marshal(resp)
	require.NoError(t, err)

	var got pb.MetadataResponse
	require.NoError(t, proto.Unmarshal(wire, &got))
	s := emptySnapshot()
	mergeMetadata(s, &got)

	assert.Equal(t, "r1", s.servers[1].Rack)
	assert.Equal(t, "r0", s.coordinator.Rack)
	tm := s.tables[TablePath{"db", "t"}]
	assert.Equal(t, "/r", tm.remoteDataDir)
	assert.Equal(t, int64(2), tm.bucketCountEpoch)
	assert.Equal(t, int32(3), tm.descBuckets)
	assert.True(t, tm.partitioned)
	k := physicalKey{42, 9}
	assert.Equal(t, []int32{7, -1}, s.epochs[k])
	assert.Equal(t, []int32{1, 1}, s.leaders[k])
	n, ok := s.bucketCount(42, 9, false)
	assert.True(t, ok)
	assert.Equal(t, int32(5), n, "the 1.0 per-partition count wins over the 2 buckets listed")
	n, ok = s.bucketCount(42, NoPartition, false)
	assert.True(t, ok, "a partitioned table's own count comes from its descriptor")
	assert.Equal(t, int32(3), n)
	_, ok = s.bucketCount(42, 10, false)
	assert.False(t, ok, "an unknown partition needs metadata first")
	n, ok = s.bucketCount(42, 10, true)
	assert.True(t, ok)
	assert.Equal(t, int32(3), n, "after metadata without a count: the descriptor's")
}

// TestBucketCountFromListedBuckets: a 0.9.1 answer has no per-partition
// count; the number of buckets listed is the count, for partitions and
// non-partitioned tables.
func TestBucketCountFromListedBuckets(t *testing.T) {
	resp := &pb.MetadataResponse{
		TableMetadata: []*pb.PbTableMetadata{{
			TablePath: pbTablePath(TablePath{"db", "t"}), TableId: proto.Int64(1), SchemaId: proto.Int32(1), TableJson: []byte("not json"),
			CreatedTime: proto.Int64(1), ModifiedTime: proto.Int64(1),
			BucketMetadata: []*pb.PbBucketMetadata{bucketMeta(0, proto.Int32(1)), bucketMeta(1, nil), bucketMeta(2, nil)},
		}},
		PartitionMetadata: []*pb.PbPartitionMetadata{{
			TableId: proto.Int64(1), PartitionName: proto.String("p"), PartitionId: proto.Int64(4),
			BucketMetadata: []*pb.PbBucketMetadata{bucketMeta(0, proto.Int32(1)), bucketMeta(1, proto.Int32(1))},
		}},
	}
	s := emptySnapshot()
	mergeMetadata(s, resp)
	n, ok := s.bucketCount(1, NoPartition, false)
	assert.True(t, ok)
	assert.Equal(t, int32(3), n, "buckets without a leader count too")
	n, ok = s.bucketCount(1, 4, false)
	assert.True(t, ok)
	assert.Equal(t, int32(2), n)
	assert.Zero(t, s.tables[TablePath{"db", "t"}].descBuckets, "unreadable descriptor JSON is tolerated")
}

func TestClampPressure(t *testing.T) {
	nan := float32(0)
	nan /= nan
	for _, tc := range [][2]float32{{-1, 0}, {0, 0}, {0.3, 0.3}, {1, 1}, {7, 1}, {nan, 0}} {
		assert.Equal(t, tc[1], clampPressure(tc[0]), "%v", tc[0])
	}
}
