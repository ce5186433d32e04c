package kafkaproto

// IdempotenceOwner is an optional interface a Backend may implement to take
// over idempotent admission for some topics. For a topic where
// OwnsIdempotence reports true, every idempotent batch (producer id >= 0)
// goes to the Sink without the in-memory sequence window of
// producer_state.go: the backend applies Kafka's rules itself (duplicate,
// gap, epoch) from state it keeps outside this process, so that a batch
// re-sent to another instance after a crash is recognised (the gateway's
// exactly-once routes). Its answers use the same codes a broker would:
// the original result for a duplicate of a recent batch,
// ErrDuplicateSequenceNumber for an older one, ErrOutOfOrderSequenceNumber
// for a gap, ErrInvalidProducerEpoch for a fenced epoch.
//
// OwnsIdempotence is called on the connection's read path for every
// idempotent batch: it must be cheap, must not block and must be safe for
// concurrent use.
type IdempotenceOwner interface {
	OwnsIdempotence(topic string) bool
}

// sinkOwnsIdempotence reports whether the backend admits topic's
// idempotent batches itself.
func (s *Server) sinkOwnsIdempotence(topic string) bool {
	o, ok := s.sink.(IdempotenceOwner)
	return ok && o.OwnsIdempotence(topic)
}
