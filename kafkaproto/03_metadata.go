package kafkaproto

// Metadata, key 3, versions 0-12.
//
// One broker (this gateway, at the advertised address) leads every partition
// of every topic; Replicas = ISR = [this node], leader epoch 0. A topic's
// partition count comes from Topics (the mapped table's bucket count).
// Unknown topics get UNKNOWN_TOPIC_OR_PARTITION; topics are never created,
// whatever allow_auto_topic_creation says. An all-topics request (v0: empty
// list, v1+: null) lists Topics.AllTopics. Topic ids are stable: derived from
// the name, so every gateway instance reports the same id. Requests by topic
// id alone (v10+, null name) get UNKNOWN_TOPIC_ID.
//
// A topic the backend reports leaderless (TopicAvailability) has its
// partitions answered LEADER_NOT_AVAILABLE with leader -1.
//
// While the ready check fails (WithReadyCheck), asked-for topics get
// LEADER_NOT_AVAILABLE (retriable: clients refresh and retry) and an
// all-topics request gets no topics; the broker list is always there.
// With an Authorizer, an all-topics answer lists only the topics the
// principal may describe, and an asked-for topic it may not describe gets
// TOPIC_AUTHORIZATION_FAILED whether it exists or not.

import (
	"crypto/sha256"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errUnknownTopicID is UNKNOWN_TOPIC_ID (100), only used in Metadata.
const errUnknownTopicID int16 = 100

// topicPartitions returns a topic's partition count.
func (s *Server) topicPartitions(name string) (int32, bool) {
	if s.topics == nil {
		return 0, false
	}
	n, ok := s.topics.Topic(name)
	return n, ok && n > 0
}

// topicID derives a stable, non-zero topic id (a version 8 UUID) from a name.
func topicID(name string) [16]byte {
	sum := sha256.Sum256([]byte("fluss-kafka-gateway/topic/" + name))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

func (c *conn) handleMetadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	s := c.s
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := c.advertised()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = s.cfg.NodeID, host, port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	clusterID := s.cfg.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = s.cfg.NodeID
	resp.AuthorizedOperations = math.MinInt32

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	ready := s.notReady(keyMetadata) == nil
	if all {
		if s.topics != nil && ready {
			for _, t := range s.topics.AllTopics() {
				if t.Partitions > 0 && c.mayDescribe(t.Name) {
					resp.Topics = append(resp.Topics, s.metadataTopic(t.Name, t.Partitions, true))
				}
			}
		}
		return resp
	}
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			t := kmsg.NewMetadataResponseTopic()
			t.ErrorCode = errUnknownTopicID
			t.TopicID = rt.TopicID
			t.AuthorizedOperations = math.MinInt32
			resp.Topics = append(resp.Topics, t)
			continue
		}
		switch {
		case !ready:
			resp.Topics = append(resp.Topics, metadataTopicError(*rt.Topic, ErrLeaderNotAvailable))
		case !c.authorize(OpDescribe, *rt.Topic):
			resp.Topics = append(resp.Topics, metadataTopicError(*rt.Topic, ErrTopicAuthorizationFailed))
		default:
			n, ok := s.topicPartitions(*rt.Topic)
			resp.Topics = append(resp.Topics, s.metadataTopic(*rt.Topic, n, ok))
		}
	}
	return resp
}

// metadataTopicError is a topic answered with an error and no partitions.
func metadataTopicError(name string, e *Error) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = &name
	t.AuthorizedOperations = math.MinInt32
	t.ErrorCode = e.Code
	return t
}

func (s *Server) metadataTopic(name string, partitions int32, ok bool) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = &name
	t.AuthorizedOperations = math.MinInt32
	if !ok {
		t.ErrorCode = ErrUnknownTopicOrPartition.Code
		return t
	}
	t.TopicID = topicID(name)
	node := []int32{s.cfg.NodeID}
	ta, _ := s.topics.(TopicAvailability)
	leaderless := ta != nil && ta.TopicLeaderless(name)
	t.Partitions = make([]kmsg.MetadataResponseTopicPartition, partitions)
	for i := range t.Partitions {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = int32(i)
		p.Leader = s.cfg.NodeID
		p.LeaderEpoch = 0
		p.Replicas, p.ISR, p.OfflineReplicas = node, node, []int32{}
		if leaderless {
			p.ErrorCode, p.Leader, p.ISR = ErrLeaderNotAvailable.Code, -1, []int32{}
		}
		t.Partitions[i] = p
	}
	return t
}
