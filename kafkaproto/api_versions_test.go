package kafkaproto_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

type apiKeyRange struct{ key, min, max int16 }

// The table the gateway must advertise (what the producer clients ask for and need).
var wantAPIs = []apiKeyRange{
	{0, 0, 12}, {1, 4, 12}, {3, 0, 12}, {10, 0, 6}, {18, 0, 4}, {22, 0, 5},
}

var wantSASLAPIs = []apiKeyRange{
	{0, 0, 12}, {1, 4, 12}, {3, 0, 12}, {10, 0, 6}, {17, 0, 1}, {18, 0, 4}, {22, 0, 5}, {36, 0, 2},
}

func advertised(resp *kmsg.ApiVersionsResponse) []apiKeyRange {
	var out []apiKeyRange
	for _, k := range resp.ApiKeys {
		out = append(out, apiKeyRange{k.ApiKey, k.MinVersion, k.MaxVersion})
	}
	return out
}

func TestApiVersions(t *testing.T) {
	t.Parallel()
	plain := kafkatest.StartServer(t, kafkaproto.Config{})
	withSASL := kafkatest.StartServer(t, kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Users: []kafkaproto.SASLUser{{Name: "u", Password: "p"}}}})
	for v := int16(0); v <= 4; v++ {
		for _, tc := range []struct {
			name string
			env  *kafkatest.Env
			want []apiKeyRange
		}{{"plain", plain, wantAPIs}, {"sasl", withSASL, wantSASLAPIs}} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = v
			req.ClientSoftwareName, req.ClientSoftwareVersion = "test-client", "1.2.3"
			resp := dialRaw(t, tc.env.Addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
			assert.Equal(t, int16(0), resp.ErrorCode, "%s v%d", tc.name, v)
			assert.Equal(t, tc.want, advertised(resp), "%s v%d", tc.name, v)
		}
	}
}

// TestApiVersionsTooNew: KIP-511 fallback for a version newer than ours.
func TestApiVersionsTooNew(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1"
	corr := c.send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0 // the reply uses the v0 layout
	c.recv(corr, resp)
	assert.Equal(t, int16(35), resp.ErrorCode)
	assert.Equal(t, []apiKeyRange{{18, 0, 4}}, advertised(resp))

	// Even a garbage body after the header is not parsed.
	frame := binary.BigEndian.AppendUint32(nil, 12)
	frame = binary.BigEndian.AppendUint16(frame, 18)
	frame = binary.BigEndian.AppendUint16(frame, 99)
	frame = binary.BigEndian.AppendUint32(frame, 77)
	frame = append(frame, 0xff, 0xff, 0xff, 0xff)
	c.write(frame)
	c.recv(77, resp)
	assert.Equal(t, int16(35), resp.ErrorCode)
	// The connection is still usable for the downgraded request.
	req.Version = 4
	assert.Equal(t, int16(0), c.roundTrip(req).(*kmsg.ApiVersionsResponse).ErrorCode)
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bad name!", "1"
	resp := dialRaw(t, env.Addr).roundTrip(req).(*kmsg.ApiVersionsResponse)
	assert.Equal(t, int16(42), resp.ErrorCode)
}

// TestAdvertisedAPIsAreHandled sends a default request for every advertised
// key and version (SASL keys excluded) and expects an answer, so the
// advertised table and the dispatch switch agree.
func TestAdvertisedAPIsAreHandled(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	for _, api := range wantAPIs {
		for v := api.min; v <= api.max; v++ {
			req := kmsg.RequestForKey(api.key)
			req.SetVersion(v)
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				p.Acks = 1
			}
			if a, ok := req.(*kmsg.ApiVersionsRequest); ok {
				a.ClientSoftwareName, a.ClientSoftwareVersion = "x", "1"
			}
			resp := c.roundTrip(req)
			require.Equal(t, api.key, resp.Key(), "key %d v%d", api.key, v)
		}
	}
}

// TestFindCoordinatorAndFetchRefused: keys advertised only for feature
// detection answer with non-retriable errors.
func TestFindCoordinatorAndFetchRefused(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	c := dialRaw(t, env.Addr)
	for _, tc := range []struct {
		version int16
		typ     int8
		want    int16
	}{{0, 0, 30}, {3, 1, 53}, {4, 1, 53}, {6, 0, 30}} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType = tc.version, tc.typ
		req.CoordinatorKey = "k"
		req.CoordinatorKeys = []string{"k"}
		resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if tc.version < 4 {
			assert.Equal(t, tc.want, resp.ErrorCode)
		} else {
			require.Len(t, resp.Coordinators, 1)
			assert.Equal(t, tc.want, resp.Coordinators[0].ErrorCode)
		}
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 11
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = kafkatest.Topic
	ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	fetch.Topics = append(fetch.Topics, ft)
	fr := c.roundTrip(fetch).(*kmsg.FetchResponse)
	require.Len(t, fr.Topics, 1)
	require.Len(t, fr.Topics[0].Partitions, 1)
	assert.Equal(t, int16(29), fr.Topics[0].Partitions[0].ErrorCode)
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	env := kafkatest.StartServer(t, kafkaproto.Config{})
	advertisedEnv := kafkatest.StartServer(t, kafkaproto.Config{AdvertisedHost: "gateway.example", AdvertisedPort: 19092, NodeID: 7, ClusterID: "cid"})
	c := dialRaw(t, env.Addr)
	host, port := splitAddr(t, env.Addr)
	for v := int16(0); v <= 12; v++ {
		// All topics: v0 empty list, v1+ null.
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{}
		}
		resp := c.roundTrip(req).(*kmsg.MetadataResponse)
		require.Len(t, resp.Brokers, 1, "v%d", v)
		assert.Equal(t, host, resp.Brokers[0].Host)
		assert.Equal(t, port, resp.Brokers[0].Port)
		require.Len(t, resp.Topics, 2, "v%d all topics", v)
		assert.Equal(t, kafkatest.Topic, *resp.Topics[0].Topic)
		require.Len(t, resp.Topics[0].Partitions, 3)
		for i, p := range resp.Topics[0].Partitions {
			assert.Equal(t, int32(i), p.Partition)
			assert.Equal(t, int32(0), p.Leader)
			assert.Equal(t, []int32{0}, p.ISR)
		}
		if v >= 10 {
			assert.Equal(t, kafkaproto.TopicIDForTest(kafkatest.Topic), resp.Topics[0].TopicID)
			assert.NotEqual(t, [16]byte{}, resp.Topics[0].TopicID)
		}
		if v >= 1 {
			// v1+: an empty list means no topics.
			req.Topics = []kmsg.MetadataRequestTopic{}
			resp = c.roundTrip(req).(*kmsg.MetadataResponse)
			assert.Empty(t, resp.Topics, "v%d empty list", v)
		}
		// Named topics, one unknown.
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("other")}, {Topic: kmsg.StringPtr("missing")}}
		req.AllowAutoTopicCreation = true
		resp = c.roundTrip(req).(*kmsg.MetadataResponse)
		require.Len(t, resp.Topics, 2)
		assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)
		assert.Len(t, resp.Topics[0].Partitions, 1)
		assert.Equal(t, int16(3), resp.Topics[1].ErrorCode, "v%d unknown topic", v)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := dialRaw(t, advertisedEnv.Addr).roundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Brokers, 1)
	assert.Equal(t, "gateway.example", resp.Brokers[0].Host)
	assert.Equal(t, int32(19092), resp.Brokers[0].Port)
	assert.Equal(t, int32(7), resp.Brokers[0].NodeID)
	assert.Equal(t, "cid", *resp.ClusterID)
	assert.Equal(t, int32(7), resp.Topics[0].Partitions[0].Leader)

	// Lookup by topic id only.
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{1}}}
	resp = dialRaw(t, env.Addr).roundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, int16(100), resp.Topics[0].ErrorCode)
}
