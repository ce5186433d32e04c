package kafkaproto

// Produce, key 0: advertised 0-12, served 3-12.
//
//   - v0-v2 (message formats 0/1, removed in Kafka 4.0) are answered with
//     UNSUPPORTED_VERSION for every partition, or, with acks=0, by closing the
//     connection; they are advertised only for librdkafka's codec detection.
//   - acks=0: no response at all (clients do not read one); if any partition
//     fails synchronously the connection is closed, as Kafka does, so that the
//     client notices and refreshes metadata.
//   - acks 1 and -1 are treated alike: the response waits until the sink
//     reports every partition durable or failed, or until timeout_ms
//     (REQUEST_TIMED_OUT for the partitions still pending).
//   - Exactly one RecordBatch (magic 2) per partition; see recordbatch.go for
//     the checks and codes. A transactional id gets
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless the backend serves
//     transactions (transactions.go); then every batch must carry the
//     transactional bit (INVALID_RECORD otherwise) and reaches the sink with
//     PartitionProduce.TransactionalID. A batch with the bit in a request
//     without a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//   - Idempotent batches (producer id >= 0) go through producer_state.go.
//   - Per-record rejects from the sink come back as INVALID_RECORD with
//     record_errors and error_message (v8+).
//   - log_append_time is -1 (CreateTime) unless the sink says otherwise;
//     log_start_offset comes from the sink.
//   - throttle_time_ms is the largest PartitionResult.ThrottleTime of the
//     request and of the client's quota throttle (quota.go). Clients on v6+
//     wait that long before their next request; the response itself is not
//     delayed, except for v3-v5 over their quota.
//   - While the ready check fails (WithReadyCheck) every partition gets
//     NOT_LEADER_OR_FOLLOWER, nothing reaches the sink.
//   - With an Authorizer, a topic the principal may not write gets
//     TOPIC_AUTHORIZATION_FAILED for each partition, checked before the
//     topic's existence (as Kafka does).

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceWait is a Produce response whose partitions wait for the sink.
type produceWait struct {
	resp     *kmsg.ProduceResponse
	parts    []partitionWait
	deadline time.Time
	// quotaThrottle is the client's quota throttle; holdUntil, when set,
	// when the response may be written (v3-v5 over their quota).
	quotaThrottle time.Duration
	holdUntil     time.Time
}

type partitionWait struct {
	topic, part int // indexes into resp.Topics and its Partitions
	write       PartitionWrite
}

// handleProduce hands every partition to the sink. It returns the pending
// response (nil for acks=0) and whether the connection must be closed.
func (c *conn) handleProduce(req *kmsg.ProduceRequest, clientID *string) (*produceWait, bool) {
	s := c.s
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if req.TimeoutMillis <= 0 {
		timeout = s.cfg.DefaultProduceTimeout
	}
	deadline := time.Now().Add(timeout)

	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	w := &produceWait{resp: resp, deadline: deadline}

	// Request-wide refusals.
	var reqErr error
	switch {
	case req.Version < minServedProduce:
		reqErr = withMessage(ErrUnsupportedVersion,
			"produce v%d (message format v0/v1) is not supported; configure the client for Kafka >= 0.11", req.Version)
	case req.TransactionID != nil && s.transactions() == nil:
		reqErr = withMessage(ErrTransactionalIDAuthorizationFailed, "transactions are not served by this gateway")
		c.refusedTransactional(*req.TransactionID)
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		reqErr = withMessage(ErrInvalidRequiredAcks, "acks %d is not one of -1, 0, 1", req.Acks)
	case s.notReady(keyProduce) != nil:
		reqErr = errNotReady
	}

	ctx := newRequestContext(c.ctx, deadline)
	defer ctx.release()
	failed := false
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		// The request was parsed without copying: a topic name kept beyond
		// the request (the response waiting for Fluss, producer state keys,
		// metric labels) would pin the whole frame, uncounted by the budget.
		topic := strings.Clone(rt.Topic)
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		topicErr := reqErr
		if topicErr == nil && !c.authorize(OpWrite, topic) {
			topicErr = withMessage(ErrTopicAuthorizationFailed, "principal %s may not write to topic %s", c.principal(), topic)
		}
		partitions, topicOK := s.topicPartitions(rt.Topic)
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			err := topicErr
			if err == nil && (!topicOK || rp.Partition < 0 || rp.Partition >= partitions) {
				err = withMessage(ErrUnknownTopicOrPartition, "unknown topic or partition %s/%d", topic, rp.Partition)
			}
			var write PartitionWrite
			if err == nil {
				write, err = c.producePartition(ctx, req, topic, rp)
			}
			if err != nil {
				failed = true
				setPartitionError(sp, req.Version, err)
				s.m.produceError(sp.ErrorCode)
				c.log.Debug("produce partition refused", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				continue
			}
			w.parts = append(w.parts, partitionWait{topic: ti, part: pi, write: write})
		}
	}
	// Charged whatever the partitions' outcome, as Kafka charges the request.
	c.chargeQuota(req, clientID, w)
	if req.Acks == 0 {
		if failed {
			c.log.Info("closing connection after a failed acks=0 produce request")
		}
		return nil, failed
	}
	return w, false
}

// producePartition decodes one partition's batch, applies the idempotence
// rules and hands it to the sink.
func (c *conn) producePartition(ctx context.Context, req *kmsg.ProduceRequest, topic string,
	rp *kmsg.ProduceRequestTopicPartition,
) (PartitionWrite, error) {
	s := c.s
	if len(rp.Records) == 0 {
		return nil, withMessage(ErrInvalidRecord, "partition %s/%d has no record batch", topic, rp.Partition)
	}
	if len(rp.Records) > s.cfg.MaxMessageBytes {
		return nil, withMessage(ErrMessageTooLarge, "record batch of %d bytes exceeds the limit of %d", len(rp.Records), s.cfg.MaxMessageBytes)
	}
	batch, err := s.dec.decode(rp.Records, req.Version)
	if err != nil {
		return nil, err
	}
	txnID := ""
	switch {
	case batch.Transactional && req.TransactionID == nil:
		err = errTransactionalBatch
	case req.TransactionID != nil && !batch.Transactional:
		err = withMessage(ErrInvalidRecord, "a batch without the transactional bit in a transactional produce request (transactional id %q)", *req.TransactionID)
	case req.TransactionID != nil:
		txnID = strings.Clone(*req.TransactionID)
	}
	if err != nil {
		batch.Release()
		return nil, err
	}
	pp := &PartitionProduce{
		TransactionalID: txnID,
		Topic:           topic,
		Partition:       rp.Partition,
		Acks:            req.Acks,
		ProducerID:      batch.ProducerID,
		ProducerEpoch:   batch.ProducerEpoch,
		BaseSequence:    batch.BaseSequence,
		Codec:           batch.Codec,
		WireBytes:       len(rp.Records),
		Records:         batch.Records,
		batch:           batch,
	}
	// kept is whether the sink may still hold the batch; otherwise its
	// buffers and budget go back here.
	kept := false
	submit := func() (PartitionWrite, error) {
		s.m.produced(topic, pp.Codec, len(pp.Records), pp.WireBytes)
		w, err := s.sink.Produce(ctx, pp)
		if err != nil {
			// Refused: nothing of it was accepted (see Sink).
			return nil, err
		}
		kept = true
		if w == nil {
			return nil, withMessage(ErrUnknownServerError, "sink returned no write for %s/%d", topic, rp.Partition)
		}
		return w, nil
	}
	// A transactional batch is staged, not written through its route, so
	// the sequence checks here apply to it whatever the route.
	if batch.ProducerID < 0 || (txnID == "" && s.sinkOwnsIdempotence(topic)) {
		w, err := submit()
		if !kept {
			pp.Release()
		}
		return w, err
	}
	submitted := false
	w, err := s.states.admit(producerKey{id: batch.ProducerID, topic: topic, partition: rp.Partition},
		batch.ProducerEpoch, batch.BaseSequence, int32(len(batch.Records)),
		func() (PartitionWrite, error) { submitted = true; return submit() })
	if !kept {
		// The sink refused the batch or never saw it (refused here, or a
		// duplicate answered from the window).
		pp.Release()
	}
	if err == nil && !submitted {
		s.m.duplicates.Inc()
		c.log.Debug("duplicate idempotent batch answered from the sequence window",
			"topic", topic, "partition", rp.Partition, "producer_id", batch.ProducerID, "sequence", batch.BaseSequence)
	}
	return w, err
}

// awaitProduce waits, on the writer goroutine, for every partition of a
// Produce request until its deadline. It returns false if the connection
// died meanwhile.
func (c *conn) awaitProduce(w *produceWait) bool {
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	expired := false
	throttle := w.quotaThrottle
	defer func() { c.setThrottle(w.resp, throttle) }()
	for _, pw := range w.parts {
		sp := &w.resp.Topics[pw.topic].Partitions[pw.part]
		if !expired {
			select {
			case <-pw.write.Done():
			case <-timer.C:
				expired = true
			case <-c.ctx.Done():
				return false
			}
		}
		select {
		case <-pw.write.Done():
			r := pw.write.Result()
			throttle = max(throttle, r.ThrottleTime)
			if r.Err != nil {
				setPartitionError(sp, w.resp.Version, r.Err)
				c.s.m.produceError(sp.ErrorCode)
				continue
			}
			sp.ErrorCode = 0
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = r.BaseOffset, r.LogAppendTime, r.LogStartOffset
		default:
			setPartitionError(sp, w.resp.Version, withMessage(ErrRequestTimedOut, "not durable within the request timeout"))
			c.s.m.produceError(sp.ErrorCode)
		}
	}
	return w.holdUntil.IsZero() || c.waitUntil(w.holdUntil)
}

// setThrottle sets the response's throttle_time_ms, clamped to an int32 of
// milliseconds.
func (c *conn) setThrottle(resp *kmsg.ProduceResponse, d time.Duration) {
	if d <= 0 {
		return
	}
	d = min(d, math.MaxInt32*time.Millisecond)
	resp.ThrottleMillis = int32(d / time.Millisecond)
	c.s.m.throttle(d)
}

// setPartitionError fills a partition's error fields.
func setPartitionError(sp *kmsg.ProduceResponseTopicPartition, version int16, err error) {
	sp.ErrorCode = errorCode(err)
	sp.BaseOffset, sp.LogAppendTime = -1, -1
	if version < 8 {
		return
	}
	sp.ErrorMessage = errorMessage(err)
	if re, ok := asRecordsError(err); ok {
		sp.ErrorRecords = make([]kmsg.ProduceResponseTopicPartitionErrorRecord, 0, len(re.Records))
		for _, r := range re.Records {
			er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			er.RelativeOffset = r.Index
			er.ErrorMessage = errorMessage(&detailedError{code: ErrInvalidRecord, msg: r.Message})
			sp.ErrorRecords = append(sp.ErrorRecords, er)
		}
	}
}
