package kafkaproto

// Fetch, key 1: advertised 4-12 but never served.
//
// librdkafka (every version) only uses RecordBatch v2 when the broker
// advertises Fetch >= 4, and zstd only with Fetch >= 10, so the range is
// advertised for feature detection. A consumer that does fetch gets
// TOPIC_AUTHORIZATION_FAILED (non-retriable in every client) for each
// partition: this gateway is write-only.

import "github.com/twmb/franz-go/pkg/kmsg"

func (c *conn) handleFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			p.ErrorCode = ErrTopicAuthorizationFailed.Code
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	c.log.Debug("refused fetch: the gateway is producer-only")
	return resp
}
