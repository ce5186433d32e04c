package kafkaproto

import (
	"context"
	"sync"
	"time"
)

// Backend is everything the server needs from what lies behind it: the
// topics it serves, a sink for their records and producer ids. One type
// implements it (the gateway's bridge; kafkatest.Backend in tests).
type Backend interface {
	Topics
	Sink
	ProducerIDs
}

// Authorizer is an optional interface a Backend may implement to control
// which principal may do what with which topic, Kafka ACL style. Without it
// every client may describe and write every topic.
//
// principal is Kafka's principal string: [UserPrincipal] of the SASL name
// an authenticated connection logged in with ("User:" + the name, byte for
// byte), else [UserPrincipal] of the name its verified TLS client
// certificate maps to ([PrincipalRules]), else [AnonymousPrincipal]. No
// SASL name reaches the anonymous principal: [CheckSASLUserName] refuses
// ANONYMOUS (and names with ':' or '*', which would read as another
// principal in an ACL), and [PrincipalRules] refuse to map to it.
//
// Authorize is called on the connection's read path for every topic of
// every Metadata and Produce request, so it must be cheap, must not block
// and must be safe for concurrent use. Kafka grants Describe to whoever may
// Write; implementations should too, or producers allowed to write cannot
// find the topic.
//
//   - Metadata for all topics lists only those the principal may
//     OpDescribe; an asked-for topic it may not describe gets
//     TOPIC_AUTHORIZATION_FAILED whether it exists or not (Kafka does not
//     reveal which topics exist either).
//   - Produce to a topic the principal may not OpWrite gets
//     TOPIC_AUTHORIZATION_FAILED for each of its partitions (not retried
//     by clients); the refusal is logged, rate-limited, with principal and
//     topic.
type Authorizer interface {
	Authorize(principal string, op Operation, topic string) bool
}

// Operation is what a principal wants to do with a topic.
type Operation int8

// The operations an Authorizer is asked about.
const (
	// OpDescribe: see the topic and its partitions in Metadata.
	OpDescribe Operation = iota + 1
	// OpWrite: produce to the topic.
	OpWrite
)

// String names the operation as Kafka's ACLs do.
func (o Operation) String() string {
	switch o {
	case OpDescribe:
		return "DESCRIBE"
	case OpWrite:
		return "WRITE"
	}
	return "UNKNOWN"
}

// UserPrincipalPrefix starts every principal, as Kafka's principal type
// "User" does.
const UserPrincipalPrefix = "User:"

// AnonymousPrincipal is the principal of a connection without SASL, as in
// Kafka.
const AnonymousPrincipal = UserPrincipalPrefix + anonymousName

const anonymousName = "ANONYMOUS"

// UserPrincipal is the principal of a connection authenticated as the SASL
// user name.
func UserPrincipal(name string) string { return UserPrincipalPrefix + name }

// TopicInfo describes one topic for an all-topics Metadata answer.
type TopicInfo struct {
	// Name is the Kafka topic name.
	Name string
	// Partitions is the number of partitions, numbered 0..Partitions-1.
	Partitions int32
}

// Topics answers Metadata: which topics exist and how many partitions each
// has. Implementations must be safe for concurrent use and must not block on
// the network (they are called on the connection's read path); a
// copy-on-write snapshot is the expected shape.
type Topics interface {
	// Topic reports the partition count of a topic. ok=false (or a count
	// < 1) makes Metadata and Produce answer UNKNOWN_TOPIC_OR_PARTITION.
	Topic(name string) (partitions int32, ok bool)
	// AllTopics lists every topic, for clients that ask for all topics
	// (sarama, kafka-go, kafka-python).
	AllTopics() []TopicInfo
}

// TopicAvailability is implemented by backends that know when a topic
// cannot be written for now (its Fluss table's buckets have no leader).
// Metadata then reports every partition of the topic as
// LEADER_NOT_AVAILABLE without a leader, as Kafka reports a leaderless
// partition: clients hold its records and refresh metadata, and the other
// topics go on. It is asked on every Metadata answer: it must be cheap.
type TopicAvailability interface {
	TopicLeaderless(name string) bool
}

// Sink takes the decoded records of one partition of one Produce request.
//
// Produce is called on the connection's read goroutine, in the order the
// batches arrived on that connection, and for one (producer id, partition)
// never concurrently. It must not wait for durability; it may block for
// buffer space (back-pressure), honouring ctx, whose deadline is the Produce
// request's timeout. A returned error means nothing of the batch was accepted;
// it is translated with the table in errors.go (return [*RecordsError] for
// per-record rejects, [ErrRequestTimedOut], [ErrBufferFull], …), and
// kafkaproto then releases the batch (a no-op if the sink did already): a
// sink returning an error must not read it any more.
//
// The returned PartitionWrite completes once every record of the batch is
// durable (for acks 1 and -1 the Kafka response waits for it) or has failed.
// A failed PartitionWrite must mean that none of its records will become
// visible: an idempotent producer's retry of that batch is then handed to the
// sink again (see doc.go, "Idempotent producers").
//
// Ownership: the record slices alias buffers owned by kafkaproto; a sink must
// not modify them. Once Produce has accepted the batch it is the sink's: it
// may keep the slices as long as it likes, and should call
// PartitionProduce.Release once nothing reads them any more (the rows are
// copied). That gives the decoded buffers back for the next batch (in steady
// state decoding then allocates only a few bytes per batch), and the batch's
// charge back to the server's memory budget (Config.Memory): while kept, a
// batch counts against it (its decompressed records, or for codec none its
// bytes in the request frame), and once the budget is used up the server
// stops reading requests. A sink that never calls Release leaves both to the
// garbage collector: the charge comes back only once the PartitionProduce
// (and every copy of it) is collected, counted by
// fluss_gateway_kafka_produce_batches_collected_total. kafkaproto keeps the
// PartitionWrites of the last 5 batches of every idempotent (producer id,
// partition) for duplicate detection, so a completed PartitionWrite should
// not pin record memory.
type Sink interface {
	Produce(ctx context.Context, req *PartitionProduce) (PartitionWrite, error)
}

// ProducerIDs hands out producer ids that are unique across every gateway
// instance writing to the same backend (a shared backend allocates them).
// It may block on the network, honouring ctx.
type ProducerIDs interface {
	NextProducerID(ctx context.Context) (int64, error)
}

// PartitionProduce is the content of one record batch for one partition.
type PartitionProduce struct {
	Topic     string
	Partition int32
	// Acks is the request's acks (-1, 0 or 1). With 0 nobody waits for the
	// PartitionWrite.
	Acks int16
	// TransactionalID is the producer's transactional id when the batch
	// belongs to its open transaction (the Sink stages it until the
	// transaction ends); empty otherwise.
	TransactionalID string
	// ProducerID is -1 for non-idempotent producers.
	ProducerID    int64
	ProducerEpoch int16
	// BaseSequence is the batch's first sequence number (-1 when not
	// idempotent). Sequence checks are already done by kafkaproto.
	BaseSequence int32
	// Codec is the batch's compression codec as sent on the wire.
	Codec Codec
	// WireBytes is the size of the record batch on the wire (compressed).
	WireBytes int
	// Records are the batch's records in order; len(Records) >= 1.
	Records []Record

	batch *DecodedBatch // the decoder buffers Records borrow; nil once released
}

// MemoryBytes is what the batch pins while the sink holds it: its bytes in
// the request frame and its decoded records.
func (p *PartitionProduce) MemoryBytes() int64 {
	n := int64(p.WireBytes)
	if p.batch != nil {
		n += p.batch.MemoryBytes()
	}
	return n
}

// Release gives the memory Records (their keys, values and headers) live in
// back to the decoder for reuse, and the batch's charge back to the
// server's memory budget. Call it once nothing reads Records or any slice
// taken from them; see Sink. Later calls do nothing, but calls must not be
// concurrent.
func (p *PartitionProduce) Release() {
	if b := p.batch; b != nil {
		p.batch = nil
		b.Release()
	}
}

// Record is one Kafka record.
type Record struct {
	// Index is the record's position in its batch (Kafka's batch_index,
	// used in record_errors). The offset the record gets is the
	// PartitionResult's BaseOffset + Index.
	Index int32
	// OffsetDelta is the offset delta the client wrote (normally = Index).
	OffsetDelta int32
	// Timestamp is the record's CreateTime in Unix milliseconds.
	Timestamp int64
	// Key is nil for a null key and non-nil (possibly empty) otherwise.
	Key []byte
	// Value is nil for a null value (a tombstone) and non-nil otherwise.
	Value []byte
	// Headers in wire order; a header value may be nil.
	Headers []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Header is the value of the record's header key: the last one of that
// key wins, as Kafka clients read headers.
func (r *Record) Header(key string) ([]byte, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// PartitionWrite is the completion of a batch handed to the Sink.
type PartitionWrite interface {
	// Done is closed once the result is final.
	Done() <-chan struct{}
	// Result returns the final result; it is only valid after Done is
	// closed.
	Result() PartitionResult
}

// PartitionResult is the outcome of one batch.
type PartitionResult struct {
	// BaseOffset is the offset of the batch's first record, reported back
	// to the client (the backend's offset of that record).
	BaseOffset int64
	// LogAppendTime is -1 for CreateTime topics, else the broker time in ms.
	LogAppendTime int64
	// LogStartOffset is the partition's first offset (-1 if unknown).
	LogStartOffset int64
	// Err is nil on success. It is translated with the table in errors.go.
	// A *RecordsError lists per-record rejects (record_errors).
	Err error
	// ThrottleTime asks the client to wait this long before its next
	// request to this gateway (a quota, or a backend under pressure). The
	// Produce response's throttle_time_ms is the largest over its
	// partitions; clients on Produce v6+ (KIP-219: Java, librdkafka,
	// franz-go, sarama from Kafka 2.0) delay their next request by it.
	// Older versions get the field too, but those clients expect the broker
	// to delay the response instead, which this server does not. Zero: no
	// throttling.
	ThrottleTime time.Duration
}

// Completion is a ready-made PartitionWrite: the sink creates one, returns it
// and calls Complete exactly once when the outcome is known.
type Completion struct {
	done   chan struct{}
	once   sync.Once
	result PartitionResult
}

// NewCompletion returns an incomplete Completion.
func NewCompletion() *Completion {
	return &Completion{done: make(chan struct{})}
}

// Completed returns a Completion that is already complete with r.
func Completed(r PartitionResult) *Completion {
	c := NewCompletion()
	c.Complete(r)
	return c
}

// Complete records the result and closes Done. Calls after the first are
// ignored.
func (c *Completion) Complete(r PartitionResult) {
	c.once.Do(func() {
		c.result = r
		close(c.done)
	})
}

// Done implements PartitionWrite.
func (c *Completion) Done() <-chan struct{} { return c.done }

// Result implements PartitionWrite.
func (c *Completion) Result() PartitionResult {
	select {
	case <-c.done:
		return c.result
	default:
		return PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: ErrRequestTimedOut}
	}
}
